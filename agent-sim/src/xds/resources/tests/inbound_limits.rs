//! Inbound limits and local timeouts from service-defaults, rendered as Consul's
//! `makeInboundListener` does (golden `listener-max-inbound-connections`): the
//! `connection_limit` filter after the L4 RBAC filter (or alone before the HTTP connection
//! manager), `exact_balance`, the `local_app` connect timeout and the inline route's timeout;
//! and Envoy accepts them.

use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::listener::v3::listener::connection_balance_config::BalanceType;
use envoy_types::pb::envoy::config::route::v3::route;
use envoy_types::pb::envoy::extensions::filters::network::connection_limit::v3::ConnectionLimit;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, http_connection_manager::RouteSpecifier,
};
use envoy_types::pb::google::protobuf::Duration;
use serde_json::json;

use super::envoy::validate;
use super::{build, decode, get, public, sim, typed};
use crate::xds::types::{self, TlsMode};

fn names(l: &envoy_types::pb::envoy::config::listener::v3::Listener) -> Vec<String> {
    l.filter_chains[0]
        .filters
        .iter()
        .map(|f| f.name.clone())
        .collect()
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn l4_limit_sits_between_rbac_and_tcp_proxy_with_exact_balance_and_connect_timeout() {
    let c = sim();
    c.upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "web",
        "MaxInboundConnections": 222, "LocalConnectTimeoutMs": 250,
        "BalanceInboundConnections": "exact_balance"}))
        .expect("entry");
    let r = build(&c, TlsMode::Inline).resources;
    let l = public(&r);
    assert_eq!(
        names(&l),
        [
            "envoy.filters.network.rbac",
            "envoy.filters.network.connection_limit",
            "envoy.filters.network.tcp_proxy"
        ]
    );
    let limit: ConnectionLimit = decode(typed(&l.filter_chains[0].filters[1]));
    assert_eq!(limit.stat_prefix, "inbound_connection_limit");
    assert_eq!(limit.max_connections.map(|m| m.value), Some(222));
    assert!(
        limit.delay.is_none(),
        "closed at once, as Consul renders it"
    );
    let balance = l.connection_balance_config.expect("balance config");
    assert!(matches!(
        balance.balance_type,
        Some(BalanceType::ExactBalance(_))
    ));
    let app: Cluster = get(&r, types::CLUSTER, "local_app");
    assert_eq!(
        app.connect_timeout,
        Some(Duration {
            seconds: 0,
            nanos: 250_000_000
        })
    );
    validate("l4 inbound limits (inline)", &r).expect("envoy accepts");
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn http_limit_precedes_the_connection_manager_and_the_route_gets_the_request_timeout() {
    let c = sim();
    c.upsert_config_entry(
        &json!({"Kind": "service-defaults", "Name": "web", "Protocol": "http",
        "MaxInboundConnections": 3, "LocalRequestTimeoutMs": 1500,
        "BalanceInboundConnections": "exact_balance"}),
    )
    .expect("entry");
    let r = build(&c, TlsMode::Sds).resources;
    let l = public(&r);
    assert_eq!(
        names(&l),
        [
            "envoy.filters.network.connection_limit",
            "envoy.filters.network.http_connection_manager"
        ]
    );
    let hcm: HttpConnectionManager = decode(typed(&l.filter_chains[0].filters[1]));
    let Some(RouteSpecifier::RouteConfig(rc)) = hcm.route_specifier else {
        panic!("inline route")
    };
    let Some(route::Action::Route(action)) = &rc.virtual_hosts[0].routes[0].action else {
        panic!("route action")
    };
    assert_eq!(
        action.timeout,
        Some(Duration {
            seconds: 1,
            nanos: 500_000_000
        })
    );
    validate("http inbound limits (sds)", &r).expect("envoy accepts");
}

#[test]
fn without_limits_nothing_is_added_and_a_bad_balance_value_is_ignored() {
    let c = sim();
    c.upsert_config_entry(&json!({"Kind": "proxy-defaults", "Name": "global",
        "Config": {"balance_inbound_connections": "round_robin"}}))
        .expect("entry");
    let l = public(&build(&c, TlsMode::Inline).resources);
    assert_eq!(
        names(&l),
        [
            "envoy.filters.network.rbac",
            "envoy.filters.network.tcp_proxy"
        ]
    );
    assert!(l.connection_balance_config.is_none());
}
