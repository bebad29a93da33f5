//! Catalog-side shapes: `Node`, the catalog `NodeService` and `HealthCheck` inside
//! `GET /v1/health/{connect,service}/:service` entries, and the flattened `ServiceNode` items of
//! `GET /v1/catalog/service/:service`, each in Go's key order.

use serde_json::Value;

use super::agent_json::access_logs;
use super::model::{
    ConnectProxyConfig, ExposeConfig, HealthCheck, HealthCheckDefinition, Node, NodeService,
    Upstream,
};
use super::wire::{
    Obj, go_value, locality, opaque_map, service_addresses, string_list, string_map_or_null,
};

/// A catalog node: `ID`, `Node`, `Address`, `Datacenter`, `TaggedAddresses`, `Meta`,
/// `CreateIndex`, `ModifyIndex` (empty maps are Go nil maps: `null`).
pub fn node_json(node: &Node) -> Value {
    Obj::new()
        .put("ID", node.id.as_str())
        .put("Node", node.name.as_str())
        .put("Address", node.address.as_str())
        .put("Datacenter", node.datacenter.as_str())
        .put(
            "TaggedAddresses",
            string_map_or_null(&node.tagged_addresses),
        )
        .put("Meta", string_map_or_null(&node.meta))
        .put("CreateIndex", node.create_index)
        .put("ModifyIndex", node.modify_index)
        .build()
}

/// One `{Node, Service, Checks}` entry of `/v1/health/connect/:service` (and
/// `/v1/health/service/:service`). `Checks` is never null.
pub fn health_entry_json(node: &Node, svc: &NodeService, checks: &[&HealthCheck]) -> Value {
    Obj::new()
        .put("Node", node_json(node))
        .put("Service", node_service_json(svc))
        .put(
            "Checks",
            Value::Array(checks.iter().map(|c| health_check_json(c)).collect()),
        )
        .build()
}

/// The catalog `NodeService` shape: `Kind`?, `ID`, `Service`, `Tags`, `Address`,
/// `TaggedAddresses`?, `Meta`, `Port`?, `SocketPath`?, `Weights`, `EnableTagOverride`,
/// `Locality`?, `Proxy`, `Connect`, `PeerName`, `CreateIndex`, `ModifyIndex`.
pub fn node_service_json(svc: &NodeService) -> Value {
    let mut o = Obj::new();
    o.str_opt("Kind", svc.kind.as_str())
        .put("ID", svc.id.as_str())
        .put("Service", svc.service.as_str())
        .put("Tags", string_list(&svc.tags))
        .put("Address", svc.address.as_str())
        .obj_opt("TaggedAddresses", service_addresses(&svc.tagged_addresses))
        .put("Meta", string_map_or_null(&svc.meta))
        .num_opt("Port", svc.port.into())
        .str_opt("SocketPath", &svc.socket_path)
        .put("Weights", weights(svc))
        .put("EnableTagOverride", svc.enable_tag_override);
    if let Some(l) = &svc.locality {
        o.put("Locality", locality(l));
    }
    o.put("Proxy", catalog_proxy(&svc.proxy))
        .put("Connect", connect(svc))
        .put("PeerName", "")
        .put("CreateIndex", svc.create_index)
        .put("ModifyIndex", svc.modify_index)
        .build()
}

/// One `GET /v1/catalog/service/:service` item (Consul's `ServiceNode`). `ServiceTags` is
/// `[]` and `ServiceMeta` `{}` when empty; `ServiceSocketPath` and `ServiceLocality` (`null`
/// when unset) are always present, as the Go struct has no `omitempty` on them.
pub fn catalog_service_json(node: &Node, svc: &NodeService) -> Value {
    let mut o = Obj::new();
    o.put("ID", node.id.as_str())
        .put("Node", node.name.as_str())
        .put("Address", node.address.as_str())
        .put("Datacenter", node.datacenter.as_str())
        .put(
            "TaggedAddresses",
            string_map_or_null(&node.tagged_addresses),
        )
        .put("NodeMeta", string_map_or_null(&node.meta))
        .put("ServiceKind", svc.kind.as_str())
        .put("ServiceID", svc.id.as_str())
        .put("ServiceName", svc.service.as_str())
        .put("ServiceTags", string_list(&svc.tags))
        .put("ServiceAddress", svc.address.as_str())
        .obj_opt(
            "ServiceTaggedAddresses",
            service_addresses(&svc.tagged_addresses),
        )
        .put("ServiceWeights", weights(svc))
        .put("ServiceMeta", super::wire::string_map(&svc.meta))
        .put("ServicePort", svc.port)
        .put("ServiceSocketPath", svc.socket_path.as_str())
        .put("ServiceEnableTagOverride", svc.enable_tag_override)
        .put("ServiceProxy", catalog_proxy(&svc.proxy))
        .put("ServiceConnect", connect(svc))
        .put(
            "ServiceLocality",
            svc.locality.as_ref().map_or(Value::Null, locality),
        )
        .put("CreateIndex", svc.create_index)
        .put("ModifyIndex", svc.modify_index);
    o.build()
}

/// A health check: `Node`, `CheckID`, `Name`, `Status`, `Notes`, `Output`, `ServiceID`,
/// `ServiceName`, `ServiceTags` (never null), `Type`, `Interval`, `Timeout`, `ExposedPort`,
/// `Definition`, `CreateIndex`, `ModifyIndex`.
pub fn health_check_json(check: &HealthCheck) -> Value {
    Obj::new()
        .put("Node", check.node.as_str())
        .put("CheckID", check.check_id.as_str())
        .put("Name", check.name.as_str())
        .put("Status", check.status.as_str())
        .put("Notes", check.notes.as_str())
        .put("Output", check.output.as_str())
        .put("ServiceID", check.service_id.as_str())
        .put("ServiceName", check.service_name.as_str())
        .put("ServiceTags", string_list(&check.service_tags))
        .put("Type", check.type_.as_str())
        .put("Interval", check.interval.as_str())
        .put("Timeout", check.timeout.as_str())
        .put("ExposedPort", check.exposed_port)
        .put("Definition", definition(&check.definition))
        .put("CreateIndex", check.create_index)
        .put("ModifyIndex", check.modify_index)
        .build()
}

/// `HealthCheckDefinition` as its `MarshalJSON` writes it: the four string durations first,
/// then the remaining members in struct order; `TTL` stays integer nanoseconds (Go quirk).
fn definition(d: &HealthCheckDefinition) -> Value {
    let dur = |v: crate::go::duration::GoDuration| {
        if v.0 == 0 {
            String::new()
        } else {
            v.to_string()
        }
    };
    let mut o = Obj::new();
    o.str_opt("Interval", &dur(d.interval))
        .num_opt("OutputMaxSize", d.output_max_size)
        .str_opt("Timeout", &dur(d.timeout))
        .str_opt(
            "DeregisterCriticalServiceAfter",
            &dur(d.deregister_critical_service_after),
        )
        .str_opt("HTTP", &d.http)
        .str_opt("TLSServerName", &d.tls_server_name)
        .bool_opt("TLSSkipVerify", d.tls_skip_verify);
    if !d.header.is_empty() {
        let header = d
            .header
            .iter()
            .map(|(k, v)| (k.clone(), string_list(v)))
            .collect();
        o.put("Header", Value::Object(header));
    }
    o.str_opt("Method", &d.method)
        .str_opt("Body", &d.body)
        .bool_opt("DisableRedirects", d.disable_redirects)
        .str_opt("TCP", &d.tcp)
        .str_opt("UDP", &d.udp)
        .str_opt("H2PING", &d.h2ping)
        .str_opt("OSService", &d.os_service)
        .bool_opt("H2PingUseTLS", d.h2ping_use_tls);
    if !d.script_args.is_empty() {
        o.put("ScriptArgs", string_list(&d.script_args));
    }
    o.str_opt("DockerContainerID", &d.docker_container_id)
        .str_opt("Shell", &d.shell)
        .str_opt("GRPC", &d.grpc)
        .bool_opt("GRPCUseTLS", d.grpc_use_tls)
        .str_opt("AliasNode", &d.alias_node)
        .str_opt("AliasService", &d.alias_service);
    if d.ttl.0 != 0 {
        o.put("TTL", d.ttl.0);
    }
    o.build()
}

fn weights(svc: &NodeService) -> Value {
    Obj::new()
        .put("Passing", svc.weights.passing)
        .put("Warning", svc.weights.warning)
        .build()
}

fn connect(svc: &NodeService) -> Value {
    Obj::new().bool_opt("Native", svc.connect.native).build()
}

/// `ConnectProxyConfig.MarshalJSON`: `TransparentProxy` and `AccessLogs` first (only when
/// set), `Mode`, `MeshGateway` and `Expose` always.
fn catalog_proxy(p: &ConnectProxyConfig) -> Value {
    let mut o = Obj::new();
    if !p.transparent_proxy.is_zero() {
        let tp = &p.transparent_proxy;
        let v = Obj::new()
            .num_opt("OutboundListenerPort", tp.outbound_listener_port.into())
            .bool_opt("DialedDirectly", tp.dialed_directly)
            .build();
        o.put("TransparentProxy", v);
    }
    if !p.access_logs.is_zero() {
        o.put("AccessLogs", access_logs(&p.access_logs));
    }
    if !p.envoy_extensions.is_empty() {
        o.put(
            "EnvoyExtensions",
            go_value(&Value::Array(p.envoy_extensions.clone())),
        );
    }
    o.str_opt("DestinationServiceName", &p.destination_service_name)
        .str_opt("DestinationServiceID", &p.destination_service_id)
        .str_opt("LocalServiceAddress", &p.local_service_address)
        .num_opt("LocalServicePort", p.local_service_port.into())
        .str_opt("LocalServiceSocketPath", &p.local_service_socket_path)
        .put("Mode", p.mode.as_str())
        .obj_opt("Config", opaque_map(&p.config));
    if !p.upstreams.is_empty() {
        o.put(
            "Upstreams",
            Value::Array(p.upstreams.iter().map(catalog_upstream).collect()),
        );
    }
    o.put(
        "MeshGateway",
        Obj::new().str_opt("Mode", &p.mesh_gateway.mode).build(),
    )
    .put("Expose", catalog_expose(&p.expose))
    .str_opt("MutualTLSMode", &p.mutual_tls_mode)
    .build()
}

/// `structs.Upstream`: `DestinationType`, `DestinationName` and `Datacenter` always present.
fn catalog_upstream(u: &Upstream) -> Value {
    Obj::new()
        .put("DestinationType", u.destination_type.as_str())
        .str_opt("DestinationNamespace", &u.destination_namespace)
        .str_opt("DestinationPartition", &u.destination_partition)
        .str_opt("DestinationPeer", &u.destination_peer)
        .put("DestinationName", u.destination_name.as_str())
        .put("Datacenter", u.datacenter.as_str())
        .str_opt("LocalBindAddress", &u.local_bind_address)
        .num_opt("LocalBindPort", u.local_bind_port.into())
        .str_opt("LocalBindSocketPath", &u.local_bind_socket_path)
        .str_opt("LocalBindSocketMode", &u.local_bind_socket_mode)
        .obj_opt("Config", opaque_map(&u.config))
        .put(
            "MeshGateway",
            Obj::new().str_opt("Mode", &u.mesh_gateway.mode).build(),
        )
        .bool_opt("CentrallyConfigured", u.centrally_configured)
        .build()
}

/// `structs.ExposeConfig`: every member omitempty (including `ParsedFromCheck`).
fn catalog_expose(e: &ExposeConfig) -> Value {
    let mut o = Obj::new();
    o.bool_opt("Checks", e.checks);
    if !e.paths.is_empty() {
        let paths = e
            .paths
            .iter()
            .map(|p| {
                Obj::new()
                    .num_opt("ListenerPort", p.listener_port.into())
                    .str_opt("Path", &p.path)
                    .num_opt("LocalPathPort", p.local_path_port.into())
                    .str_opt("Protocol", &p.protocol)
                    .bool_opt("ParsedFromCheck", p.parsed_from_check)
                    .build()
            })
            .collect();
        o.put("Paths", Value::Array(paths));
    }
    o.build()
}
