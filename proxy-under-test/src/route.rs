//! The L7 route table of an upstream, compiled from its discovery chain as Consul compiles
//! Envoy's route configuration (`makeUpstreamRouteForDiscoveryChain`): a router's routes in
//! order (the compiler ends them with a catch-all to the default resolver), a splitter's weighted
//! clusters, or one catch-all to a resolver. Pure: chain in, table out; request in, decision out
//! (route, cluster, split) — no sockets, so matching precedence, weights and hashing are tested
//! here alone. The transport is [`crate::dataplane::outbound::l7`].

use std::collections::BTreeMap;
use std::time::Duration;

use crate::agent::assemble::parse_go_duration;
use crate::agent::types::{ChainNext, CompiledChain, RouteDestination};

pub mod headers;
pub mod lb;
pub mod limits;
pub mod matcher;
pub mod retry;

pub use self::headers::HeaderOps;
pub use self::lb::{Lb, LbPolicy};
pub use self::matcher::{Matcher, PathMatch, RequestView};
pub use self::retry::RetryPolicy;

/// Envoy's route timeout when the route sets none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// Weights are hundredths of a percent (Consul multiplies the split weight by 100).
pub const TOTAL_WEIGHT: u32 = 10_000;

/// An upstream's compiled routes and clusters.
#[derive(Debug, Clone)]
pub struct RouteTable {
    /// Routes, first match wins.
    pub routes: Vec<Route>,
    /// Clusters by resolver node name.
    pub clusters: BTreeMap<String, Cluster>,
    fingerprint: String,
}

impl PartialEq for RouteTable {
    fn eq(&self, other: &Self) -> bool {
        self.fingerprint == other.fingerprint
    }
}

impl Eq for RouteTable {}

/// One route.
#[derive(Debug, Clone)]
pub struct Route {
    /// What it matches.
    pub matcher: Matcher,
    /// Where it goes.
    pub action: Action,
    /// How.
    pub policy: Policy,
}

/// Where a route goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// One cluster (resolver node name).
    Cluster(String),
    /// Weighted clusters (weights sum to [`TOTAL_WEIGHT`] in a valid chain).
    Weighted(Vec<Split>),
}

/// One weighted cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// Hundredths of a percent.
    pub weight: u32,
    /// Resolver node name.
    pub cluster: String,
    /// The split's request header changes.
    pub request_headers: HeaderOps,
    /// The split's response header changes.
    pub response_headers: HeaderOps,
}

/// A route's destination settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// `PrefixRewrite`.
    pub prefix_rewrite: Option<String>,
    /// Route timeout (`RequestTimeout`; `None`: Envoy's default 15 s).
    pub timeout: Option<Duration>,
    /// Stream idle timeout (`IdleTimeout`).
    pub idle_timeout: Option<Duration>,
    /// Retries.
    pub retry: Option<RetryPolicy>,
    /// Route-level request header changes.
    pub request_headers: HeaderOps,
    /// Route-level response header changes.
    pub response_headers: HeaderOps,
}

/// A resolver: its targets in failover order, connect timeout and load balancing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// Resolver node name.
    pub name: String,
    /// Primary target ID, then failover targets.
    pub targets: Vec<String>,
    /// `ConnectTimeout`.
    pub connect_timeout: Option<Duration>,
    /// Load balancing.
    pub lb: Lb,
}

/// The decision for one request.
#[derive(Debug, Clone, Copy)]
pub struct Decision<'a> {
    /// Index of the matched route.
    pub index: usize,
    /// The route.
    pub route: &'a Route,
    /// The cluster.
    pub cluster: &'a Cluster,
    /// The split chosen, for weighted routes.
    pub split: Option<&'a Split>,
}

impl RouteTable {
    /// Compiles `chain`; `None` when its start node is missing.
    pub fn from_chain(chain: &CompiledChain) -> Option<Self> {
        let start = chain.nodes.get(&chain.start_node)?;
        let clusters = chain
            .nodes
            .iter()
            .filter_map(|(name, node)| {
                let r = node.resolver.as_ref()?;
                let targets = std::iter::once(r.target.clone())
                    .chain(r.failover.iter().flat_map(|f| f.targets.iter().cloned()))
                    .collect();
                Some((
                    name.clone(),
                    Cluster {
                        name: name.clone(),
                        targets,
                        connect_timeout: parse_go_duration(&r.connect_timeout)
                            .filter(|d| !d.is_zero()),
                        lb: Lb::new(node.load_balancer.as_ref()),
                    },
                ))
            })
            .collect();
        let routes = match start.kind.as_str() {
            "router" => start
                .routes
                .iter()
                .filter_map(|r| route_for(chain, r))
                .collect(),
            "splitter" => vec![Route {
                matcher: Matcher::any(),
                action: Action::Weighted(splits(&start.splits)),
                policy: Policy::default(),
            }],
            _ => vec![Route {
                matcher: Matcher::any(),
                action: Action::Cluster(chain.start_node.clone()),
                policy: Policy {
                    timeout: start.resolver.as_ref().and_then(|r| r.request_timeout),
                    ..Policy::default()
                },
            }],
        };
        Some(Self {
            routes,
            clusters,
            fingerprint: format!("{chain:?}"),
        })
    }

    /// The first route matching `req`.
    pub fn matching(&self, req: &RequestView<'_>) -> Option<usize> {
        self.routes.iter().position(|r| r.matcher.matches(req))
    }

    /// The decision for route `index`, `roll` in `[0, TOTAL_WEIGHT)` choosing among splits.
    pub fn decide(&self, index: usize, roll: u32) -> Option<Decision<'_>> {
        let route = self.routes.get(index)?;
        let (cluster, split) = match &route.action {
            Action::Cluster(c) => (c, None),
            Action::Weighted(splits) => {
                let s = pick_split(splits, roll)?;
                (&s.cluster, Some(s))
            }
        };
        Some(Decision {
            index,
            route,
            cluster: self.clusters.get(cluster)?,
            split,
        })
    }
}

/// The split `roll` falls in (weights laid end to end); the last one past the total.
pub fn pick_split(splits: &[Split], roll: u32) -> Option<&Split> {
    let mut acc = 0u32;
    for s in splits {
        acc = acc.saturating_add(s.weight);
        if roll < acc {
            return Some(s);
        }
    }
    splits.iter().rev().find(|s| s.weight > 0).or(splits.last())
}

fn splits(splits: &[ChainNext]) -> Vec<Split> {
    splits
        .iter()
        .map(|s| {
            let d = s.definition.as_ref();
            Split {
                // Consul's `uint32(split.Weight * 100)` on a float32 (truncating).
                weight: ((s.weight as f32) * 100.0).clamp(0.0, TOTAL_WEIGHT as f32) as u32,
                cluster: s.next_node.clone(),
                request_headers: HeaderOps::new(d.and_then(|d| d.request_headers.as_ref())),
                response_headers: HeaderOps::new(d.and_then(|d| d.response_headers.as_ref())),
            }
        })
        .collect()
}

fn route_for(chain: &CompiledChain, r: &ChainNext) -> Option<Route> {
    let next = chain.nodes.get(&r.next_node)?;
    let action = match next.kind.as_str() {
        "splitter" => Action::Weighted(splits(&next.splits)),
        _ => Action::Cluster(r.next_node.clone()),
    };
    let def = r.definition.as_ref();
    let http = def
        .and_then(|d| d.r#match.as_ref())
        .and_then(|m| m.http.as_ref());
    let Some(matcher) = Matcher::compile(http) else {
        tracing::warn!(next = %r.next_node, "route with an invalid regex; skipped");
        return None;
    };
    let policy = def
        .and_then(|d| d.destination.as_ref())
        .map(policy)
        .unwrap_or_default();
    Some(Route {
        matcher,
        action,
        policy,
    })
}

fn policy(d: &RouteDestination) -> Policy {
    Policy {
        prefix_rewrite: (!d.prefix_rewrite.is_empty()).then(|| d.prefix_rewrite.clone()),
        timeout: d.request_timeout,
        idle_timeout: d.idle_timeout,
        retry: RetryPolicy::new(d),
        request_headers: HeaderOps::new(d.request_headers.as_ref()),
        response_headers: HeaderOps::new(d.response_headers.as_ref()),
    }
}

/// The path (and query) after the route's `PrefixRewrite`: the matched prefix (or the whole
/// path, for exact matches) replaced; `None` when nothing changes.
pub fn rewrite(route: &Route, path: &str, query: Option<&str>) -> Option<String> {
    let with = route.policy.prefix_rewrite.as_deref()?;
    let rest = match &route.matcher.path {
        PathMatch::Exact(_) => "",
        PathMatch::Prefix(p) => path.get(p.len()..).unwrap_or(""),
        PathMatch::Any => path.get(1..).unwrap_or(""),
        PathMatch::Regex(_) => return None,
    };
    let mut out = format!("{with}{rest}");
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    Some(out)
}

#[cfg(test)]
mod tests;
