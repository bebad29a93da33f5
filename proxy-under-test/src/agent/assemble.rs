//! Pure assembly: from the latest agent data to upstream specs, chain targets and a complete
//! [`Snapshot`] (or nothing, while something required is still missing: fail closed).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use super::types::{AgentService, CompiledChain, HealthEntry};
use crate::authz::{DefaultPolicy, IntentionSet};
use crate::knobs::{Knobs, Protocol};
use crate::mesh::MeshEntry;
use crate::route::{RouteTable, limits};
use crate::seam::Hooks;
use crate::snapshot::{Bind, Endpoint, L7Upstream, Snapshot, Target, Upstream};
use crate::tls::{Leaf, TrustRoots};

/// Default resolver connect timeout when the chain does not say.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Chain watch key: (upstream name, datacenter to compile for; empty = local).
pub(crate) type ChainKey = (String, String);
/// Prepared-query poll key: (query name, datacenter; empty = local).
pub(crate) type QueryKey = (String, String);

/// How often a prepared-query upstream is executed again when `Proxy.Config` does not say
/// (`prepared_query_poll_interval_ms`): Consul's own proxies re-poll every 30 s
/// (`defaultPreparedQueryPollInterval`, `agent/proxycfg/state.go`).
pub(crate) const DEFAULT_QUERY_POLL: Duration = Duration::from_secs(30);

/// The poll interval of prepared-query upstreams from the proxy's `Proxy.Config`.
pub(crate) fn query_poll_interval(config: &serde_json::Map<String, serde_json::Value>) -> Duration {
    config
        .get("prepared_query_poll_interval_ms")
        .and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
        .filter(|ms| *ms > 0)
        .map_or(DEFAULT_QUERY_POLL, Duration::from_millis)
}

/// Whether the proxy runs as an L4-only proxy (`Proxy.Config.l4_only`): chains requested with
/// `OverrideProtocol = "tcp"`, every upstream served as TCP.
pub(crate) fn l4_only(config: &serde_json::Map<String, serde_json::Value>) -> bool {
    matches!(config.get("l4_only"), Some(serde_json::Value::Bool(true)))
        || config.get("l4_only").and_then(|v| v.as_str()) == Some("true")
}

/// Health watch key: (service, datacenter; empty = local, filter).
pub(crate) type HealthKey = (String, String, String);

/// An upstream as registered, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UpstreamSpec {
    pub(crate) name: String,
    pub(crate) namespace: String,
    pub(crate) datacenter: String,
    pub(crate) bind: Bind,
    /// The upstream's `Config.protocol` (Consul's per-upstream protocol override), if set.
    pub(crate) protocol: Option<Protocol>,
    /// The upstream's `Config` (limits, passive health check).
    pub(crate) config: serde_json::Map<String, serde_json::Value>,
    /// `DestinationType = "prepared_query"`: `name` is the query, executed by polling.
    pub(crate) query: bool,
}

impl UpstreamSpec {
    pub(crate) fn query_key(&self) -> QueryKey {
        (self.name.clone(), self.datacenter.clone())
    }

    pub(crate) fn chain_key(&self) -> ChainKey {
        (self.name.clone(), self.datacenter.clone())
    }
}

/// A target whose endpoints must be watched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TargetSpec {
    pub(crate) id: String,
    pub(crate) service: String,
    pub(crate) namespace: String,
    pub(crate) datacenter: String,
    pub(crate) filter: String,
}

impl TargetSpec {
    pub(crate) fn health_key(&self, local_dc: &str) -> HealthKey {
        let dc = if self.datacenter == local_dc {
            String::new()
        } else {
            self.datacenter.clone()
        };
        (self.service.clone(), dc, self.filter.clone())
    }
}

/// Everything the control plane has learned so far.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) service: Option<AgentService>,
    pub(crate) leaf: Option<Leaf>,
    pub(crate) roots: Option<TrustRoots>,
    pub(crate) intentions: Option<Arc<IntentionSet>>,
    pub(crate) policy: Option<DefaultPolicy>,
    pub(crate) chains: BTreeMap<ChainKey, CompiledChain>,
    pub(crate) health: BTreeMap<HealthKey, Vec<HealthEntry>>,
    /// The latest execution of each prepared-query upstream.
    pub(crate) queries: BTreeMap<QueryKey, super::types::QueryExecution>,
    /// The `mesh` config entry: `None` until the first read, then `Some(None)` when no entry
    /// exists (Consul's `MeshConfigSet`: a snapshot waits for it).
    pub(crate) mesh: Option<Option<MeshEntry>>,
    /// Transparent mode: the intentions the proxy's service is the source of (`None` until
    /// the first read).
    pub(crate) source_intentions: Option<Vec<crate::authz::Intention>>,
    /// Transparent mode: the catalog's service names (`None` until the first read).
    pub(crate) catalog: Option<Vec<String>>,
    /// The `jwt-provider` entries: `None` until the first read.
    pub(crate) jwt: Option<Arc<crate::jwt::Verifier>>,
    /// The hooks every snapshot carries (and the control plane asks while assembling).
    pub(crate) hooks: Hooks,
}

/// Parses a Go duration string such as `5s`, `1m30s`, `250ms`, `1.5s`.
pub(crate) fn parse_go_duration(s: &str) -> Option<Duration> {
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * factor;
        rest = &rest[unit_len..];
    }
    Some(Duration::from_secs_f64(total))
}

fn ip_or(addr: &str, default: IpAddr) -> IpAddr {
    if addr.is_empty() {
        return default;
    }
    addr.parse().unwrap_or_else(|_| {
        tracing::warn!(addr, "not an IP address; using {default}");
        default
    })
}

/// The upstreams this proxy can serve: services and prepared queries (other destination types
/// and upstreams with neither a port nor a socket path are skipped with an error log).
pub(crate) fn upstream_specs(svc: &AgentService) -> Vec<UpstreamSpec> {
    let Some(proxy) = &svc.proxy else {
        return Vec::new();
    };
    proxy
        .upstreams
        .iter()
        .filter_map(|u| {
            let kind = if u.destination_type.is_empty() { "service" } else { &u.destination_type };
            if kind != "service" && kind != "prepared_query" {
                tracing::error!(upstream = %u.destination_name, kind, "unsupported upstream type; skipped");
                return None;
            }
            let bind = sockets::upstream_bind(u)?;
            Some(UpstreamSpec {
                name: u.destination_name.clone(),
                namespace: if u.destination_namespace.is_empty() { "default".into() } else { u.destination_namespace.clone() },
                datacenter: u.datacenter.clone(),
                bind,
                protocol: u.config.get("protocol").and_then(|p| p.as_str()).map(Protocol::parse),
                config: u.config.clone(),
                query: kind == "prepared_query",
            })
        })
        .collect()
}

/// Follows the chain from its start node to a resolver (routers: the last, catch-all route;
/// splitters: the heaviest split) and returns its primary + failover targets and connect timeout.
pub(crate) fn chain_targets(chain: &CompiledChain) -> Option<(Vec<TargetSpec>, Option<Duration>)> {
    let mut key = chain.start_node.clone();
    for _ in 0..16 {
        let node = chain.nodes.get(&key)?;
        if let Some(res) = &node.resolver {
            let ids = std::iter::once(&res.target)
                .chain(res.failover.iter().flat_map(|f| f.targets.iter()));
            let targets = ids
                .filter_map(|id| chain.targets.get(id))
                .map(|t| TargetSpec {
                    id: t.id.clone(),
                    service: t.service.clone(),
                    namespace: if t.namespace.is_empty() {
                        "default".into()
                    } else {
                        t.namespace.clone()
                    },
                    datacenter: t.datacenter.clone(),
                    filter: t.subset.filter.clone(),
                })
                .collect::<Vec<_>>();
            return (!targets.is_empty())
                .then(|| (targets, parse_go_duration(&res.connect_timeout)));
        }
        let next = match node.kind.as_str() {
            "router" => node.routes.last().map(|r| r.next_node.clone()),
            "splitter" => node
                .splits
                .iter()
                .max_by(|a, b| a.weight.total_cmp(&b.weight))
                .map(|s| s.next_node.clone()),
            _ => None,
        }?;
        key = next;
    }
    None
}

/// Every target of `chain` (the L7 path may route to any of them).
pub(crate) fn all_targets(chain: &CompiledChain, hooks: &Hooks) -> Vec<TargetSpec> {
    chain
        .targets
        .values()
        .map(|t| TargetSpec {
            id: t.id.clone(),
            service: t.service.clone(),
            namespace: if t.namespace.is_empty() {
                "default".into()
            } else {
                t.namespace.clone()
            },
            datacenter: t.datacenter.clone(),
            filter: hooks.subset_filter(&t.subset.filter).to_owned(),
        })
        .collect()
}

/// The targets of one upstream: from its chain when known, else the upstream service itself.
pub(crate) fn targets_for(
    spec: &UpstreamSpec,
    chain: Option<&CompiledChain>,
    local_dc: &str,
) -> (Vec<TargetSpec>, Duration) {
    if let Some((targets, timeout)) = chain.and_then(chain_targets) {
        let timeout = timeout.filter(|t| !t.is_zero());
        return (targets, timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT));
    }
    let dc = if spec.datacenter.is_empty() {
        local_dc
    } else {
        &spec.datacenter
    };
    let target = TargetSpec {
        id: format!("{}.{}.default.{dc}", spec.name, spec.namespace),
        service: spec.name.clone(),
        namespace: spec.namespace.clone(),
        datacenter: dc.to_owned(),
        filter: String::new(),
    };
    (vec![target], DEFAULT_CONNECT_TIMEOUT)
}

/// An upstream's protocol: its registration's `Config.protocol` (where a Consul agent merges the
/// destination's `service-defaults`/`proxy-defaults` protocol, `MergeServiceConfig`), else its
/// chain's protocol, else TCP.
pub(crate) fn upstream_protocol(
    configured: Option<Protocol>,
    chain: Option<&CompiledChain>,
) -> Protocol {
    configured
        .or_else(|| chain.map(|c| Protocol::parse(&c.protocol)))
        .unwrap_or_default()
}

fn endpoints(entries: &[HealthEntry]) -> Vec<Endpoint> {
    entries
        .iter()
        .filter(|e| e.service.port != 0)
        .map(|e| Endpoint {
            host: if e.service.address.is_empty() {
                e.node.address.clone()
            } else {
                e.service.address.clone()
            },
            port: e.service.port,
            datacenter: e.node.datacenter.clone(),
            label: format!("{}/{}", e.node.node, e.service.id),
            dialed_directly: transparent::dialed_directly(e),
        })
        .filter(|e| !e.host.is_empty())
        .collect()
}

impl State {
    /// The L7 configuration of an HTTP upstream with `chain`.
    fn l7(
        &self,
        chain: &CompiledChain,
        config: &serde_json::Map<String, serde_json::Value>,
        local_dc: &str,
    ) -> Option<Arc<L7Upstream>> {
        let routes = RouteTable::from_chain(chain)?;
        let targets = all_targets(chain, &self.hooks)
            .into_iter()
            .map(|t| {
                let eps = self
                    .health
                    .get(&t.health_key(local_dc))
                    .map(|e| endpoints(e))
                    .unwrap_or_default();
                let target = Target {
                    endpoints: self.hooks.endpoints(eps),
                    id: t.id.clone(),
                    service: t.service,
                    namespace: t.namespace,
                    datacenter: t.datacenter,
                };
                (t.id, target)
            })
            .collect();
        Some(Arc::new(L7Upstream {
            routes,
            targets,
            limits: limits::limits(config),
            outlier: limits::outlier(config),
        }))
    }

    /// A prepared-query upstream: one target holding the query's latest result (none yet: no
    /// endpoints, so connections are refused until the first execute answers). Plain TCP.
    fn query_upstream(&self, spec: UpstreamSpec, local_dc: &str) -> Upstream {
        let exec = self.queries.get(&spec.query_key());
        let dc = if spec.datacenter.is_empty() {
            local_dc
        } else {
            &spec.datacenter
        };
        let eps = exec.map(|e| endpoints(&e.nodes)).unwrap_or_default();
        let target = Target {
            id: format!("{}.default.{dc}.query", spec.name),
            service: exec.map_or_else(|| spec.name.clone(), |e| e.service.clone()),
            namespace: "default".into(),
            datacenter: dc.to_owned(),
            endpoints: self.hooks.endpoints(eps),
        };
        Upstream {
            l7: None,
            protocol: Protocol::default(),
            name: spec.name,
            bind: spec.bind,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            targets: vec![target],
            virtual_ips: Vec::new(),
        }
    }

    /// A complete snapshot, or `None` while registration, leaf, roots, intentions, the default
    /// policy or the first answer about the mesh entry is missing.
    pub(crate) fn snapshot(&self) -> Option<Snapshot> {
        let mesh = self
            .hooks
            .mesh_entry(self.mesh.clone()?)
            .unwrap_or_default();
        let svc = self.service.as_ref()?;
        let proxy = svc.proxy.as_ref()?;
        let (leaf, roots) = (self.leaf.clone()?, self.roots.clone()?);
        let (intentions, default_policy) = (self.intentions.clone()?, self.policy?);
        let jwt = self.jwt.clone()?;
        if intentions.destination() != proxy.destination_service_name {
            return None;
        }
        let knobs = self.hooks.knobs(Knobs::from_config(&proxy.config));
        let local_app = sockets::local_app(proxy);
        let local_app = self.hooks.local_app(local_app, proxy);
        let upstreams = self
            .specs(svc)
            .into_iter()
            .map(|spec| {
                if spec.query {
                    return self.query_upstream(spec, &svc.datacenter);
                }
                let chain = self.chains.get(&spec.chain_key());
                let (targets, timeout) = targets_for(&spec, chain, &svc.datacenter);
                let target_entries = targets
                    .iter()
                    .filter_map(|t| self.health.get(&t.health_key(&svc.datacenter)))
                    .flatten();
                let virtual_ips = transparent::virtual_ips(chain, target_entries);
                let targets = targets
                    .into_iter()
                    .map(|t| {
                        let eps = self
                            .health
                            .get(&t.health_key(&svc.datacenter))
                            .map(|e| endpoints(e))
                            .unwrap_or_default();
                        let eps = self.hooks.endpoints(eps);
                        Target {
                            id: t.id,
                            service: t.service,
                            namespace: t.namespace,
                            datacenter: t.datacenter,
                            endpoints: eps,
                        }
                    })
                    .collect();
                let protocol = if l4_only(&proxy.config) {
                    Protocol::default()
                } else {
                    upstream_protocol(spec.protocol, chain)
                };
                let l7 = chain
                    .filter(|_| protocol.is_http())
                    .and_then(|c| self.l7(c, &spec.config, &svc.datacenter));
                Upstream {
                    l7,
                    protocol,
                    name: spec.name,
                    bind: spec.bind,
                    connect_timeout: timeout,
                    targets,
                    virtual_ips,
                }
            })
            .collect();
        Some(Snapshot {
            proxy_id: svc.id.clone(),
            service: proxy.destination_service_name.clone(),
            datacenter: svc.datacenter.clone(),
            public_listener: SocketAddr::new(
                ip_or(&svc.address, IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
                svc.port,
            ),
            local_app,
            leaf,
            roots,
            intentions,
            default_policy,
            knobs,
            upstreams,
            transparent: transparent::transparent(proxy),
            path_normalization: mesh.path_normalization(),
            mesh: mesh.settings(),
            jwt,
            hooks: self.hooks.clone(),
        })
    }
}

mod transparent;

mod sockets;
#[cfg(test)]
mod tests;
