//! The `mesh` entry in xDS as Consul renders it: `setNormalizationOptions` on the inbound HCM
//! (golden `connect-proxy-with-mesh-config-request-normalization-all-*`), `tls_params` from
//! `TLS.Incoming` on the public listener and `TLS.Outgoing` on upstream clusters, XFCC
//! sanitized or appended, `MeshDestinationsOnly` dropping the passthrough, and the permissive
//! mTLS filter chain (transparent mode only). Each shape is put before `envoy --mode validate`.

use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::core::v3::transport_socket;
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
use envoy_types::pb::envoy::extensions::filters::network::tcp_proxy::v3::{TcpProxy, tcp_proxy};
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    DownstreamTlsContext, TlsParameters,
};
use envoy_types::pb::google::protobuf::BoolValue;
use serde_json::{Value, json};

use super::envoy::validate;
use super::{build, db_sni, decode, get, public, sim, typed, upstream_tls};
use crate::state::control::Control;
use crate::xds::types::{self, TlsMode};

fn hcm(c: &Control, mode: TlsMode) -> HttpConnectionManager {
    let l = public(&build(c, mode).resources);
    decode(typed(&l.filter_chains[0].filters[0]))
}

fn http_web(c: &Control, mesh: &Value) {
    c.upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "web", "Protocol": "http"}))
        .expect("service-defaults");
    c.upsert_config_entry(mesh).expect("mesh entry");
}

fn downstream_params(l: &Listener) -> TlsParameters {
    let Some(transport_socket::ConfigType::TypedConfig(any)) = &l.filter_chains[0]
        .transport_socket
        .as_ref()
        .expect("tls")
        .config_type
    else {
        panic!("typed tls")
    };
    let ctx: DownstreamTlsContext = decode(any);
    ctx.common_tls_context
        .and_then(|c| c.tls_params)
        .expect("tls_params")
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn request_normalization_follows_the_mesh_entry() {
    let c = sim();
    http_web(
        &c,
        &json!({"Kind": "mesh", "HTTP": {"Incoming": {"RequestNormalization": {
            "MergeSlashes": true, "PathWithEscapedSlashesAction": "UNESCAPE_AND_FORWARD",
            "HeadersWithUnderscoresAction": "REJECT_REQUEST"}}}}),
    );
    // all-envoy-options-enabled golden: normalize_path, merge_slashes, UNESCAPE_AND_FORWARD (4),
    // common_http_protocol_options.headers_with_underscores_action REJECT_REQUEST (1).
    let h = hcm(&c, TlsMode::Inline);
    assert_eq!(h.normalize_path, Some(BoolValue { value: true }));
    assert!(h.merge_slashes);
    assert_eq!(h.path_with_escaped_slashes_action, 4);
    let opts = h.common_http_protocol_options.expect("underscores");
    assert_eq!(opts.headers_with_underscores_action, 1);
    validate("mesh normalization", &build(&c, TlsMode::Inline).resources).expect("envoy accepts");

    // all-consul-options: InsecureDisablePathNormalization leaves normalize_path unset.
    c.upsert_config_entry(&json!({"Kind": "mesh", "HTTP": {"Incoming": {"RequestNormalization": {
        "InsecureDisablePathNormalization": true, "HeadersWithUnderscoresAction": "DROP_HEADER"}}}}))
        .expect("mesh");
    let h = hcm(&c, TlsMode::Inline);
    assert_eq!(h.normalize_path, None);
    assert!(!h.merge_slashes);
    assert_eq!(h.path_with_escaped_slashes_action, 0);
    assert_eq!(
        h.common_http_protocol_options
            .expect("underscores")
            .headers_with_underscores_action,
        2
    );
    // ALLOW is Envoy's default: no common options at all.
    c.upsert_config_entry(
        &json!({"Kind": "mesh", "HTTP": {"Incoming": {"RequestNormalization": {
        "HeadersWithUnderscoresAction": "ALLOW"}}}}),
    )
    .expect("mesh");
    assert!(
        hcm(&c, TlsMode::Inline)
            .common_http_protocol_options
            .is_none()
    );
}

#[test]
fn sanitize_xfcc_drops_forwarding_and_grpc_never_forwards() {
    let c = sim();
    http_web(
        &c,
        &json!({"Kind": "mesh", "HTTP": {"SanitizeXForwardedClientCert": true}}),
    );
    let h = hcm(&c, TlsMode::Inline);
    assert_eq!(h.forward_client_cert_details, 0, "SANITIZE");
    assert!(h.set_current_client_cert_details.is_none());
    c.upsert_config_entry(&json!({"Kind": "mesh"}))
        .expect("mesh");
    let h = hcm(&c, TlsMode::Inline);
    assert_eq!(h.forward_client_cert_details, 2, "APPEND_FORWARD");
    assert!(h.set_current_client_cert_details.is_some());
    // `includeXFCC && notGRPC`.
    c.upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "web", "Protocol": "grpc"}))
        .expect("grpc");
    let h = hcm(&c, TlsMode::Inline);
    assert_eq!(h.forward_client_cert_details, 0);
    assert!(h.set_current_client_cert_details.is_none());
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn tls_params_come_from_each_direction() {
    let c = sim();
    let mesh = json!({"Kind": "mesh", "TLS": {
        "Incoming": {"TLSMinVersion": "TLSv1_3"},
        "Outgoing": {"TLSMinVersion": "TLSv1_2", "TLSMaxVersion": "TLSv1_2",
                     "CipherSuites": ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                                      "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"]}}});
    c.upsert_config_entry(&mesh).expect("mesh");
    for mode in [TlsMode::Inline, TlsMode::Sds] {
        let r = build(&c, mode).resources;
        let p = downstream_params(&public(&r));
        assert_eq!(p.tls_minimum_protocol_version, 4, "TLSv1_3 ({mode:?})");
        assert_eq!(p.tls_maximum_protocol_version, 0);
        assert!(p.cipher_suites.is_empty());
        let cluster: Cluster = get(&r, types::CLUSTER, &db_sni(&c));
        let up = upstream_tls(&cluster)
            .common_tls_context
            .and_then(|c| c.tls_params)
            .expect("params");
        assert_eq!(up.tls_minimum_protocol_version, 3);
        assert_eq!(up.tls_maximum_protocol_version, 3);
        assert_eq!(
            up.cipher_suites,
            [
                "ECDHE-ECDSA-AES256-GCM-SHA384",
                "ECDHE-ECDSA-CHACHA20-POLY1305"
            ]
        );
        validate("mesh tls params", &r).expect("envoy accepts");
    }
}

fn transparent_web(c: &Control) {
    c.register(&json!({
        "Name": "tweb", "Port": 8080,
        "Connect": {"SidecarService": {"Port": 21010, "Proxy": {
            "Mode": "transparent", "LocalServicePort": 8080}}}
    }))
    .expect("tweb");
}

fn build_tweb(c: &Control) -> types::Resources {
    crate::xds::resources::for_proxy(
        &c.store,
        "tweb-sidecar-proxy",
        &types::XdsConfig {
            tls_mode: TlsMode::Inline,
            ..Default::default()
        },
    )
    .expect("builds")
    .expect("exists")
    .resources
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn mesh_destinations_only_drops_the_passthrough() {
    let c = sim();
    transparent_web(&c);
    let r = build_tweb(&c);
    let l: Listener = get(&r, types::LISTENER, "outbound_listener:127.0.0.1:15001");
    assert!(l.default_filter_chain.is_some());
    assert!(r.get(types::CLUSTER, "original-destination").is_some());
    c.upsert_config_entry(
        &json!({"Kind": "mesh", "TransparentProxy": {"MeshDestinationsOnly": true}}),
    )
    .expect("mesh");
    let r = build_tweb(&c);
    assert!(r.get(types::CLUSTER, "original-destination").is_none());
    // Default deny and no upstreams: no chain left, so no outbound listener at all.
    if let Some(l) = r.get(types::LISTENER, "outbound_listener:127.0.0.1:15001") {
        let l: Listener = decode(&l.any);
        assert!(l.default_filter_chain.is_none());
        assert!(!l.filter_chains.is_empty());
    }
    validate("mesh destinations only", &r).expect("envoy accepts");
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn permissive_chain_only_with_tproxy_and_the_mode() {
    let c = sim();
    transparent_web(&c);
    c.upsert_config_entry(&json!({"Kind": "mesh", "AllowEnablingPermissiveMutualTLS": true}))
        .expect("mesh");
    let public_of = |r: &types::Resources| -> Listener {
        let l = r
            .of(types::LISTENER)
            .find(|l| l.name.starts_with("public_listener:"))
            .expect("public");
        decode(&l.any)
    };
    assert_eq!(public_of(&build_tweb(&c)).filter_chains.len(), 1);
    for svc in ["tweb", "web"] {
        c.upsert_config_entry(
            &json!({"Kind": "service-defaults", "Name": svc, "MutualTLSMode": "permissive"}),
        )
        .expect("permissive allowed");
    }
    // Explicit-mode web: never a plaintext chain (golden without-tproxy-and-permissive-mtls).
    assert_eq!(
        public(&build(&c, TlsMode::Inline).resources)
            .filter_chains
            .len(),
        1
    );
    let r = build_tweb(&c);
    let l = public_of(&r);
    assert_eq!(l.filter_chains.len(), 2);
    assert_eq!(l.use_original_dst, Some(BoolValue { value: true }));
    let chain = &l.filter_chains[1];
    assert!(chain.transport_socket.is_none(), "plaintext");
    let m = chain.filter_chain_match.as_ref().expect("match");
    assert_eq!(m.destination_port.as_ref().map(|p| p.value), Some(8080));
    let tp: TcpProxy = decode(typed(&chain.filters[0]));
    assert_eq!(tp.stat_prefix, "permissive_public_listener");
    assert_eq!(
        tp.cluster_specifier,
        Some(tcp_proxy::ClusterSpecifier::Cluster("local_app".into()))
    );
    validate("permissive mtls", &r).expect("envoy accepts");
}
