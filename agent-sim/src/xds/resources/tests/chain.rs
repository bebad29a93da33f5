//! Discovery-chain shapes: a resolver redirect, a failover aggregate and an HTTP upstream's
//! RDS route.

use envoy_types::pb::envoy::config::cluster::v3::{Cluster, cluster::ClusterDiscoveryType};
use envoy_types::pb::envoy::config::endpoint::v3::ClusterLoadAssignment;
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use envoy_types::pb::envoy::extensions::clusters::aggregate::v3::ClusterConfig;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, http_connection_manager::RouteSpecifier,
};
use envoy_types::pb::envoy::extensions::filters::network::tcp_proxy::v3::{
    TcpProxy, tcp_proxy::ClusterSpecifier,
};
use serde_json::json;

use super::{build, db_sni, decode, get, proxy, sim, typed, upstream_tls};
use crate::xds::types::{self, TlsMode};

#[test]
fn resolver_redirect_points_the_listener_at_the_redirect_target() {
    let c = sim();
    proxy(&c, "db-v2", 21002);
    c.upsert_config_entry(
        &json!({"Kind": "service-resolver", "Name": "db", "Redirect": {"Service": "db-v2"}}),
    )
    .expect("entry");
    let r = build(&c, TlsMode::Inline).resources;
    let v2 = format!("db-v2.default.dc1.internal.{}", c.trust_domain());
    let l: Listener = get(&r, types::LISTENER, "db:127.0.0.1:9191");
    let tp: TcpProxy = decode(typed(&l.filter_chains[0].filters[0]));
    assert_eq!(
        tp.cluster_specifier,
        Some(ClusterSpecifier::Cluster(v2.clone()))
    );
    let _: Cluster = get(&r, types::CLUSTER, &v2);
    let cla: ClusterLoadAssignment = get(&r, types::ENDPOINT, &v2);
    assert_eq!(cla.endpoints[0].lb_endpoints.len(), 1);
    assert!(r.get(types::CLUSTER, &db_sni(&c)).is_none());
}

#[test]
fn resolver_failover_builds_an_aggregate_over_failover_targets() {
    let c = sim();
    proxy(&c, "db-backup", 21003);
    c.upsert_config_entry(&json!({
        "Kind": "service-resolver", "Name": "db",
        "Failover": {"*": {"Service": "db-backup"}}
    }))
    .expect("entry");
    let r = build(&c, TlsMode::Inline).resources;
    let sni = db_sni(&c);
    let agg: Cluster = get(&r, types::CLUSTER, &sni);
    let Some(ClusterDiscoveryType::ClusterType(ct)) = agg.cluster_discovery_type else {
        panic!("aggregate")
    };
    assert_eq!(ct.name, "envoy.clusters.aggregate");
    let cfg: ClusterConfig = decode(&ct.typed_config.expect("config"));
    let children = [
        format!("failover-target~0~{sni}"),
        format!("failover-target~1~{sni}"),
    ];
    assert_eq!(cfg.clusters, children);
    for child in &children {
        let _: Cluster = get(&r, types::CLUSTER, child);
        let _: ClusterLoadAssignment = get(&r, types::ENDPOINT, child);
    }
    let backup: Cluster = get(&r, types::CLUSTER, &children[1]);
    assert_eq!(
        upstream_tls(&backup).sni,
        format!("db-backup.default.dc1.internal.{}", c.trust_domain())
    );
}

#[test]
fn http_upstream_uses_rds_named_after_the_upstream() {
    let c = sim();
    c.upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "db", "Protocol": "http"}))
        .expect("entry");
    let r = build(&c, TlsMode::Inline).resources;
    let l: Listener = get(&r, types::LISTENER, "db:127.0.0.1:9191");
    let hcm: HttpConnectionManager = decode(typed(&l.filter_chains[0].filters[0]));
    assert!(
        matches!(hcm.route_specifier, Some(RouteSpecifier::Rds(ref rds)) if rds.route_config_name == "db")
    );
    let rc: RouteConfiguration = get(&r, types::ROUTE, "db");
    assert!(format!("{rc:?}").contains(&db_sni(&c)));
}
