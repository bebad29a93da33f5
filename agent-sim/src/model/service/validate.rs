//! Registration validation with Consul's texts: weights, metadata, `NodeService.Validate` /
//! `ValidateForAgent` (connect-proxy, gateway, nested sidecar and native rules), Go's
//! multierror format, and small Go-compatible helpers (`%q`, IP parsing, `JoinHostPort`).

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;

use serde_json::Value;

use super::definition::ServiceDefinition;
use super::model::{NodeService, ServiceKind, Weights};

const META_MAX_PAIRS: usize = 64;
const META_KEY_MAX_LEN: usize = 128;
const META_VALUE_MAX_LEN: usize = 512;

pub(crate) use crate::go::gotext::multierror;

pub(crate) use crate::go::gotext::go_quote;

/// Go's `net.ParseIP(s)` classified: `Some(true)` for IPv4 (including IPv4-mapped IPv6, which
/// Go's `To4` accepts), `Some(false)` for IPv6, `None` when not an IP literal.
pub(crate) fn ip_is_v4(s: &str) -> Option<bool> {
    match s.parse::<IpAddr>().ok()? {
        IpAddr::V4(_) => Some(true),
        IpAddr::V6(v6) => Some(v6.to_ipv4_mapped().is_some()),
    }
}

/// Go's `net.JoinHostPort`: brackets around hosts containing a colon.
pub(crate) fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Consul's `ipaddr.IsAny`: the unspecified address in any spelling Consul recognizes.
pub(crate) fn is_any_address(addr: &str) -> bool {
    matches!(addr, "0.0.0.0" | "::" | "[::]")
}

/// `ValidateWeights`.
pub(crate) fn validate_weights(w: &Weights) -> Result<(), String> {
    if w.passing < 1 {
        return Err("Passing must be greater than 0".into());
    }
    if w.warning < 0 {
        return Err("Warning must be greater or equal than 0".into());
    }
    if w.passing > 65535 || w.warning > 65535 {
        return Err("DNS Weight must be between 0 and 65535".into());
    }
    Ok(())
}

/// `ValidateServiceMetadata(kind, meta, false)`: mesh gateways may use `consul-wan-federation`.
pub(crate) fn validate_service_meta(
    kind: &ServiceKind,
    meta: &BTreeMap<String, String>,
) -> Result<(), String> {
    if meta.len() > META_MAX_PAIRS {
        return Err(format!(
            "Node metadata cannot contain more than {META_MAX_PAIRS} key/value pairs"
        ));
    }
    for (key, value) in meta {
        validate_meta_pair(kind, key, value)
            .map_err(|e| format!("Couldn't load metadata pair ('{key}', '{value}'): {e}"))?;
    }
    Ok(())
}

fn validate_meta_pair(kind: &ServiceKind, key: &str, value: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("Key cannot be blank".into());
    }
    if !key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err("Key contains invalid characters".into());
    }
    if key.len() > META_KEY_MAX_LEN {
        return Err(format!(
            "Key is too long (limit: {META_KEY_MAX_LEN} characters)"
        ));
    }
    let allowed = *kind == ServiceKind::MeshGateway && key == "consul-wan-federation";
    if key.starts_with("consul-") && !allowed {
        return Err("Key prefix 'consul-' is reserved for internal use".into());
    }
    if value.len() > META_VALUE_MAX_LEN {
        return Err(format!(
            "Value is too long (limit: {META_VALUE_MAX_LEN} characters)"
        ));
    }
    Ok(())
}

/// `NodeService.Validate`: `ValidateForAgent` plus the port rule for connect proxies. The
/// nested sidecar definition (if any) takes part in the checks, as it does in Consul.
pub(crate) fn validate_node_service(
    ns: &NodeService,
    sidecar: Option<&ServiceDefinition>,
) -> Vec<String> {
    let mut errors = Vec::new();
    if ns.kind == ServiceKind::ConnectProxy && ns.port == 0 && ns.socket_path.is_empty() {
        errors.push(format!("Port or SocketPath must be set for a {}", ns.kind));
    }
    errors.extend(validate_for_agent(ns, sidecar));
    errors
}

/// `NodeService.ValidateForAgent`: everything but the proxy port rule (the agent can allocate
/// a sidecar's port).
pub(crate) fn validate_for_agent(
    ns: &NodeService,
    sidecar: Option<&ServiceDefinition>,
) -> Vec<String> {
    let mut errors = Vec::new();
    if ns.kind == ServiceKind::ConnectProxy {
        validate_connect_proxy(ns, &mut errors);
    }
    if ns.kind.is_gateway() {
        validate_gateway(ns, sidecar.is_some(), &mut errors);
    }
    if let Some(sc) = sidecar {
        if !sc.id.is_empty() {
            errors.push(
                "A SidecarService cannot specify an ID as this is managed by the agent".into(),
            );
        }
        if sc
            .connect
            .as_ref()
            .is_some_and(|c| c.sidecar_service.is_some())
        {
            errors.push("A SidecarService cannot have a nested SidecarService".into());
        }
    }
    if ns.connect.native && ns.port == 0 && ns.socket_path.is_empty() {
        errors.push("Port or SocketPath must be set for a Connect native service.".into());
    }
    errors
}

fn validate_connect_proxy(ns: &NodeService, errors: &mut Vec<String>) {
    let p = &ns.proxy;
    if p.destination_service_name.trim().is_empty() {
        errors.push(
            "Proxy.DestinationServiceName must be non-empty for Connect proxy services".into(),
        );
    }
    if p.destination_service_name == "*" {
        errors.push(
            "Proxy.DestinationServiceName must not be a wildcard for Connect proxy services".into(),
        );
    }
    if ns.connect.native {
        errors.push("A Proxy cannot also be Connect Native, only typical services".into());
    }
    if let Some(Value::String(dir)) = p.config.get("envoy_hcp_metrics_bind_socket_dir")
        && dir.len() > 70
    {
        errors.push(format!(
            "Proxy.Config: envoy_hcp_metrics_bind_socket_dir length {} exceeds max 70",
            dir.len()
        ));
    }
    let mut keys = HashSet::new();
    let mut binds = HashSet::new();
    for u in &p.upstreams {
        let partition = if u.destination_partition.is_empty() {
            "default"
        } else {
            &u.destination_partition
        };
        if u.destination_peer.is_empty() {
            if !u.datacenter.is_empty() && partition != "default" {
                errors.push(
                    "upstreams cannot target another datacenter in non default partition".into(),
                );
                continue;
            }
        } else if partition != "default" {
            errors.push("upstreams must target peers in the same partition as the service".into());
            continue;
        }
        if let Err(e) = validate_upstream(u) {
            errors.push(e);
            continue;
        }
        let key = format!(
            "[type={}, name={}, partition={}, namespace={}, peer={}, datacenter={}]",
            go_quote(&u.destination_type),
            go_quote(&u.destination_name),
            go_quote(&u.destination_partition),
            go_quote(&u.destination_namespace),
            go_quote(&u.destination_peer),
            go_quote(&u.datacenter),
        );
        if !keys.insert(key.clone()) {
            errors.push(format!("upstreams cannot contain duplicates of {key}"));
            continue;
        }
        let addr = if u.local_bind_port == 0
            && u.local_bind_address.is_empty()
            && !u.local_bind_socket_path.is_empty()
        {
            u.local_bind_socket_path.clone()
        } else {
            let host = if u.local_bind_address.is_empty() {
                "127.0.0.1"
            } else {
                &u.local_bind_address
            };
            join_host_port(host, u.local_bind_port)
        };
        if binds.contains(&addr) && !u.centrally_configured {
            errors.push(format!(
                "upstreams cannot contain duplicates by local bind address and port or unix path; {} is specified twice",
                go_quote(&addr)
            ));
            continue;
        }
        binds.insert(addr);
    }
    let mut listeners = HashSet::new();
    for path in &p.expose.paths {
        if path.path.is_empty() {
            errors.push("expose.paths: empty path exposed".into());
        }
        if !listeners.insert(path.listener_port) {
            errors.push("expose.paths: duplicate listener ports exposed".into());
        }
        if path.listener_port == 0 {
            errors.push(format!(
                "expose.paths: invalid listener port: {}",
                path.listener_port
            ));
        }
        let protocol = path.protocol.to_lowercase();
        if !protocol.is_empty() && protocol != "http" && protocol != "http2" {
            errors.push(format!(
                "protocol '{protocol}' not supported for path: {}, must be in: [http http2]",
                path.path
            ));
        }
    }
}

/// `Upstream.Validate`.
fn validate_upstream(u: &super::model::Upstream) -> Result<(), String> {
    match u.destination_type.as_str() {
        "" | "service" | "prepared_query" => {}
        other => {
            return Err(format!(
                "unknown upstream destination type: {}",
                go_quote(other)
            ));
        }
    }
    if u.destination_name.is_empty() {
        return Err("upstream destination name cannot be empty".into());
    }
    if u.destination_name == "*" && !u.centrally_configured {
        return Err("upstream destination name cannot be a wildcard".into());
    }
    if !u.destination_peer.is_empty() && !u.datacenter.is_empty() {
        return Err("upstream cannot specify both destination peer and datacenter".into());
    }
    let has_port = u.local_bind_port != 0;
    let has_socket = !u.local_bind_socket_path.is_empty();
    if !has_port && !has_socket && !u.centrally_configured {
        return Err(
            "upstream local bind port or local socket path must be defined and nonzero".into(),
        );
    }
    if has_port && has_socket && !u.centrally_configured {
        return Err(
            "only one of upstream local bind port or local socket path can be defined and nonzero"
                .into(),
        );
    }
    Ok(())
}

fn validate_gateway(ns: &NodeService, has_sidecar: bool, errors: &mut Vec<String>) {
    let kind = &ns.kind;
    let p = &ns.proxy;
    if ns.port == 0 && *kind != ServiceKind::IngressGateway && *kind != ServiceKind::ApiGateway {
        errors.push(format!("Port must be non-zero for a {kind}"));
    }
    if has_sidecar {
        errors.push(format!("A {kind} cannot have a sidecar service defined"));
    }
    let invalid = [
        (
            "DestinationServiceName",
            !p.destination_service_name.is_empty(),
        ),
        ("DestinationServiceID", !p.destination_service_id.is_empty()),
        ("LocalServiceAddress", !p.local_service_address.is_empty()),
        ("LocalServicePort", p.local_service_port != 0),
        (
            "LocalServiceSocketPath",
            !p.local_service_socket_path.is_empty(),
        ),
        ("Upstreams", !p.upstreams.is_empty()),
    ];
    for (field, set) in invalid {
        if set {
            errors.push(format!(
                "The Proxy.{field} configuration is invalid for a {kind}"
            ));
        }
    }
}

/// The agent's `validateService` tagged-address rule (it checks `lan_ipv6` twice and never
/// `wan_ipv6`; so does this).
pub(crate) fn validate_tagged_addresses(ns: &NodeService) -> Result<(), String> {
    for (key, want_v4) in [("lan_ipv4", true), ("wan_ipv4", true), ("lan_ipv6", false)] {
        if let Some(sa) = ns.tagged_addresses.get(key)
            && ip_is_v4(&sa.address) != Some(want_v4)
        {
            let family = if want_v4 { "ipv4" } else { "ipv6" };
            return Err(format!(
                "Service tagged address {} must be a valid {family} address",
                go_quote(key)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
