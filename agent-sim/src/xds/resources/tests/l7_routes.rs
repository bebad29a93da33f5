//! L7 routes as Consul renders them: router destinations (prefix rewrite, timeouts, retry
//! policy, header modifiers), splits (truncated weights, per-cluster header modifiers), a
//! resolver start's request timeout and ring-hash route hash policies; each validated by Envoy.

use envoy_types::pb::envoy::config::cluster::v3::{
    Cluster,
    cluster::{LbConfig, LbPolicy},
};
use envoy_types::pb::envoy::config::core::v3::header_value_option;
use envoy_types::pb::envoy::config::route::v3::route_action;
use envoy_types::pb::google::protobuf::{UInt32Value, UInt64Value};
use serde_json::json;

use super::envoy::validate;
use super::l7::{action, db_instance, entries, only_route, secs, sni};
use super::{build, get, sim};
use crate::state::control::Control;
use crate::xds::types::{self, TlsMode};

/// Router destinations: rewrite, timeouts (a negative one writes `0s`), retries and header
/// modifiers on the route; splits: weights x100 truncated, header modifiers per cluster.
fn route_sim() -> Control {
    let c = sim();
    db_instance(&c, "v1", 21011, &json!({"version": "v1"}), &json!([]));
    db_instance(&c, "v2", 21012, &json!({"version": "v2"}), &json!([]));
    entries(
        &c,
        &[
            json!({"Kind": "proxy-defaults", "Name": "global", "Config": {"protocol": "http"}}),
            json!({"Kind": "service-resolver", "Name": "db", "Subsets": {
                "v1": {"Filter": "Service.Meta.version == v1"},
                "v2": {"Filter": "Service.Meta.version == v2"}
            }}),
            json!({"Kind": "service-splitter", "Name": "db", "Splits": [
                {"Weight": 2.1, "ServiceSubset": "v1",
                 "RequestHeaders": {"Set": {"x-split": "v1"}},
                 "ResponseHeaders": {"Add": {"x-served-by": "v1"}, "Remove": ["x-internal"]}},
                {"Weight": 97.9, "ServiceSubset": "v2"}
            ]}),
            json!({"Kind": "service-router", "Name": "db", "Routes": [
                {"Match": {"HTTP": {"PathPrefix": "/api/"}},
                 "Destination": {"ServiceSubset": "v2", "PrefixRewrite": "/",
                    "RequestTimeout": "5s", "IdleTimeout": "-1s",
                    "NumRetries": 3, "RetryOnConnectFailure": true,
                    "RetryOn": ["reset", "connect-failure"], "RetryOnStatusCodes": [503, 429],
                    "RequestHeaders": {"Add": {"x-a": "1"}, "Set": {"x-s": "2"}, "Remove": ["x-r"]},
                    "ResponseHeaders": {"Set": {"x-resp": "3"}}}},
                {"Match": {"HTTP": {"PathExact": "/retry"}},
                 "Destination": {"RetryOnConnectFailure": true}}
            ]}),
        ],
    );
    c
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn router_destinations_carry_rewrite_timeouts_retries_and_headers() {
    let c = route_sim();
    let r = build(&c, TlsMode::Inline).resources;
    let routes = only_route(&r);
    assert_eq!(routes.len(), 3, "two routes and the catch-all");
    let api = &routes[0];
    let a = action(api);
    assert_eq!(
        a.cluster_specifier,
        Some(route_action::ClusterSpecifier::Cluster(sni(&c, "v2", "db")))
    );
    assert_eq!(a.prefix_rewrite, "/");
    assert_eq!(a.timeout, secs(5));
    assert_eq!(a.idle_timeout, secs(0), "negative disables: 0s");
    let rp = a.retry_policy.as_ref().expect("retry policy");
    assert_eq!(rp.num_retries, Some(UInt32Value { value: 3 }));
    assert_eq!(rp.retry_on, "reset,connect-failure,retriable-status-codes");
    assert_eq!(rp.retriable_status_codes, [503, 429]);
    let hdr = |o: &envoy_types::pb::envoy::config::core::v3::HeaderValueOption| {
        let h = o.header.as_ref().expect("header");
        (h.key.clone(), h.value.clone(), o.append_action)
    };
    let append = header_value_option::HeaderAppendAction::AppendIfExistsOrAdd as i32;
    let overwrite = header_value_option::HeaderAppendAction::OverwriteIfExistsOrAdd as i32;
    let req: Vec<_> = api.request_headers_to_add.iter().map(hdr).collect();
    assert_eq!(
        req,
        [
            ("x-a".into(), "1".into(), append),
            ("x-s".into(), "2".into(), overwrite)
        ]
    );
    assert_eq!(api.request_headers_to_remove, ["x-r"]);
    let resp: Vec<_> = api.response_headers_to_add.iter().map(hdr).collect();
    assert_eq!(resp, [("x-resp".into(), "3".into(), overwrite)]);
    // Only RetryOnConnectFailure: retry_on alone, no retry count.
    let rp = action(&routes[1]).retry_policy.as_ref().expect("retry");
    assert_eq!(rp.retry_on, "connect-failure");
    assert_eq!(rp.num_retries, None);
    assert_eq!(action(&routes[1]).timeout, None);
    validate("router destinations", &r).expect("envoy accepts");
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn splits_become_truncated_weights_with_per_cluster_headers() {
    let c = route_sim();
    let r = build(&c, TlsMode::Inline).resources;
    let routes = only_route(&r);
    let Some(route_action::ClusterSpecifier::WeightedClusters(w)) =
        &action(&routes[2]).cluster_specifier
    else {
        panic!("the catch-all goes to the splitter")
    };
    let weights: Vec<_> = w
        .clusters
        .iter()
        .map(|c| (c.name.clone(), c.weight.map(|w| w.value)))
        .collect();
    // int(float32(2.1) * 100) is 209 in Go: Consul's weights may sum to 9999.
    assert_eq!(
        weights,
        [
            (sni(&c, "v1", "db"), Some(209)),
            (sni(&c, "v2", "db"), Some(9790))
        ]
    );
    let v1 = &w.clusters[0];
    assert_eq!(v1.request_headers_to_add.len(), 1);
    assert_eq!(
        v1.request_headers_to_add[0].header.as_ref().map(|h| &h.key),
        Some(&"x-split".to_owned())
    );
    assert_eq!(v1.response_headers_to_add.len(), 1);
    assert_eq!(v1.response_headers_to_remove, ["x-internal"]);
    assert!(w.clusters[1].request_headers_to_add.is_empty());
    validate("weighted clusters with headers", &r).expect("envoy accepts");
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn a_resolver_start_gets_the_resolver_request_timeout() {
    let c = sim();
    entries(
        &c,
        &[
            json!({"Kind": "service-defaults", "Name": "db", "Protocol": "http"}),
            json!({"Kind": "service-resolver", "Name": "db", "RequestTimeout": "7s"}),
        ],
    );
    let r = build(&c, TlsMode::Inline).resources;
    let routes = only_route(&r);
    assert_eq!(action(&routes[0]).timeout, secs(7));
    validate("resolver request timeout", &r).expect("envoy accepts");
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn ring_hash_sets_the_cluster_policy_and_route_hash_policies() {
    let c = sim();
    entries(
        &c,
        &[
            json!({"Kind": "service-defaults", "Name": "db", "Protocol": "http"}),
            json!({"Kind": "service-resolver", "Name": "db", "LoadBalancer": {
                "Policy": "ring_hash",
                "RingHashConfig": {"MinimumRingSize": 1024, "MaximumRingSize": 8192},
                "HashPolicies": [
                    {"Field": "header", "FieldValue": "x-user"},
                    {"Field": "cookie", "FieldValue": "sess",
                     "CookieConfig": {"TTL": "30s", "Path": "/app"}},
                    {"Field": "cookie", "FieldValue": "s2", "CookieConfig": {"Session": true}},
                    {"Field": "query_parameter", "FieldValue": "id"},
                    {"SourceIP": true, "Terminal": true}
                ]
            }}),
        ],
    );
    let r = build(&c, TlsMode::Inline).resources;
    let cl: Cluster = get(&r, types::CLUSTER, &sni(&c, "", "db"));
    assert_eq!(cl.lb_policy, LbPolicy::RingHash as i32);
    let Some(LbConfig::RingHashLbConfig(rh)) = &cl.lb_config else {
        panic!("ring hash config")
    };
    assert_eq!(rh.minimum_ring_size, Some(UInt64Value { value: 1024 }));
    assert_eq!(rh.maximum_ring_size, Some(UInt64Value { value: 8192 }));
    let routes = only_route(&r);
    let hp = &action(&routes[0]).hash_policy;
    use route_action::hash_policy::PolicySpecifier as P;
    assert_eq!(hp.len(), 5);
    assert!(matches!(&hp[0].policy_specifier, Some(P::Header(h)) if h.header_name == "x-user"));
    assert!(
        matches!(&hp[1].policy_specifier, Some(P::Cookie(k)) if k.name == "sess" && k.path == "/app" && k.ttl == secs(30))
    );
    assert!(matches!(&hp[2].policy_specifier, Some(P::Cookie(k)) if k.ttl == secs(0)));
    assert!(matches!(&hp[3].policy_specifier, Some(P::QueryParameter(q)) if q.name == "id"));
    assert!(matches!(&hp[4].policy_specifier, Some(P::ConnectionProperties(p)) if p.source_ip));
    assert!(hp[4].terminal && !hp[0].terminal);
    validate("ring hash", &r).expect("envoy accepts");
}

/// Transparent mode: an HTTP intention upstream's filter chain on the outbound listener is the
/// HTTP connection manager on RDS, and its route (router matches included) is sent.
#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn a_transparent_http_upstream_gets_rds_on_the_outbound_listener() {
    use envoy_types::pb::envoy::config::listener::v3::Listener;
    use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
        HttpConnectionManager, http_connection_manager::RouteSpecifier,
    };
    let (_, c) = crate::assembly::sim::AgentSim::builder()
        .seed(11)
        .default_intention_policy(crate::state::config::IntentionDefault::Deny)
        .build()
        .expect("sim");
    c.register(&json!({
        "Name": "web", "Port": 8080,
        "Connect": {"SidecarService": {"Port": 21000, "Proxy": {"Mode": "transparent"}}}
    }))
    .expect("web");
    c.register(&json!({"Name": "cache", "Port": 5000}))
        .expect("typical");
    super::proxy(&c, "cache", 21005);
    c.put_intention("web", "cache", &json!({"Action": "allow"}))
        .expect("intention");
    entries(
        &c,
        &[
            json!({"Kind": "service-defaults", "Name": "cache", "Protocol": "http"}),
            json!({"Kind": "service-router", "Name": "cache", "Routes": [
                {"Match": {"HTTP": {"PathPrefix": "/slow"}},
                 "Destination": {"RequestTimeout": "2s"}}
            ]}),
        ],
    );
    let r = build(&c, TlsMode::Inline).resources;
    let l: Listener = get(&r, types::LISTENER, "outbound_listener:127.0.0.1:15001");
    let hcm: HttpConnectionManager = super::decode(super::typed(&l.filter_chains[0].filters[0]));
    assert_eq!(hcm.stat_prefix, "upstream.cache.default.default.dc1");
    assert!(
        matches!(&hcm.route_specifier, Some(RouteSpecifier::Rds(rds)) if rds.route_config_name == "cache")
    );
    let rc: envoy_types::pb::envoy::config::route::v3::RouteConfiguration =
        get(&r, types::ROUTE, "cache");
    let routes = &rc.virtual_hosts[0].routes;
    assert_eq!(routes.len(), 2);
    assert_eq!(action(&routes[0]).timeout, secs(2));
    validate("transparent http upstream", &r).expect("envoy accepts");
}
