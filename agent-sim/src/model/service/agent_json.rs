//! The agent-local service shape (Consul's `api.AgentService`) served by
//! `GET /v1/agent/service/:id` and `GET /v1/agent/services`, and its `ContentHash`.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::model::{
    AccessLogsConfig, ConnectProxyConfig, ExposeConfig, NodeService, ServiceKind, Upstream,
};
use super::wire::{
    Obj, go_value, locality, opaque_map, service_addresses, string_list, string_map,
};

/// `GET /v1/agent/service/:id` body: key order `Kind`?, `ID`, `Service`, `Tags`, `Meta`,
/// `Port`, `Address`, `SocketPath`?, `TaggedAddresses`?, `Weights`, `EnableTagOverride`,
/// `ContentHash`, `Proxy`?, `Connect`?, `Datacenter`, `Locality`?. `Tags`/`Meta` are never
/// null; `Proxy` (with `MeshGateway:{}` and `Expose:{}`) only for proxies and gateways.
pub fn agent_service_json(svc: &NodeService, datacenter: &str) -> Value {
    let hash = content_hash(svc, datacenter);
    agent_service(svc, Some(&hash), datacenter)
}

/// The `ContentHash` of [`agent_service_json`]: `%x` of a stable 64-bit hash over the body
/// without `ContentHash`, `Datacenter` and `Locality` (as Consul's hashstructure ignores them).
pub fn content_hash(svc: &NodeService, _datacenter: &str) -> String {
    let body = agent_service(svc, None, "");
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    format!("{:x}", u64::from_be_bytes(first))
}

/// `GET /v1/agent/services` body: an object of ID -> AgentService (no `ContentHash`), IDs in
/// Go's (sorted) map order.
pub fn agent_services_json<'a>(
    svcs: impl IntoIterator<Item = &'a NodeService>,
    datacenter: &str,
) -> Value {
    let mut all: Vec<&NodeService> = svcs.into_iter().collect();
    all.sort_by(|a, b| a.id.cmp(&b.id));
    Value::Object(
        all.into_iter()
            .map(|s| (s.id.clone(), agent_service(s, None, datacenter)))
            .collect(),
    )
}

/// Builds the AgentService; `hash` None leaves out `ContentHash`, an empty `datacenter` leaves
/// out `Datacenter` (and the hash input also drops `Locality`).
fn agent_service(svc: &NodeService, hash: Option<&str>, datacenter: &str) -> Value {
    let weights = Obj::new()
        .put(
            "Passing",
            if svc.weights.passing > 0 {
                svc.weights.passing
            } else {
                1
            },
        )
        .put("Warning", svc.weights.warning)
        .build();
    let mut o = Obj::new();
    o.str_opt("Kind", svc.kind.as_str())
        .put("ID", svc.id.as_str())
        .put("Service", svc.service.as_str())
        .put("Tags", string_list(&svc.tags))
        .put("Meta", string_map(&svc.meta))
        .put("Port", svc.port)
        .put("Address", svc.address.as_str())
        .str_opt("SocketPath", &svc.socket_path)
        .obj_opt("TaggedAddresses", service_addresses(&svc.tagged_addresses))
        .put("Weights", weights)
        .put("EnableTagOverride", svc.enable_tag_override);
    if let Some(hash) = hash {
        o.put("ContentHash", hash);
    }
    if svc.kind == ServiceKind::ConnectProxy || svc.kind.is_gateway() {
        o.put("Proxy", api_proxy(&svc.proxy));
    }
    if svc.connect.native {
        o.put("Connect", Obj::new().put("Native", true).build());
    }
    if !datacenter.is_empty() {
        o.put("Datacenter", datacenter);
        if let Some(l) = &svc.locality {
            o.put("Locality", locality(l));
        }
    }
    o.build()
}

/// `api.AgentServiceConnectProxyConfig`.
fn api_proxy(p: &ConnectProxyConfig) -> Value {
    let mut o = Obj::new();
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
        .str_opt("Mode", &p.mode);
    if !p.transparent_proxy.is_zero() {
        let tp = &p.transparent_proxy;
        let v = Obj::new()
            .num_opt("OutboundListenerPort", tp.outbound_listener_port.into())
            .bool_opt("DialedDirectly", tp.dialed_directly)
            .build();
        o.put("TransparentProxy", v);
    }
    o.obj_opt("Config", opaque_map(&p.config));
    if !p.upstreams.is_empty() {
        o.put(
            "Upstreams",
            Value::Array(p.upstreams.iter().map(api_upstream).collect()),
        );
    }
    o.put(
        "MeshGateway",
        Obj::new().str_opt("Mode", &p.mesh_gateway.mode).build(),
    )
    .put("Expose", api_expose(&p.expose));
    if !p.access_logs.is_zero() {
        o.put("AccessLogs", access_logs(&p.access_logs));
    }
    o.str_opt("MutualTLSMode", &p.mutual_tls_mode);
    o.build()
}

/// `api.Upstream`.
fn api_upstream(u: &Upstream) -> Value {
    Obj::new()
        .str_opt("DestinationType", &u.destination_type)
        .str_opt("DestinationPartition", &u.destination_partition)
        .str_opt("DestinationNamespace", &u.destination_namespace)
        .str_opt("DestinationPeer", &u.destination_peer)
        .put("DestinationName", u.destination_name.as_str())
        .str_opt("Datacenter", &u.datacenter)
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

/// `api.ExposeConfig`: `ParsedFromCheck` is not omitempty in the api form.
fn api_expose(e: &ExposeConfig) -> Value {
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
                    .put("ParsedFromCheck", p.parsed_from_check)
                    .build()
            })
            .collect();
        o.put("Paths", Value::Array(paths));
    }
    o.build()
}

/// `AccessLogsConfig` (all members omitempty, in both shapes).
pub(crate) fn access_logs(a: &AccessLogsConfig) -> Value {
    Obj::new()
        .bool_opt("Enabled", a.enabled)
        .bool_opt("DisableListenerLogs", a.disable_listener_logs)
        .str_opt("Type", &a.type_)
        .str_opt("Path", &a.path)
        .str_opt("JSONFormat", &a.json_format)
        .str_opt("TextFormat", &a.text_format)
        .build()
}
