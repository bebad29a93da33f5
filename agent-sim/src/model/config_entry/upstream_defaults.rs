//! The per-upstream half of Consul's `ComputeResolvedServiceConfig`
//! (`agent/configentry/resolve.go`): the opaque config each explicitly registered upstream of a
//! proxy gets from proxy-defaults (protocol, mesh gateway), the upstream's own service-defaults
//! (protocol), and the downstream's service-defaults `UpstreamConfig` (defaults, then the
//! override for that upstream). Centrally configured upstreams that the registration does not
//! list (transparent proxies) are not synthesized.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::service_defaults::UpstreamConfig;
use super::{ConfigEntry, Kind, store::ConfigEntries};

fn mesh_gateway(mode: &str) -> Value {
    json!({ "Mode": mode })
}

/// `UpstreamConfig.MergeInto`: only non-empty fields are written (empty ones would override).
fn merge_into(cfg: &UpstreamConfig, dst: &mut Map<String, Value>) {
    let mut put = |k: &str, v: Value| {
        dst.insert(k.to_owned(), v);
    };
    if !cfg.envoy_listener_json.is_empty() {
        put("envoy_listener_json", json!(cfg.envoy_listener_json));
    }
    if !cfg.envoy_cluster_json.is_empty() {
        put("envoy_cluster_json", json!(cfg.envoy_cluster_json));
    }
    if !cfg.protocol.is_empty() {
        put("protocol", json!(cfg.protocol));
    }
    if cfg.connect_timeout_ms != 0 {
        put("connect_timeout_ms", json!(cfg.connect_timeout_ms));
    }
    if let Some(l) = &cfg.limits {
        put("limits", serde_json::to_value(l).unwrap_or(Value::Null));
    }
    if let Some(p) = &cfg.passive_health_check {
        put(
            "passive_health_check",
            serde_json::to_value(p).unwrap_or(Value::Null),
        );
    }
    if !cfg.mesh_gateway.mode.is_empty() {
        put("mesh_gateway", mesh_gateway(&cfg.mesh_gateway.mode));
    }
    if !cfg.balance_outbound_connections.is_empty() {
        put(
            "balance_outbound_connections",
            json!(cfg.balance_outbound_connections),
        );
    }
}

impl ConfigEntries {
    /// The resolved config of each of `upstreams` (names of service-type, local upstreams) for a
    /// proxy of `service` whose registration sets mesh gateway mode `reg_mesh_gateway` (`""` if
    /// unset). Upstreams with nothing resolved are absent.
    pub fn upstream_configs(
        &self,
        service: &str,
        upstreams: &[String],
        reg_mesh_gateway: &str,
    ) -> BTreeMap<String, Map<String, Value>> {
        let mut out = BTreeMap::new();
        if upstreams.is_empty() {
            return out;
        }
        let mut wildcard = Map::new();
        let mut global_protocol = String::new();
        let mut reply_mesh_gateway = String::new();
        if let Some(ConfigEntry::ProxyDefaults(pd)) = self.get(Kind::ProxyDefaults, "global") {
            let config = pd.config.clone().unwrap_or_default();
            if let Some(mgw) = config.get("mesh_gateway") {
                wildcard.insert("mesh_gateway".into(), mgw.clone());
            }
            if !pd.mesh_gateway.mode.is_empty() {
                wildcard.insert("mesh_gateway".into(), mesh_gateway(&pd.mesh_gateway.mode));
            }
            reply_mesh_gateway.clone_from(&pd.mesh_gateway.mode);
            global_protocol = config
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("protocol"))
                .and_then(|(_, v)| v.as_str())
                .unwrap_or_default()
                .to_owned();
        }
        let mut defaults = None;
        let mut overrides: BTreeMap<&str, &UpstreamConfig> = BTreeMap::new();
        if let Some(ConfigEntry::ServiceDefaults(sd)) = self.get(Kind::ServiceDefaults, service) {
            if !sd.mesh_gateway.mode.is_empty() {
                reply_mesh_gateway.clone_from(&sd.mesh_gateway.mode);
                wildcard.insert("mesh_gateway".into(), mesh_gateway(&sd.mesh_gateway.mode));
            }
            if let Some(uc) = &sd.upstream_config {
                for o in uc.overrides.iter().filter(|o| o.peer.is_empty()) {
                    overrides.insert(o.name.as_str(), o);
                }
                if let Some(d) = &uc.defaults {
                    let mut d = d.clone();
                    if d.mesh_gateway.mode.is_empty() {
                        d.mesh_gateway.mode.clone_from(&reply_mesh_gateway);
                    }
                    merge_into(&d, &mut wildcard);
                    defaults = Some(d);
                }
            }
        }
        if !reg_mesh_gateway.is_empty() {
            wildcard.insert("mesh_gateway".into(), mesh_gateway(reg_mesh_gateway));
        }
        for name in upstreams {
            let mut resolved = Map::new();
            if !global_protocol.is_empty() {
                resolved.insert("protocol".into(), json!(global_protocol));
            }
            for (k, v) in &wildcard {
                resolved.insert(k.clone(), v.clone());
            }
            if let Some(ConfigEntry::ServiceDefaults(usd)) = self.get(Kind::ServiceDefaults, name)
                && !usd.protocol.is_empty()
            {
                resolved.insert("protocol".into(), json!(usd.protocol));
            }
            if !reply_mesh_gateway.is_empty() {
                resolved.insert("mesh_gateway".into(), mesh_gateway(&reply_mesh_gateway));
            }
            if let Some(d) = &defaults {
                merge_into(d, &mut resolved);
            }
            if !reg_mesh_gateway.is_empty() {
                resolved.insert("mesh_gateway".into(), mesh_gateway(reg_mesh_gateway));
            }
            if let Some(o) = overrides.get(name.as_str()) {
                merge_into(o, &mut resolved);
            }
            if !resolved.is_empty() {
                out.insert(name.clone(), resolved);
            }
        }
        out
    }
}
