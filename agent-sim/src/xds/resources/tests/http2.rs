//! HTTP/2 and gRPC shapes, as Consul's `listeners.go` / `clusters.go` build them (goldens
//! `listeners/connect-proxy-with-http2-chain`, `clusters/connect-proxy-with-chain-http2`,
//! `listeners/connect-proxy-with-grpc-chain`): the public listener's HCM with HTTP/2 options
//! and ALPN `h2`, `http/1.1`; `local_app` and upstream clusters with explicit HTTP/2; an
//! upstream listener's HCM with HTTP/2 options; and Envoy accepts them in both TLS modes.

use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::core::v3::transport_socket;
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext;
use envoy_types::pb::envoy::extensions::upstreams::http::v3::{
    HttpProtocolOptions, http_protocol_options,
};
use serde_json::json;

use super::envoy::validate;
use super::{build, db_sni, decode, get, public, sim, typed};
use crate::xds::types::{self, TlsMode};

const OPTIONS: &str = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";

/// Whether the cluster speaks HTTP/2 by explicit configuration.
fn explicit_http2(c: &Cluster) -> bool {
    let Some(a) = c.typed_extension_protocol_options.get(OPTIONS) else {
        return false;
    };
    let o: HttpProtocolOptions = decode(a);
    matches!(
        o.upstream_protocol_options,
        Some(http_protocol_options::UpstreamProtocolOptions::ExplicitHttpConfig(
            http_protocol_options::ExplicitHttpConfig {
                protocol_config: Some(
                    http_protocol_options::explicit_http_config::ProtocolConfig::Http2ProtocolOptions(_)
                )
            }
        ))
    )
}

fn alpn(l: &Listener) -> Vec<String> {
    let ts = l.filter_chains[0].transport_socket.as_ref().expect("tls");
    let Some(transport_socket::ConfigType::TypedConfig(a)) = &ts.config_type else {
        panic!("typed tls")
    };
    let ctx: DownstreamTlsContext = decode(a);
    ctx.common_tls_context.expect("common").alpn_protocols
}

/// A sim where web speaks HTTP/2 and its upstream db gRPC.
fn http2_sim() -> crate::state::control::Control {
    let c = sim();
    for (name, protocol) in [("web", "http2"), ("db", "grpc")] {
        c.upsert_config_entry(
            &json!({"Kind": "service-defaults", "Name": name, "Protocol": protocol}),
        )
        .expect("entry");
    }
    c
}

#[test]
fn http2_destination_and_grpc_upstream() {
    let c = http2_sim();
    for mode in [TlsMode::Inline, TlsMode::Sds] {
        let r = build(&c, mode).resources;
        let l = public(&r);
        assert_eq!(alpn(&l), ["h2", "http/1.1"], "{mode:?}");
        let hcm: HttpConnectionManager = decode(typed(&l.filter_chains[0].filters[0]));
        assert!(hcm.http2_protocol_options.is_some());
        let names: Vec<_> = hcm.http_filters.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["envoy.filters.http.rbac", "envoy.filters.http.router"],
            "no gRPC filters for http2"
        );
        let local: Cluster = get(&r, types::CLUSTER, "local_app");
        assert!(explicit_http2(&local), "local_app speaks HTTP/2");

        let up: Listener = get(&r, types::LISTENER, "db:127.0.0.1:9191");
        let f = &up.filter_chains[0].filters[0];
        assert_eq!(f.name, "envoy.filters.network.http_connection_manager");
        let hcm: HttpConnectionManager = decode(typed(f));
        assert!(hcm.http2_protocol_options.is_some(), "grpc upstream HCM");
        let cl: Cluster = get(&r, types::CLUSTER, &db_sni(&c));
        assert!(explicit_http2(&cl), "grpc upstream cluster");
    }
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn envoy_accepts_http2_destination_and_grpc_upstream() {
    let c = http2_sim();
    for mode in [TlsMode::Inline, TlsMode::Sds] {
        let r = build(&c, mode).resources;
        validate(&format!("http2 + grpc upstream ({})", mode.as_str()), &r).expect("envoy accepts");
    }
}

#[test]
fn http_destination_stays_http1() {
    let c = sim();
    c.upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "web", "Protocol": "http"}))
        .expect("entry");
    let r = build(&c, TlsMode::Inline).resources;
    let l = public(&r);
    assert_eq!(alpn(&l), ["http/1.1"]);
    let hcm: HttpConnectionManager = decode(typed(&l.filter_chains[0].filters[0]));
    assert!(hcm.http2_protocol_options.is_none());
    assert!(!explicit_http2(&get(&r, types::CLUSTER, "local_app")));
    assert!(!explicit_http2(&get(&r, types::CLUSTER, &db_sni(&c))));
}
