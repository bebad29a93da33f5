//! Shape and naming tests of the built resources (decoded back from their `Any`), and the
//! fixture the RBAC property test and the Envoy validation test share.

mod bench_tls;
mod chain;
mod envoy;
mod http2;
mod inbound_limits;
mod jwt;
mod l7;
mod l7_prop;
mod l7_routes;
mod mesh;
mod query;
mod rbac_prop;

use envoy_types::pb::envoy::config::cluster::v3::{Cluster, cluster::ClusterDiscoveryType};
use envoy_types::pb::envoy::config::core::v3::HealthStatus;
use envoy_types::pb::envoy::config::endpoint::v3::{ClusterLoadAssignment, lb_endpoint};
use envoy_types::pb::envoy::config::listener::v3::{Filter, Listener, filter};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, http_connection_manager::RouteSpecifier,
};
use envoy_types::pb::envoy::extensions::filters::network::rbac::v3::Rbac as NetworkRbac;
use envoy_types::pb::envoy::extensions::filters::network::tcp_proxy::v3::{
    TcpProxy, tcp_proxy::ClusterSpecifier,
};
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    DownstreamTlsContext, Secret, UpstreamTlsContext, common_tls_context::ValidationContextType,
    secret,
};
use envoy_types::pb::google::protobuf::{Any, BoolValue};
use prost::Message;
use serde_json::json;

use super::{BuildError, ProxyResources, for_proxy};
use crate::state::control::Control;
use crate::state::store::CheckUpdate;
use crate::xds::types::{self, Resources, TlsMode, XdsConfig};

/// A sim with `web` (sidecar `web-sidecar-proxy` on 21000, upstream `db` on 127.0.0.1:9191)
/// and a `db` sidecar (`db-proxy` on 21001, TTL check `db-check`, passing).
pub(super) fn sim() -> Control {
    sim_from(crate::assembly::sim::AgentSim::builder().seed(7))
}

/// [`sim`] from a configured builder.
pub(super) fn sim_from(b: crate::assembly::sim::Builder) -> Control {
    let (_, c) = b.build().expect("sim builds");
    c.register(&json!({
        "Name": "web", "Port": 8080,
        "Connect": {"SidecarService": {"Port": 21000, "Proxy": {
            "Upstreams": [{"DestinationName": "db", "LocalBindPort": 9191}]
        }}}
    }))
    .expect("web registers");
    proxy(&c, "db", 21001);
    c
}

/// Registers `<svc>-proxy` for `svc` on `port` with a passing TTL check `<svc>-check`.
pub(super) fn proxy(c: &Control, svc: &str, port: u16) {
    c.register(&json!({
        "Kind": "connect-proxy", "ID": format!("{svc}-proxy"), "Name": format!("{svc}-proxy"),
        "Port": port,
        "Proxy": {"DestinationServiceName": svc, "LocalServicePort": 5000},
        "Check": {"CheckID": format!("{svc}-check"), "TTL": "1h", "Status": "passing"}
    }))
    .expect("proxy registers");
}

pub(super) fn build(c: &Control, mode: TlsMode) -> ProxyResources {
    for_proxy(
        &c.store,
        "web-sidecar-proxy",
        &XdsConfig {
            tls_mode: mode,
            ..Default::default()
        },
    )
    .expect("builds")
    .expect("proxy exists")
}

pub(super) fn decode<M: Message + Default>(any: &Any) -> M {
    M::decode(any.value.as_slice()).expect("decodes")
}

pub(super) fn get<M: Message + Default>(r: &Resources, type_url: &str, name: &str) -> M {
    let found = r.get(type_url, name);
    let names: Vec<_> = r.of(type_url).map(|x| x.name.clone()).collect();
    decode(
        &found
            .unwrap_or_else(|| panic!("{name} missing; have {names:?}"))
            .any,
    )
}

pub(super) fn typed(f: &Filter) -> &Any {
    match &f.config_type {
        Some(filter::ConfigType::TypedConfig(a)) => a,
        other => panic!("no typed config: {other:?}"),
    }
}

pub(super) fn public(r: &Resources) -> Listener {
    let l = r
        .of(types::LISTENER)
        .find(|l| l.name.starts_with("public_listener:"))
        .expect("public listener");
    decode(&l.any)
}

pub(super) fn db_sni(c: &Control) -> String {
    format!("db.default.dc1.internal.{}", c.trust_domain())
}

#[test]
fn l4_public_listener_is_rbac_then_tcp_proxy_over_mtls() {
    let c = sim();
    let r = build(&c, TlsMode::Inline).resources;
    let l = public(&r);
    assert_eq!(l.name, "public_listener:0.0.0.0:21000");
    assert_eq!(l.traffic_direction, 1, "INBOUND");
    let chain = &l.filter_chains[0];
    let names: Vec<_> = chain.filters.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "envoy.filters.network.rbac",
            "envoy.filters.network.tcp_proxy"
        ]
    );
    let rbac: NetworkRbac = decode(typed(&chain.filters[0]));
    assert_eq!(rbac.stat_prefix, "connect_authz");
    let rules = rbac.rules.expect("rules present");
    assert!(rules.policies.is_empty(), "default allow, no intentions");
    assert_eq!(rules.action, 1, "DENY list under default allow");
    let tp: TcpProxy = decode(typed(&chain.filters[1]));
    assert_eq!(tp.stat_prefix, "public_listener");
    assert_eq!(
        tp.cluster_specifier,
        Some(ClusterSpecifier::Cluster("local_app".into()))
    );
    let ts = chain.transport_socket.as_ref().expect("tls");
    assert_eq!(ts.name, "tls");
    let Some(envoy_types::pb::envoy::config::core::v3::transport_socket::ConfigType::TypedConfig(
        a,
    )) = &ts.config_type
    else {
        panic!("no tls config")
    };
    let tls: DownstreamTlsContext = decode(a);
    assert_eq!(tls.require_client_certificate.map(|b| b.value), Some(true));
    let common = tls.common_tls_context.expect("common");
    assert!(common.alpn_protocols.is_empty());
    let leaf = c
        .store
        .read(|st| st.leaves.get("web").map(|e| e.leaf.cert_pem.clone()));
    let chain_pem = common.tls_certificates[0]
        .certificate_chain
        .as_ref()
        .and_then(|d| d.specifier.clone());
    assert_eq!(
        chain_pem,
        leaf.map(|p| {
            envoy_types::pb::envoy::config::core::v3::data_source::Specifier::InlineString(
                if p.ends_with('\n') {
                    p
                } else {
                    format!("{p}\n")
                },
            )
        })
    );
}

#[test]
fn http_protocol_from_service_defaults_gives_hcm_with_rbac_router_and_xfcc() {
    let c = sim();
    c.upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "web", "Protocol": "http"}))
        .expect("entry");
    let l = public(&build(&c, TlsMode::Inline).resources);
    let f = &l.filter_chains[0].filters;
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].name, "envoy.filters.network.http_connection_manager");
    let hcm: HttpConnectionManager = decode(typed(&f[0]));
    assert_eq!(hcm.stat_prefix, "public_listener");
    let names: Vec<_> = hcm.http_filters.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["envoy.filters.http.rbac", "envoy.filters.http.router"]
    );
    assert_eq!(hcm.forward_client_cert_details, 2, "APPEND_FORWARD");
    // Consul 1.20.1+ (`setNormalizationOptions`, no mesh entry): normalize_path on, nothing
    // else set (merge_slashes off, escaped slashes and underscores at Envoy's defaults).
    assert_eq!(hcm.normalize_path, Some(BoolValue { value: true }));
    assert!(!hcm.merge_slashes);
    assert_eq!(hcm.path_with_escaped_slashes_action, 0);
    assert!(hcm.common_http_protocol_options.is_none());
    let x = hcm.set_current_client_cert_details.expect("xfcc");
    assert!(x.subject.is_some_and(|b| b.value) && x.cert && x.chain && x.dns && x.uri);
    let Some(RouteSpecifier::RouteConfig(rc)) = hcm.route_specifier else {
        panic!("inline route")
    };
    assert_eq!(rc.name, "public_listener");
    assert_eq!(rc.virtual_hosts[0].domains, ["*"]);
}

#[test]
fn upstream_listener_and_cluster_are_named_by_id_and_sni() {
    let c = sim();
    let r = build(&c, TlsMode::Inline).resources;
    let l: Listener = get(&r, types::LISTENER, "db:127.0.0.1:9191");
    assert_eq!(l.traffic_direction, 2, "OUTBOUND");
    let tp: TcpProxy = decode(typed(&l.filter_chains[0].filters[0]));
    assert_eq!(tp.stat_prefix, "upstream.db.default.default.dc1");
    assert_eq!(
        tp.cluster_specifier,
        Some(ClusterSpecifier::Cluster(db_sni(&c)))
    );
    let cl: Cluster = get(&r, types::CLUSTER, &db_sni(&c));
    assert_eq!(cl.alt_stat_name, db_sni(&c));
    assert_eq!(
        cl.cluster_discovery_type,
        Some(ClusterDiscoveryType::Type(3)),
        "EDS"
    );
    assert!(cl.circuit_breakers.is_some() && cl.outlier_detection.is_some());
    let tls = upstream_tls(&cl);
    assert_eq!(tls.sni, db_sni(&c));
    let Some(ValidationContextType::ValidationContext(v)) = tls
        .common_tls_context
        .and_then(|c| c.validation_context_type)
    else {
        panic!("validation context")
    };
    #[allow(deprecated)]
    let san = format!("{:?}", v.match_subject_alt_names);
    assert!(
        san.contains(&format!(
            "spiffe://{}/ns/default/dc/dc1/svc/db",
            c.trust_domain()
        )),
        "{san}"
    );
    let local: Cluster = get(&r, types::CLUSTER, "local_app");
    assert_eq!(local.connect_timeout.map(|d| d.seconds), Some(5));
    assert!(local.load_assignment.is_some());
}

pub(super) fn upstream_tls(c: &Cluster) -> UpstreamTlsContext {
    match c
        .transport_socket
        .as_ref()
        .and_then(|t| t.config_type.as_ref())
    {
        Some(
            envoy_types::pb::envoy::config::core::v3::transport_socket::ConfigType::TypedConfig(a),
        ) => decode(a),
        other => panic!("no tls: {other:?}"),
    }
}

fn db_endpoint(c: &Control) -> (i32, Option<u32>) {
    let r = build(c, TlsMode::Inline).resources;
    let cla: ClusterLoadAssignment = get(&r, types::ENDPOINT, &db_sni(c));
    let lb = &cla.endpoints[0].lb_endpoints;
    assert_eq!(lb.len(), 1);
    let Some(lb_endpoint::HostIdentifier::Endpoint(ep)) = &lb[0].host_identifier else {
        panic!("endpoint")
    };
    assert!(format!("{:?}", ep.address).contains("21001"));
    (
        lb[0].health_status,
        lb[0].load_balancing_weight.map(|w| w.value),
    )
}

fn set(c: &Control, check: &str, status: &str) {
    c.set_check(CheckUpdate {
        node: None,
        check_id: check.into(),
        status: status.into(),
        output: None,
    })
    .expect("check");
}

#[test]
fn endpoint_health_follows_consul_calculate_endpoint_health_and_weight() {
    let c = sim();
    assert_eq!(db_endpoint(&c), (HealthStatus::Healthy as i32, Some(1)));
    set(&c, "db-check", "warning");
    assert_eq!(db_endpoint(&c), (HealthStatus::Healthy as i32, Some(1)));
    set(&c, "db-check", "critical");
    assert_eq!(db_endpoint(&c), (HealthStatus::Unhealthy as i32, Some(1)));
}

#[test]
fn sds_mode_sends_secrets_and_keeps_certs_out_of_the_listener() {
    let c = sim();
    let r = build(&c, TlsMode::Sds).resources;
    let leaf: Secret = get(&r, types::SECRET, "connect-leaf");
    assert!(matches!(leaf.r#type, Some(secret::Type::TlsCertificate(_))));
    let root: Secret = get(&r, types::SECRET, "connect-root");
    assert!(matches!(
        root.r#type,
        Some(secret::Type::ValidationContext(_))
    ));
    let bytes = &r
        .of(types::LISTENER)
        .find(|l| l.name.starts_with("public_listener:"))
        .expect("listener")
        .any
        .value;
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !text.contains("BEGIN CERTIFICATE"),
        "no inline cert in SDS mode"
    );
    assert!(text.contains("connect-leaf") && text.contains("connect-root"));
    assert_eq!(
        build(&c, TlsMode::Inline)
            .resources
            .of(types::SECRET)
            .count(),
        0
    );
}

#[test]
fn identical_state_gives_identical_bytes_and_a_refresh_point() {
    let c = sim();
    for (src, action) in [("a", "allow"), ("b", "deny"), ("*", "allow")] {
        c.put_intention(src, "web", &json!({"Action": action}))
            .expect("intention");
    }
    let one = build(&c, TlsMode::Inline);
    let two = build(&c, TlsMode::Inline);
    assert_eq!(one.resources, two.resources);
    let leaf_end = c
        .store
        .read(|st| st.leaves.get("web").map(|e| e.leaf.valid_before));
    assert!(one.refresh_at.is_some() && one.refresh_at < leaf_end);
    let rules = decode::<NetworkRbac>(typed(&public(&one.resources).filter_chains[0].filters[0]))
        .rules
        .expect("rules");
    assert_eq!(rules.policies.len(), 1, "{rules:?}");
}

#[test]
fn unknown_and_non_proxy_services() {
    let c = sim();
    let cfg = XdsConfig::default();
    assert_eq!(for_proxy(&c.store, "nope", &cfg), Ok(None));
    assert_eq!(
        for_proxy(&c.store, "web", &cfg),
        Err(BuildError::NotAProxy("web".into()))
    );
}

fn version(r: &Resources, type_url: &str, name: &str) -> String {
    r.get(type_url, name)
        .map(|x| x.version.clone())
        .unwrap_or_else(|| panic!("{name} missing"))
}

fn public_name(r: &Resources) -> String {
    public(r).name
}

#[test]
fn a_rotation_rewrites_the_public_listener_inline_but_only_the_secrets_with_sds() {
    // No jitter: the leaf is re-issued as soon as the rotation is seen.
    let c = sim_from(
        crate::assembly::sim::AgentSim::builder()
            .seed(7)
            .ca_change_jitter(std::time::Duration::ZERO),
    );
    let (sds0, inline0) = (build(&c, TlsMode::Sds), build(&c, TlsMode::Inline));
    c.rotate_ca(false).expect("rotation");
    let (sds1, inline1) = (build(&c, TlsMode::Sds), build(&c, TlsMode::Inline));
    let name = public_name(&sds0.resources);
    assert_eq!(
        version(&sds0.resources, types::LISTENER, &name),
        version(&sds1.resources, types::LISTENER, &name),
        "SDS: the listener only names the secrets"
    );
    for secret in ["connect-leaf", "connect-root"] {
        assert_ne!(
            version(&sds0.resources, types::SECRET, secret),
            version(&sds1.resources, types::SECRET, secret)
        );
    }
    assert_ne!(
        version(&inline0.resources, types::LISTENER, &name),
        version(&inline1.resources, types::LISTENER, &name),
        "inline: new certs rewrite the listener (and Envoy drains it)"
    );
}

#[test]
fn without_servers_and_without_a_cached_leaf_the_build_is_unavailable() {
    let c = sim();
    c.store.servers_lost();
    let got = for_proxy(&c.store, "db-proxy", &XdsConfig::default());
    assert!(matches!(got, Err(BuildError::Unavailable(_))), "{got:?}");
    // A leaf cached before the loss is served from the cache.
    c.store.servers_back();
    build(&c, TlsMode::Inline);
    c.store.servers_lost();
    assert!(for_proxy(&c.store, "web-sidecar-proxy", &XdsConfig::default()).is_ok());
}

#[test]
fn after_a_rotation_the_roots_move_at_once_and_the_leaf_at_its_jittered_point() {
    let c = sim_from(
        crate::assembly::sim::AgentSim::builder()
            .seed(7)
            .ca_change_jitter(std::time::Duration::from_secs(3600)),
    );
    let before = build(&c, TlsMode::Sds);
    let t0 = time::OffsetDateTime::now_utc();
    c.rotate_ca(false).expect("rotation");
    let after = build(&c, TlsMode::Sds);
    assert_ne!(
        version(&before.resources, types::SECRET, "connect-root"),
        version(&after.resources, types::SECRET, "connect-root")
    );
    let rotate_at = c
        .store
        .read(|st| st.leaves.get("web").and_then(|e| e.rotate_at))
        .expect("rotation scheduled");
    if rotate_at > time::OffsetDateTime::now_utc() {
        assert_eq!(
            version(&before.resources, types::SECRET, "connect-leaf"),
            version(&after.resources, types::SECRET, "connect-leaf"),
            "the leaf waits for its jittered point"
        );
        assert_eq!(after.refresh_at, Some(rotate_at));
    }
    assert!(rotate_at >= t0 && rotate_at <= t0 + time::Duration::hours(1));
}
