//! A prepared-query upstream as Consul renders it (`agent/xds/clusters.go`
//! `makeUpstreamClusterForPreparedQuery`, `endpoints.go`, `listeners.go`): one EDS cluster named
//! `connect.QuerySNI` (`<query>.default.<dc>.query.<trust domain>`), SNI the same, SANs of the
//! destination services of the instances the query returns, the upstream config's connect
//! timeout (`connect_timeout_ms`, 5 s), limits and passive health check; its endpoints are the
//! query's execution with `Connect: true` (`PreparedQueryEndpoints`); the listener is
//! `prepared_query:<query>:<addr>:<port>` with `tcp_proxy` (stat prefix
//! `upstream.prepared_query_<query>`), or the HTTP connection manager when the upstream config
//! says an L7 `protocol`.
//!
//! The builders take it as an [`Upstream`] with a stand-in chain of one resolver whose target
//! is named by the query SNI (`query: true` marks what differs: no panic threshold, the stat
//! prefix). Timing: Consul's agent re-executes the query every 30 s
//! (`defaultPreparedQueryPollInterval`); the sim's xDS rebuilds on every store change, so a
//! proxy fed by it sees a new result at once (faster than Consul, never slower).

use std::collections::BTreeMap;

use super::snapshot::{Upstream, endpoint, str_cfg, u64_cfg};
use super::upstream_config::UpstreamPolicy;
use crate::model::chain::{CompiledChain, DiscoveryResolver, DiscoveryTarget, GraphNode};
use crate::model::service;
use crate::state::prepared_queries::{ExecuteArgs, run};
use crate::state::store::{State, Store};

/// The upstream, or `None` (with a warning) when the query does not resolve: Consul's watch
/// errors and the upstream gets no endpoints.
pub(crate) fn build(
    st: &State,
    store: &Store,
    up: &service::Upstream,
    trust_domain: &str,
) -> Option<Upstream> {
    let dc = if up.datacenter.is_empty() {
        store.cfg.datacenter.clone()
    } else {
        up.datacenter.clone()
    };
    let name = up.destination_name.clone();
    let sni = format!("{name}.default.{dc}.query.{trust_domain}");
    let args = ExecuteArgs {
        id_or_name: &name,
        token: None,
        limit: 0,
        connect: true,
        near: None,
        as_agent: true,
    };
    let (service_name, endpoints) = match run(st, store, &args) {
        Ok(exec) => {
            // The SAN names each instance's destination service (a native instance: itself).
            let dest = exec
                .nodes
                .first()
                .map(|(_, s, _)| {
                    if s.connect.native {
                        s.service.clone()
                    } else {
                        s.proxy.destination_service_name.clone()
                    }
                })
                .unwrap_or_else(|| exec.query.service.service.clone());
            let eps = exec
                .nodes
                .iter()
                .map(|(n, s, c)| endpoint(n, s, c))
                .collect();
            (dest, eps)
        }
        Err(e) => {
            tracing::warn!(query = %name, error = %e, "prepared query upstream does not resolve");
            (name.clone(), Vec::new())
        }
    };
    let timeout_ms = u64_cfg(&up.config, "connect_timeout_ms").unwrap_or(5000);
    let target_id = format!("{name}.query");
    let target = DiscoveryTarget {
        id: target_id.clone(),
        service: service_name,
        namespace: "default".into(),
        partition: "default".into(),
        datacenter: dc,
        sni: sni.clone(),
        name: sni,
        ..Default::default()
    };
    let resolver = DiscoveryResolver {
        connect_timeout: i64::try_from(timeout_ms)
            .unwrap_or(5000)
            .saturating_mul(1_000_000),
        target: target_id.clone(),
        ..Default::default()
    };
    let node_name = format!("resolver:{target_id}");
    let chain = CompiledChain {
        service_name: name.clone(),
        protocol: str_cfg(&up.config, "protocol").unwrap_or_else(|| "tcp".into()),
        start_node: node_name.clone(),
        nodes: BTreeMap::from([(
            node_name,
            GraphNode {
                node_type: "resolver".into(),
                name: target_id.clone(),
                resolver: Some(resolver),
                ..Default::default()
            },
        )]),
        targets: BTreeMap::from([(target_id.clone(), target)]),
        ..Default::default()
    };
    Some(Upstream {
        id: format!("prepared_query:{name}"),
        service: name,
        bind_addr: Some(up.local_bind_address.clone())
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| "127.0.0.1".to_owned()),
        bind_port: up.local_bind_port,
        socket_path: up.local_bind_socket_path.clone(),
        socket_mode: up.local_bind_socket_mode.clone(),
        virtual_ips: Vec::new(),
        chain,
        endpoints: BTreeMap::from([(target_id, endpoints)]),
        policy: UpstreamPolicy::parse(&up.config),
        query: true,
    })
}
