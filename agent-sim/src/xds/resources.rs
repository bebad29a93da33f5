//! Pure builders: the store's state -> every xDS resource of one proxy (listeners, clusters,
//! endpoints, routes, secrets), shaped and named as Consul's golden files. `for_proxy` is the
//! seam the transport calls; one file per concern below.
//!
//! Followed: Consul's `agent/xds/{listeners,clusters,endpoints,rbac,routes,secrets}.go` and the
//! goldens `agent/xds/testdata/{listeners,clusters,endpoints,rbac}/*.golden`. Deliberately as
//! Consul does it, even where that surprises:
//! - RBAC precedence only orders sources: `a -> *` (precedence 6) under `* -> web` (8) is not
//!   AND-NOTted, so Envoy decides by `a -> *` while `/v1/agent/connect/authorize` decides by
//!   `* -> web` (`rbac.go` `ixnSourceMatches`).
//! - A hostname instance address goes into EDS as-is (only peered upstreams switch to DNS
//!   clusters), which Envoy refuses.
//! - With SDS only the public listener names `connect-leaf` / `connect-root` (`secrets.go`);
//!   upstream clusters keep the leaf inline.
//!
//! - Transparent mode: only upstreams without a port or socket (intention upstreams: every
//!   typical or virtual-IP service db may reach, `IntentionTopology`) get an outbound filter
//!   chain, sorted by address; explicit ones keep their own listener. The mesh entry's
//!   `TransparentProxy.MeshDestinationsOnly` removes the catch-all `original-destination` chain.
//!
//! - Discovery-chain upstreams carry what Consul renders for L7 traffic management: subset
//!   clusters named by SNI whose EDS holds only the instances matching the subset filter,
//!   load-balancer policy and route hash policies, circuit breakers and outlier detection from
//!   the resolved upstream config, route rewrites, timeouts, retries and header modifiers.
//!
//! - Prepared-query upstreams (`query_upstream.rs`): an EDS cluster named by the query's SNI
//!   (`<query>.default.<dc>.query.<trust domain>`) fed with the query's execution with
//!   `Connect: true`, and a `prepared_query:<query>` listener. Consul's proxycfg re-executes the
//!   query every 30 s; the sim rebuilds on every store change, so Envoy sees a change at once.
//!
//! Not modelled: the virtual DNS listener, peered and sameness-group intention sources, expose paths, escape
//! hatches.

mod bench_tls;
mod cluster_policy;
mod clusters;
mod endpoints;
mod jwt_authn;
mod listeners;
mod query_upstream;
mod rbac;
mod route_policy;
mod routes;
mod snapshot;
mod tls;
mod upstream_config;

#[cfg(test)]
mod tests;

use envoy_types::pb::google::protobuf::Any;
use time::OffsetDateTime;

use super::types::{self, Resource, Resources, TlsMode, XdsConfig};
use crate::state::store::Store;

/// What one proxy is sent now, and when to look again even if nothing is written (the leaf's
/// renewal point, a scheduled rotation).
#[derive(Debug, Clone, PartialEq)]
pub struct ProxyResources {
    /// The resources.
    pub resources: Resources,
    /// Rebuild at this moment even without a store change.
    pub refresh_at: Option<OffsetDateTime>,
}

/// Why a proxy's resources could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The proxy service is registered but is not a connect proxy.
    #[error("service {0:?} is not a connect-proxy")]
    NotAProxy(String),
    /// The agent could not produce the material (no servers, CA error).
    #[error("{0}")]
    Unavailable(String),
}

/// Builds every resource of proxy `proxy_id`; `Ok(None)` when no such service is registered.
///
/// Reads the proxy's merged registration, takes the destination's leaf from the agent cache
/// (issuing or renewing it when due, as the agent does), then builds everything from one
/// consistent read of the state. `refresh_at` is the leaf's renewal or pending rotation point.
#[allow(dead_code)] // called by the transport once it lands
pub(crate) fn for_proxy(
    store: &Store,
    proxy_id: &str,
    cfg: &XdsConfig,
) -> Result<Option<ProxyResources>, BuildError> {
    let Some(svc) = snapshot::proxy_service(store, proxy_id)? else {
        return Ok(None);
    };
    let leaf = snapshot::leaf_now(store, &svc.proxy.destination_service_name)?;
    let snap = store.read(|st| snapshot::build(st, store, &svc, leaf.leaf))?;
    // `makeJWTAuthFilter` and `makeRBACRules` fail the whole build on an unknown provider.
    if listeners::is_http(&snap.protocol)
        && let Some(e) = jwt_authn::missing_provider(&snap)
    {
        return Err(BuildError::Unavailable(e));
    }
    Ok(Some(ProxyResources {
        resources: build(&snap, cfg),
        refresh_at: leaf.refresh_at,
    }))
}

/// Every resource of a snapshot, packed and versioned. With a sim-only benchmark option set
/// (`no_tls_resumption`, `tls_ecdh_curves`: not Consul's rendering) the TLS contexts are
/// rewritten by [`bench_tls`] before packing; without one nothing is touched.
fn build(snap: &snapshot::Snapshot, cfg: &XdsConfig) -> Resources {
    let mode = cfg.tls_mode;
    let bench = cfg.no_tls_resumption || !cfg.tls_ecdh_curves.is_empty();
    let listener = |mut l: envoy_types::pb::envoy::config::listener::v3::Listener| {
        if bench {
            bench_tls::listener(cfg, &mut l);
        }
        Resource::pack(&l.name, &l)
    };
    let mut out = Resources::default();
    let (mut clusters, eds) = clusters::build(snap);
    if bench {
        bench_tls::clusters(cfg, &mut clusters);
    }
    for c in &clusters {
        out.insert(types::CLUSTER, Resource::pack(&c.name, c));
    }
    for cla in endpoints::build(snap, &eds) {
        out.insert(types::ENDPOINT, Resource::pack(&cla.cluster_name, &cla));
    }
    out.insert(types::LISTENER, listener(listeners::public(snap, mode)));
    if let Some((l, routes)) = listeners::outbound(snap) {
        out.insert(types::LISTENER, listener(l));
        for r in routes {
            out.insert(types::ROUTE, Resource::pack(&r.name, &r));
        }
    }
    for up in &snap.upstreams {
        if let Some((l, route)) = listeners::upstream(snap, up) {
            out.insert(types::LISTENER, listener(l));
            if let Some(r) = route {
                out.insert(types::ROUTE, Resource::pack(&r.name, &r));
            }
        }
    }
    if mode == TlsMode::Sds {
        for s in tls::secrets(snap) {
            out.insert(types::SECRET, Resource::pack(&s.name, &s));
        }
    }
    out
}

/// Packs a nested message as `Any` (filter and extension configs).
pub(crate) fn any<M: prost::Message + prost::Name>(msg: &M) -> Any {
    Any {
        type_url: M::type_url(),
        value: msg.encode_to_vec(),
    }
}
