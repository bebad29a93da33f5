//! Clusters (`agent/xds/clusters.go`): `local_app` (STATIC, inline load assignment) and, per
//! upstream, one EDS cluster per discovery-chain resolver named by its target's SNI; a resolver
//! with failover becomes an `envoy.clusters.aggregate` cluster over
//! `failover-target~<i>~<sni>` EDS children (golden
//! `clusters/connect-proxy-with-chain-and-failover.latest.golden`). Each EDS cluster carries the
//! upstream's circuit breakers and outlier detection and the resolver's load-balancer policy
//! (`cluster_policy`), and its resolver's connect timeout.

use envoy_types::pb::envoy::config::cluster::v3::{
    CircuitBreakers, Cluster, OutlierDetection,
    cluster::{
        ClusterDiscoveryType, CommonLbConfig, CustomClusterType, DiscoveryType, EdsClusterConfig,
        LbPolicy,
    },
};
use envoy_types::pb::envoy::config::core::v3::Http2ProtocolOptions;
use envoy_types::pb::envoy::config::endpoint::v3::ClusterLoadAssignment;
use envoy_types::pb::envoy::extensions::clusters::aggregate::v3::ClusterConfig;
use envoy_types::pb::envoy::extensions::upstreams::http::v3::{
    HttpProtocolOptions, http_protocol_options,
};
use envoy_types::pb::envoy::r#type::v3::Percent;
use envoy_types::pb::google::protobuf::Duration;
use prost::Name;

use super::snapshot::{Snapshot, Upstream};
use super::{any, cluster_policy, endpoints, tls};
use crate::model::chain::{DiscoveryResolver, DiscoveryTarget, GraphNode};

/// The transparent proxy's passthrough cluster.
pub(crate) const ORIGINAL_DESTINATION: &str = "original-destination";

/// Default upstream connect timeout when the chain sets none.
const DEFAULT_CONNECT_TIMEOUT_NS: i64 = 5_000_000_000;

/// One EDS cluster to be fed, with the target whose instances it gets.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EdsCluster {
    pub(crate) name: String,
    pub(crate) target_id: String,
    pub(crate) only_passing: bool,
}

/// Every cluster of the proxy, and the EDS clusters among them.
pub(crate) fn build(snap: &Snapshot) -> (Vec<Cluster>, Vec<EdsCluster>) {
    let mut clusters = vec![local_app(snap)];
    let mesh_only = snap
        .mesh
        .as_ref()
        .is_some_and(|m| m.transparent_proxy.mesh_destinations_only);
    if snap.transparent.is_some() && !mesh_only {
        // `makePassthroughClusters`: no `original-destination` when the mesh entry says
        // `MeshDestinationsOnly`.
        clusters.push(Cluster {
            name: ORIGINAL_DESTINATION.to_owned(),
            cluster_discovery_type: Some(ClusterDiscoveryType::Type(
                DiscoveryType::OriginalDst as i32,
            )),
            connect_timeout: Some(duration_ns(DEFAULT_CONNECT_TIMEOUT_NS)),
            lb_policy: LbPolicy::ClusterProvided as i32,
            ..Default::default()
        });
    }
    let mut eds = Vec::new();
    for up in &snap.upstreams {
        for node in up.chain.nodes.values() {
            if let Some(resolver) = &node.resolver {
                upstream_clusters(snap, up, node, resolver, &mut clusters, &mut eds);
            }
        }
    }
    clusters.extend(super::jwt_authn::clusters(snap));
    // Chains of different upstreams may share a target: one cluster per name.
    clusters.sort_by(|a, b| a.name.cmp(&b.name));
    clusters.dedup_by(|a, b| a.name == b.name);
    eds.sort_by(|a, b| a.name.cmp(&b.name));
    eds.dedup_by(|a, b| a.name == b.name);
    (clusters, eds)
}

/// The resolvers of a chain, in node-name order.
pub(crate) fn resolvers(up: &Upstream) -> impl Iterator<Item = &DiscoveryResolver> {
    up.chain.nodes.values().filter_map(|n| n.resolver.as_ref())
}

/// The name of the cluster a resolver's traffic goes to (its target's SNI, customized).
pub(crate) fn resolver_cluster(up: &Upstream, resolver: &DiscoveryResolver) -> Option<String> {
    up.chain
        .targets
        .get(&resolver.target)
        .map(|t| cluster_name(&up.chain.customization_hash, t))
}

/// `CustomizeClusterName(target.Name, chain)`: a chain compiled with overrides (the upstream
/// config's `protocol` or `connect_timeout_ms`, a mesh gateway mode) has a customization hash,
/// and its cluster names become `<hash>~<name>`.
fn cluster_name(customization_hash: &str, t: &DiscoveryTarget) -> String {
    let name = if t.name.is_empty() { &t.sni } else { &t.name };
    if customization_hash.is_empty() {
        name.clone()
    } else {
        format!("{customization_hash}~{name}")
    }
}

fn upstream_clusters(
    snap: &Snapshot,
    up: &Upstream,
    node: &GraphNode,
    resolver: &DiscoveryResolver,
    clusters: &mut Vec<Cluster>,
    eds: &mut Vec<EdsCluster>,
) {
    let Some(primary) = up.chain.targets.get(&resolver.target) else {
        return;
    };
    let name = cluster_name(&up.chain.customization_hash, primary);
    let timeout = if resolver.connect_timeout > 0 {
        resolver.connect_timeout
    } else {
        DEFAULT_CONNECT_TIMEOUT_NS
    };
    let http2 = matches!(up.chain.protocol.as_str(), "http2" | "grpc");
    let eds_cluster = |name: &str, target: &DiscoveryTarget| {
        let mut c = eds_cluster(snap, name, target, timeout, http2);
        c.circuit_breakers = Some(cluster_policy::circuit_breakers(up.policy.limits.as_ref()));
        c.outlier_detection = Some(cluster_policy::outlier_detection(
            up.policy.passive_health_check.as_ref(),
        ));
        cluster_policy::inject_lb(node.load_balancer.as_ref(), &mut c);
        if up.query {
            // `makeUpstreamClusterForPreparedQuery` sets no panic threshold and no alt stat name.
            c.common_lb_config = None;
            c.alt_stat_name = String::new();
        }
        c
    };
    let failover: Vec<&String> = resolver
        .failover
        .iter()
        .flat_map(|f| f.targets.iter())
        .collect();
    if failover.is_empty() {
        clusters.push(eds_cluster(&name, primary));
        eds.push(EdsCluster {
            name,
            target_id: resolver.target.clone(),
            only_passing: primary.subset.only_passing,
        });
        return;
    }
    let mut children = Vec::new();
    let ids = std::iter::once(&resolver.target).chain(failover);
    for (i, id) in ids.enumerate() {
        let Some(target) = up.chain.targets.get(id) else {
            continue;
        };
        let child = format!("failover-target~{i}~{name}");
        clusters.push(eds_cluster(&child, target));
        eds.push(EdsCluster {
            name: child.clone(),
            target_id: id.clone(),
            only_passing: target.subset.only_passing,
        });
        children.push(child);
    }
    clusters.push(Cluster {
        name: name.clone(),
        alt_stat_name: name,
        cluster_discovery_type: Some(ClusterDiscoveryType::ClusterType(CustomClusterType {
            name: "envoy.clusters.aggregate".to_owned(),
            typed_config: Some(any(&ClusterConfig { clusters: children })),
        })),
        connect_timeout: Some(duration_ns(timeout)),
        lb_policy: LbPolicy::ClusterProvided as i32,
        ..Default::default()
    });
}

fn eds_cluster(
    snap: &Snapshot,
    name: &str,
    target: &DiscoveryTarget,
    timeout_ns: i64,
    http2: bool,
) -> Cluster {
    let san = format!(
        "spiffe://{}/ns/{}/dc/{}/svc/{}",
        snap.trust_domain,
        non_empty(&target.namespace, "default"),
        non_empty(&target.datacenter, &snap.datacenter),
        target.service
    );
    let mut c = Cluster {
        name: name.to_owned(),
        alt_stat_name: name.to_owned(),
        cluster_discovery_type: Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32)),
        eds_cluster_config: Some(EdsClusterConfig {
            eds_config: Some(tls::ads_source()),
            service_name: String::new(),
        }),
        connect_timeout: Some(duration_ns(timeout_ns)),
        circuit_breakers: Some(CircuitBreakers::default()),
        outlier_detection: Some(OutlierDetection::default()),
        common_lb_config: Some(CommonLbConfig {
            healthy_panic_threshold: Some(Percent { value: 0.0 }),
            ..Default::default()
        }),
        transport_socket: Some(tls::upstream_socket(snap, &[san], &target.sni)),
        ..Default::default()
    };
    if http2 {
        add_http2(&mut c);
    }
    c
}

/// `local_app`: STATIC to the local service (address and port, or its socket path).
fn local_app(snap: &Snapshot) -> Cluster {
    let address = if snap.local_socket.is_empty() {
        endpoints::socket_address(&snap.local_addr, u32::from(snap.local_port))
    } else {
        endpoints::pipe_address(&snap.local_socket, 0)
    };
    let ms = i64::try_from(snap.local_connect_timeout_ms).unwrap_or(5000);
    let mut c = Cluster {
        name: "local_app".to_owned(),
        cluster_discovery_type: Some(ClusterDiscoveryType::Type(DiscoveryType::Static as i32)),
        connect_timeout: Some(duration_ns(ms.saturating_mul(1_000_000))),
        load_assignment: Some(ClusterLoadAssignment {
            cluster_name: "local_app".to_owned(),
            endpoints: vec![endpoints::locality(vec![endpoints::plain(address)])],
            ..Default::default()
        }),
        ..Default::default()
    };
    if matches!(snap.protocol.as_str(), "http2" | "grpc") {
        add_http2(&mut c);
    }
    c
}

/// Explicit HTTP/2 to the upstream (Consul does this for `http2` and `grpc`).
fn add_http2(c: &mut Cluster) {
    let opts = HttpProtocolOptions {
        upstream_protocol_options: Some(
            http_protocol_options::UpstreamProtocolOptions::ExplicitHttpConfig(
                http_protocol_options::ExplicitHttpConfig {
                    protocol_config: Some(
                        http_protocol_options::explicit_http_config::ProtocolConfig::Http2ProtocolOptions(
                            Http2ProtocolOptions::default(),
                        ),
                    ),
                },
            ),
        ),
        ..Default::default()
    };
    c.typed_extension_protocol_options
        .insert(HttpProtocolOptions::full_name(), any(&opts));
}

/// A protobuf `Duration` from nanoseconds.
pub(crate) fn duration_ns(ns: i64) -> Duration {
    Duration {
        seconds: ns / 1_000_000_000,
        nanos: i32::try_from(ns % 1_000_000_000).unwrap_or(0),
    }
}

fn non_empty<'a>(s: &'a str, fallback: &'a str) -> &'a str {
    if s.is_empty() { fallback } else { s }
}
