//! The store's state -> a plain snapshot of what one connect-proxy needs (Consul's
//! `proxycfg.ConfigSnapshot` for a sidecar): the merged registration, the leaf and roots, the
//! destination's intentions and default, and each upstream's compiled discovery chain with the
//! health of every target's connect-capable instances. The builders read only this.

use std::collections::BTreeMap;

use serde_json::Value;
use time::OffsetDateTime;

use super::BuildError;
use super::upstream_config::UpstreamPolicy;
use crate::go::duration::GoDuration;
use crate::go::filter::{Filter, HEALTH_ENTRY_FIELDS};
use crate::model::chain::{self, ChainRequest, CompiledChain};
use crate::model::config_entry::{ConfigEntry, JwtProviderConfigEntry, Kind, MeshConfigEntry};
use crate::model::intention::Intention;
use crate::model::service::{self, HEALTH_CRITICAL, HEALTH_PASSING, HEALTH_WARNING, ServiceKind};
use crate::state::queries;
use crate::state::store::{State, Store};

/// Everything the builders need for one sidecar.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Snapshot {
    /// The proxy's service ID.
    pub(crate) proxy_id: String,
    /// The destination service (`Proxy.DestinationServiceName`).
    pub(crate) service: String,
    pub(crate) datacenter: String,
    pub(crate) trust_domain: String,
    /// Public listener bind address and port (after `bind_address`/`bind_port`).
    pub(crate) public_addr: String,
    pub(crate) public_port: u16,
    /// The merged `protocol` of the destination (`tcp` when unset).
    pub(crate) protocol: String,
    pub(crate) local_addr: String,
    pub(crate) local_port: u16,
    pub(crate) local_socket: String,
    pub(crate) local_connect_timeout_ms: u64,
    /// `local_request_timeout_ms`: the public listener route's timeout (HTTP only).
    pub(crate) local_request_timeout_ms: Option<u64>,
    /// `max_inbound_connections` (0: no limit).
    pub(crate) max_inbound_connections: u64,
    /// `balance_inbound_connections` (`exact_balance` or empty; other values are ignored).
    pub(crate) balance_inbound_connections: String,
    pub(crate) leaf: Leaf,
    /// Every root PEM, each ending in a newline, concatenated.
    pub(crate) roots_pem: String,
    /// The destination's intentions, in precedence order.
    pub(crate) intentions: Vec<Intention>,
    pub(crate) default_allow: bool,
    pub(crate) upstreams: Vec<Upstream>,
    /// Set in transparent mode (`Proxy.Mode = "transparent"`).
    pub(crate) transparent: Option<Transparent>,
    /// The `mesh` config entry, when one is stored (`cfgSnap.MeshConfig()`).
    pub(crate) mesh: Option<MeshConfigEntry>,
    /// The merged `Proxy.MutualTLSMode` (`""`, `strict`, `permissive`).
    pub(crate) mutual_tls_mode: String,
    /// Every stored `jwt-provider` entry by name (proxycfg watches them all).
    pub(crate) jwt_providers: BTreeMap<String, JwtProviderConfigEntry>,
}

/// Transparent-proxy settings of the sidecar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Transparent {
    /// `TransparentProxy.OutboundListenerPort` (15001 when unset).
    pub(crate) outbound_port: u16,
}

/// The proxy's leaf (certificate chain and key PEM, each newline-terminated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Leaf {
    pub(crate) cert_pem: String,
    pub(crate) key_pem: String,
}

/// One service upstream with its compiled chain.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Upstream {
    /// `Upstream.Identifier()`: the destination name (plus `?dc=` when one is set).
    pub(crate) id: String,
    pub(crate) service: String,
    pub(crate) bind_addr: String,
    pub(crate) bind_port: u16,
    pub(crate) socket_path: String,
    pub(crate) socket_mode: String,
    pub(crate) chain: CompiledChain,
    /// The destination's virtual IPs (transparent proxy filter-chain match).
    pub(crate) virtual_ips: Vec<String>,
    /// Instances per chain target ID: the connect-capable instances of the target's service
    /// that match the target's subset filter.
    pub(crate) endpoints: BTreeMap<String, Vec<Endpoint>>,
    /// Circuit breakers and outlier detection from the upstream's resolved config.
    pub(crate) policy: UpstreamPolicy,
    /// A prepared-query upstream (`query_upstream.rs`): its `chain` is the one-resolver stand-in
    /// whose target is named by the query's SNI.
    pub(crate) query: bool,
}

/// One connect-capable instance of a target, as `/v1/health/connect/<svc>` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) address: String,
    pub(crate) port: u16,
    /// The instance's `virtual` tagged address, if any.
    pub(crate) virtual_address: Option<String>,
    /// Check statuses of the instance and its node.
    pub(crate) statuses: Vec<String>,
    pub(crate) weight_passing: i64,
    pub(crate) weight_warning: i64,
}

/// The leaf, renewal-aware: what `Store::leaf_now` returns plus when to look again.
pub(crate) struct LeafNow {
    pub(crate) leaf: Leaf,
    pub(crate) refresh_at: Option<OffsetDateTime>,
}

/// The merged registration of `proxy_id` on this agent, if it is registered.
pub(crate) fn proxy_service(
    store: &Store,
    proxy_id: &str,
) -> Result<Option<service::NodeService>, BuildError> {
    let node = store.cfg.node_name.clone();
    store.read(|st| {
        let Some(svc) = st.services.get(&(node, proxy_id.to_owned())) else {
            return Ok(None);
        };
        if svc.kind != ServiceKind::ConnectProxy {
            return Err(BuildError::NotAProxy(proxy_id.to_owned()));
        }
        Ok(Some(queries::merged(st, svc)))
    })
}

/// The destination's leaf as the agent's proxy-config leaf watch holds it (renewed when due;
/// after a root rotation re-issued only at its jittered point, so new roots reach Envoy first,
/// as in Consul) and its next change point.
pub(crate) fn leaf_now(store: &Store, service: &str) -> Result<LeafNow, BuildError> {
    let dc = store.cfg.datacenter.clone();
    let (leaf, refresh_at) = store
        .leaf_watched(service, &dc)
        .map_err(|e| BuildError::Unavailable(e.to_string()))?;
    Ok(LeafNow {
        leaf: Leaf {
            cert_pem: ensure_newline(&leaf.cert_pem),
            key_pem: ensure_newline(&leaf.private_key_pem),
        },
        refresh_at,
    })
}

/// Builds the snapshot from the state (the leaf is fetched before, outside the lock).
pub(crate) fn build(
    st: &State,
    store: &Store,
    svc: &service::NodeService,
    leaf: Leaf,
) -> Result<Snapshot, BuildError> {
    let cfg = &svc.proxy.config;
    let dc = store.cfg.datacenter.clone();
    let trust_domain = st.ca.trust_domain().to_owned();
    let dest = svc.proxy.destination_service_name.clone();
    let public_addr = str_cfg(cfg, "bind_address")
        .or_else(|| Some(svc.address.clone()).filter(|a| !a.is_empty()))
        .unwrap_or_else(|| "0.0.0.0".to_owned());
    let public_port = u64_cfg(cfg, "bind_port")
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p != 0)
        .unwrap_or(svc.port);
    let local_addr = Some(svc.proxy.local_service_address.clone())
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| "127.0.0.1".to_owned());
    // Consul's `RootPEMs()`: every root in the roots response's order (by ID).
    let roots_pem = st.ca.roots_json()["Roots"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["RootCert"].as_str())
        .map(ensure_newline)
        .collect();
    let default_allow = queries::default_policy(store).allows_by_default();
    let entries = queries::chain_entries(&st.config);
    let transparent = (svc.proxy.mode == "transparent").then_some(Transparent {
        outbound_port: match svc.proxy.transparent_proxy.outbound_listener_port {
            0 => 15001,
            p => p,
        },
    });
    let mut wanted: Vec<service::Upstream> = svc.proxy.upstreams.clone();
    if transparent.is_some() {
        for name in queries::intention_upstreams(st, &dest, default_allow) {
            if !wanted.iter().any(|u| u.destination_name == name) {
                wanted.push(service::Upstream {
                    destination_name: name,
                    ..Default::default()
                });
            }
        }
    }
    let mut upstreams = Vec::new();
    for up in &wanted {
        if up.destination_type == "prepared_query" {
            upstreams.extend(super::query_upstream::build(st, store, up, &trust_domain));
            continue;
        }
        let req = ChainRequest {
            service: up.destination_name.clone(),
            datacenter: dc.clone(),
            trust_domain: trust_domain.clone(),
            override_protocol: str_cfg(&up.config, "protocol"),
            override_connect_timeout: u64_cfg(&up.config, "connect_timeout_ms")
                .and_then(|ms| i64::try_from(ms).ok())
                .map(|ms| GoDuration(ms.saturating_mul(1_000_000))),
            override_mesh_gateway_mode: None,
            virtual_ips: None,
        };
        // A chain that does not compile leaves that upstream without resources (Consul's
        // chain watch errors and the upstream is skipped); the rest of the proxy is served.
        let chain = match chain::compile(&entries, &req) {
            Ok(c) => c.chain,
            Err(e) => {
                tracing::warn!(upstream = %up.destination_name, error = %e, "discovery chain does not compile");
                continue;
            }
        };
        let endpoints = chain
            .targets
            .iter()
            .map(|(id, t)| (id.clone(), endpoints_of(st, &t.service, &t.subset.filter)))
            .collect();
        let id = if up.datacenter.is_empty() {
            up.destination_name.clone()
        } else {
            format!("{}?dc={}", up.destination_name, up.datacenter)
        };
        upstreams.push(Upstream {
            id,
            service: up.destination_name.clone(),
            bind_addr: Some(up.local_bind_address.clone())
                .filter(|a| !a.is_empty())
                .unwrap_or_else(|| "127.0.0.1".to_owned()),
            bind_port: up.local_bind_port,
            socket_path: up.local_bind_socket_path.clone(),
            socket_mode: up.local_bind_socket_mode.clone(),
            virtual_ips: st
                .virtual_ip(&up.destination_name)
                .map(|ip| vec![ip.to_string()])
                .unwrap_or_default(),
            chain,
            endpoints,
            policy: UpstreamPolicy::parse(&up.config),
            query: false,
        });
    }
    Ok(Snapshot {
        proxy_id: svc.id.clone(),
        intentions: st.destination_intentions(&dest).as_ref().clone(),
        service: dest,
        datacenter: dc,
        trust_domain,
        public_addr,
        public_port,
        protocol: str_cfg(cfg, "protocol").unwrap_or_else(|| "tcp".to_owned()),
        local_addr,
        local_port: svc.proxy.local_service_port,
        local_socket: svc.proxy.local_service_socket_path.clone(),
        local_connect_timeout_ms: u64_cfg(cfg, "local_connect_timeout_ms").unwrap_or(5000),
        local_request_timeout_ms: u64_cfg(cfg, "local_request_timeout_ms"),
        max_inbound_connections: u64_cfg(cfg, "max_inbound_connections").unwrap_or(0),
        balance_inbound_connections: balance(cfg),
        leaf,
        roots_pem,
        default_allow,
        upstreams,
        transparent,
        mesh: st.config.mesh().cloned(),
        mutual_tls_mode: svc.proxy.mutual_tls_mode.clone(),
        jwt_providers: st
            .config
            .list(Kind::JwtProvider)
            .into_iter()
            .filter_map(|e| match e {
                ConfigEntry::JwtProvider(p) => Some((p.name.clone(), p.clone())),
                _ => None,
            })
            .collect(),
    })
}

/// The connect-capable instances of `service` (sidecars for it, connect-native instances),
/// with every check status, as the health endpoint sees them; with a subset `filter`, only the
/// entries it matches (Consul's `watchHealthForTarget` passes `target.Subset.Filter` as the
/// health query's `?filter=`, evaluated on each `{Node, Service, Checks}` entry: for a sidecar
/// that is the proxy's own `Service.Meta` / `Service.Tags`, which `sidecar_service` inherits
/// from its parent). A filter that does not parse or evaluate yields no instances (the watch
/// errors); resolver validation keeps such filters out of the store.
fn endpoints_of(st: &State, service: &str, filter: &str) -> Vec<Endpoint> {
    let (_, entries) = st.health_entries(service, true, false);
    let filter = match filter {
        "" => None,
        f => match Filter::parse_for(f, HEALTH_ENTRY_FIELDS) {
            Ok(f) => Some(f),
            Err(_) => return Vec::new(),
        },
    };
    entries
        .into_iter()
        .filter(|(node, svc, checks)| {
            filter.as_ref().is_none_or(|f| {
                f.matches(&service::health_entry_json(node, svc, checks))
                    .unwrap_or(false)
            })
        })
        .map(|(node, svc, checks)| endpoint(node, svc, &checks))
        .collect()
}

/// One health entry as an endpoint.
pub(crate) fn endpoint(
    node: &service::Node,
    svc: &service::NodeService,
    checks: &[&service::HealthCheck],
) -> Endpoint {
    Endpoint {
        address: if svc.address.is_empty() {
            node.address.clone()
        } else {
            svc.address.clone()
        },
        port: svc.port,
        virtual_address: svc
            .tagged_addresses
            .get("virtual")
            .map(|a| a.address.clone())
            .filter(|a| !a.is_empty()),
        statuses: checks.iter().map(|c| c.status.clone()).collect(),
        weight_passing: svc.weights.passing,
        weight_warning: svc.weights.warning,
    }
}

/// Envoy health status and weight of one endpoint, as Consul's
/// `calculateEndpointHealthAndWeight`: critical -> unhealthy; warning -> healthy with the
/// warning weight unless only passing instances are wanted; a weight below 1 -> unhealthy
/// (weight 1); weights capped at 128.
pub(crate) fn health_and_weight(ep: &Endpoint, only_passing: bool) -> (bool, u32) {
    let mut healthy = true;
    let mut weight = ep.weight_passing;
    for status in &ep.statuses {
        if status == HEALTH_CRITICAL {
            healthy = false;
        }
        if only_passing && status != HEALTH_PASSING {
            healthy = false;
        }
        if status == HEALTH_WARNING {
            weight = ep.weight_warning;
        }
    }
    if weight < 1 {
        healthy = false;
        weight = 1;
    }
    (healthy, u32::try_from(weight.min(128)).unwrap_or(1))
}

fn ensure_newline(s: &str) -> String {
    if s.ends_with('\n') {
        s.to_owned()
    } else {
        format!("{s}\n")
    }
}

/// `injectConnectionBalanceConfig`: `exact_balance` is rendered, empty means none, anything
/// else is ignored with a warning.
fn balance(cfg: &serde_json::Map<String, Value>) -> String {
    match str_cfg(cfg, "balance_inbound_connections") {
        None => String::new(),
        Some(b) if b == "exact_balance" => b,
        Some(other) => {
            tracing::warn!(value = %other, "ignoring invalid connection balance option");
            String::new()
        }
    }
}

pub(crate) fn str_cfg(cfg: &serde_json::Map<String, Value>, key: &str) -> Option<String> {
    cfg.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// A number that may have been written as a JSON number or a string (Consul's
/// `mapstructure` weak decoding accepts both).
pub(crate) fn u64_cfg(cfg: &serde_json::Map<String, Value>, key: &str) -> Option<u64> {
    match cfg.get(key)? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}
