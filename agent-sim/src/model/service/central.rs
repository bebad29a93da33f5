//! Central configuration merged into proxy registrations (Consul's `MergeServiceConfig` with
//! `enable_central_service_config`, the default): what the agent stores and serves for a
//! sidecar or gateway is the registration with config-entry defaults filled in.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::model::{ExposeConfig, ExposePath, NodeService};

/// The resolved defaults for one proxy, computed by the caller from `proxy-defaults/global` and
/// the destination's `service-defaults` (Consul's `ServiceConfigResponse`, minus upstreams).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CentralConfig {
    /// `proxy-defaults` `Config`.
    pub proxy_config: Map<String, Value>,
    /// `service-defaults` `Protocol` of the destination; overrides `proxy_config["protocol"]`.
    pub protocol: Option<String>,
    /// `Mode` (service-defaults over proxy-defaults).
    pub mode: Option<String>,
    /// `MutualTLSMode` (service-defaults over proxy-defaults).
    pub mutual_tls_mode: Option<String>,
    /// `TransparentProxy` object (`OutboundListenerPort`, `DialedDirectly`).
    pub transparent_proxy: Option<Value>,
    /// `MeshGateway.Mode`.
    pub mesh_gateway_mode: Option<String>,
    /// `Expose` object (`Checks`, `Paths`).
    pub expose: Option<Value>,
    /// The resolved opaque config per local upstream name (`ServiceConfigResponse.UpstreamConfigs`).
    pub upstream_configs: BTreeMap<String, Map<String, Value>>,
}

/// Merges central defaults into a proxy registration. Registration values win everywhere:
/// `Proxy.Config` keys missing (or `null`) in the registration are filled from `proxy_config`
/// (with `protocol` from service-defaults taking precedence over proxy-defaults'); `Mode`, `MeshGateway.Mode`, each `TransparentProxy` field and
/// each `Expose` field are filled only when unset. Services that are neither sidecar proxies nor
/// gateways are returned unchanged, as Consul only merges for those.
pub fn merge_central_config(svc: &NodeService, central: &CentralConfig) -> NodeService {
    let mut ns = svc.clone();
    if !(ns.is_sidecar_proxy() || ns.kind.is_gateway()) {
        return ns;
    }
    let mut defaults = central.proxy_config.clone();
    if let Some(protocol) = central.protocol.as_ref().filter(|p| !p.is_empty()) {
        defaults.insert("protocol".into(), Value::String(protocol.clone()));
    }
    for (key, value) in defaults {
        if ns.proxy.config.get(&key).is_none_or(Value::is_null) {
            ns.proxy.config.insert(key, value);
        }
    }
    if let Some(mode) = central.mode.as_ref().filter(|_| ns.proxy.mode.is_empty()) {
        ns.proxy.mode.clone_from(mode);
    }
    let mtls_unset = ns.proxy.mutual_tls_mode.is_empty();
    if let Some(m) = central.mutual_tls_mode.as_ref().filter(|_| mtls_unset) {
        ns.proxy.mutual_tls_mode.clone_from(m);
    }
    let gateway_unset = ns.proxy.mesh_gateway.mode.is_empty();
    if let Some(mode) = central.mesh_gateway_mode.as_ref().filter(|_| gateway_unset) {
        ns.proxy.mesh_gateway.mode.clone_from(mode);
    }
    if let Some(tp) = &central.transparent_proxy {
        let t = &mut ns.proxy.transparent_proxy;
        if t.outbound_listener_port == 0 {
            t.outbound_listener_port = u16_field(tp, "OutboundListenerPort").unwrap_or(0);
        }
        if !t.dialed_directly {
            t.dialed_directly = bool_field(tp, "DialedDirectly");
        }
    }
    if let Some(expose) = &central.expose {
        merge_expose(&mut ns.proxy.expose, expose);
    }
    merge_upstreams(&mut ns, central);
    ns
}

/// The upstream loop of `MergeServiceConfig`: for a service-type upstream with resolved config,
/// an unset `MeshGateway.Mode` takes the resolved `mesh_gateway` mode, config keys missing (or
/// `null`) are filled, and the `mesh_gateway` key is dropped again.
fn merge_upstreams(ns: &mut NodeService, central: &CentralConfig) {
    for us in &mut ns.proxy.upstreams {
        let service_type = us.destination_type.is_empty() || us.destination_type == "service";
        if !service_type || !us.destination_peer.is_empty() {
            continue;
        }
        let Some(remote) = central.upstream_configs.get(&us.destination_name) else {
            continue;
        };
        if us.mesh_gateway.mode.is_empty() {
            let mode = remote.get("mesh_gateway").map(|m| str_field(m, "Mode"));
            us.mesh_gateway.mode = mode.unwrap_or_default();
        }
        for (k, v) in remote {
            if us.config.get(k).is_none_or(Value::is_null) {
                us.config.insert(k.clone(), v.clone());
            }
        }
        us.config.remove("mesh_gateway");
    }
}

/// `mergo.Merge` of an `ExposeConfig`: zero fields take the default's value.
fn merge_expose(dst: &mut ExposeConfig, src: &Value) {
    if !dst.checks {
        dst.checks = bool_field(src, "Checks");
    }
    if let (true, Some(Value::Array(paths))) = (dst.paths.is_empty(), field(src, "Paths")) {
        dst.paths = paths
            .iter()
            .map(|p| ExposePath {
                listener_port: u16_field(p, "ListenerPort").unwrap_or(0),
                path: str_field(p, "Path"),
                local_path_port: u16_field(p, "LocalPathPort").unwrap_or(0),
                protocol: str_field(p, "Protocol"),
                parsed_from_check: bool_field(p, "ParsedFromCheck"),
            })
            .collect();
    }
}

/// A member of a config-entry object, by its Pascal name or snake_case alias.
fn field<'v>(obj: &'v Value, pascal: &str) -> Option<&'v Value> {
    let map = obj.as_object()?;
    let fold = |s: &str| {
        s.chars()
            .filter(|c| *c != '_')
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let want = fold(pascal);
    map.get(pascal)
        .or_else(|| map.iter().find(|(k, _)| fold(k) == want).map(|(_, v)| v))
}

fn u16_field(obj: &Value, name: &str) -> Option<u16> {
    field(obj, name)?
        .as_u64()
        .and_then(|n| u16::try_from(n).ok())
}

fn bool_field(obj: &Value, name: &str) -> bool {
    field(obj, name).and_then(Value::as_bool).unwrap_or(false)
}

fn str_field(obj: &Value, name: &str) -> String {
    field(obj, name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests;
