//! Prepared-query upstreams rendered as Consul's golden files show them
//! (`listeners/connect-proxy-with-tcp-and-...`: `prepared_query:geo-cache:127.10.10.10:8181`,
//! cluster `geo-cache.default.dc1.query.<trust domain>`), fed with the query's execution, and
//! accepted by `envoy --mode validate`.

use super::envoy::validate;
use super::*;

fn sim_with_query() -> Control {
    let (_, c) = crate::assembly::sim::AgentSim::builder()
        .seed(7)
        .build()
        .expect("sim builds");
    c.register(&json!({
        "Name": "web", "Port": 8080,
        "Connect": {"SidecarService": {"Port": 21000, "Proxy": {
            "Upstreams": [{"DestinationType": "prepared_query", "DestinationName": "geo-cache",
                           "LocalBindPort": 8181, "LocalBindAddress": "127.10.10.10"}]
        }}}
    }))
    .expect("web registers");
    proxy(&c, "cache", 21001);
    c.create_prepared_query(&json!({"Name": "geo-cache", "Service": {"Service": "cache"}}))
        .expect("query created");
    c
}

#[test]
fn prepared_query_upstream_is_a_query_sni_cluster_and_listener() {
    let c = sim_with_query();
    let r = build(&c, TlsMode::Inline).resources;
    let sni = format!("geo-cache.default.dc1.query.{}", c.trust_domain());
    let cluster: Cluster = get(&r, types::CLUSTER, &sni);
    assert!(
        cluster.common_lb_config.is_none(),
        "no panic threshold for queries"
    );
    assert_eq!(cluster.alt_stat_name, "");
    let tls: UpstreamTlsContext = decode(
        match cluster
            .transport_socket
            .as_ref()
            .unwrap()
            .config_type
            .as_ref()
            .unwrap()
        {
            envoy_types::pb::envoy::config::core::v3::transport_socket::ConfigType::TypedConfig(
                a,
            ) => a,
        },
    );
    assert_eq!(tls.sni, sni);
    let text = format!("{tls:?}");
    assert!(
        text.contains(&format!(
            "spiffe://{}/ns/default/dc/dc1/svc/cache",
            c.trust_domain()
        )),
        "SAN of the instances' destination service: {text}"
    );
    let l: Listener = get(
        &r,
        types::LISTENER,
        "prepared_query:geo-cache:127.10.10.10:8181",
    );
    let tp: TcpProxy = decode(typed(&l.filter_chains[0].filters[0]));
    assert_eq!(tp.stat_prefix, "upstream.prepared_query_geo-cache");
    assert_eq!(
        tp.cluster_specifier,
        Some(ClusterSpecifier::Cluster(sni.clone()))
    );
    let cla: ClusterLoadAssignment = get(&r, types::ENDPOINT, &sni);
    assert_eq!(
        cla.endpoints[0].lb_endpoints.len(),
        1,
        "the query's one sidecar"
    );
    // The query follows health: a critical instance leaves the result.
    c.set_check(CheckUpdate {
        node: None,
        check_id: "cache-check".into(),
        status: "critical".into(),
        output: None,
    })
    .unwrap();
    let r = build(&c, TlsMode::Inline).resources;
    let cla: ClusterLoadAssignment = get(&r, types::ENDPOINT, &sni);
    assert!(cla.endpoints[0].lb_endpoints.is_empty());
}

#[test]
fn envoy_accepts_a_prepared_query_upstream() {
    let c = sim_with_query();
    for mode in [TlsMode::Inline, TlsMode::Sds] {
        let r = build(&c, mode).resources;
        validate(&format!("prepared query upstream ({})", mode.as_str()), &r)
            .expect("envoy accepts");
    }
}
