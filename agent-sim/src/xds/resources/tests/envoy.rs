//! Envoy is the judge: the built resources, made static (EDS clusters get their load
//! assignment inline, RDS routes are inlined, SDS references point at static secrets), go into
//! a binary `Bootstrap` and `envoy --mode validate` must accept them. Ignored, with the reason,
//! where the Envoy binary was absent when the crate was built (`ENVOY_BIN`, else the
//! workspace's `.tools/envoy-1.40.0/envoy/_bin/envoy`; the cfg `missing_envoy`).

use std::process::Command;

use envoy_types::pb::envoy::config::bootstrap::v3::{Bootstrap, bootstrap::StaticResources};
use envoy_types::pb::envoy::config::cluster::v3::{
    Cluster,
    cluster::{ClusterDiscoveryType, DiscoveryType},
};
use envoy_types::pb::envoy::config::core::v3::{Node, transport_socket};
use envoy_types::pb::envoy::config::endpoint::v3::ClusterLoadAssignment;
use envoy_types::pb::envoy::config::listener::v3::{Listener, filter};
use envoy_types::pb::envoy::config::route::v3::{
    RouteConfiguration, route, route_action, route_match,
};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, http_connection_manager::RouteSpecifier,
};
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    DownstreamTlsContext, Secret, common_tls_context::ValidationContextType,
};
use prost::Message;
use serde_json::json;

use super::super::any;
use super::{build, decode, proxy, sim, sim_from};
use crate::state::control::Control;
use crate::xds::types::{self, Resources, TlsMode};

/// The resources as a static bootstrap.
fn bootstrap(r: &Resources) -> Bootstrap {
    let routes: Vec<RouteConfiguration> = r.of(types::ROUTE).map(|x| decode(&x.any)).collect();
    let listeners = r
        .of(types::LISTENER)
        .map(|x| static_listener(decode(&x.any), &routes))
        .collect();
    let clusters = r
        .of(types::CLUSTER)
        .map(|x| {
            let mut c: Cluster = decode(&x.any);
            if c.eds_cluster_config.take().is_some() {
                let cla: ClusterLoadAssignment =
                    decode(&r.get(types::ENDPOINT, &c.name).expect("cla for EDS").any);
                c.cluster_discovery_type =
                    Some(ClusterDiscoveryType::Type(DiscoveryType::Static as i32));
                c.load_assignment = Some(cla);
            }
            c
        })
        .collect();
    let secrets: Vec<Secret> = r.of(types::SECRET).map(|x| decode(&x.any)).collect();
    Bootstrap {
        node: Some(Node {
            id: "web-sidecar-proxy".into(),
            cluster: "web".into(),
            ..Default::default()
        }),
        static_resources: Some(StaticResources {
            listeners,
            clusters,
            secrets,
        }),
        ..Default::default()
    }
}

/// Inlines RDS routes and drops `sds_config` (a name alone refers to a static secret).
fn static_listener(mut l: Listener, routes: &[RouteConfiguration]) -> Listener {
    for chain in &mut l.filter_chains {
        for f in &mut chain.filters {
            let Some(filter::ConfigType::TypedConfig(a)) = &mut f.config_type else {
                continue;
            };
            if f.name != "envoy.filters.network.http_connection_manager" {
                continue;
            }
            let mut hcm: HttpConnectionManager = decode(a);
            if let Some(RouteSpecifier::Rds(rds)) = &hcm.route_specifier {
                let rc = routes
                    .iter()
                    .find(|r| r.name == rds.route_config_name)
                    .expect("RDS route built")
                    .clone();
                hcm.route_specifier = Some(RouteSpecifier::RouteConfig(rc));
                *a = any(&hcm);
            }
        }
        if let Some(ts) = &mut chain.transport_socket
            && let Some(transport_socket::ConfigType::TypedConfig(a)) = &mut ts.config_type
        {
            let mut tls: DownstreamTlsContext = decode(a);
            if let Some(common) = &mut tls.common_tls_context {
                for s in &mut common.tls_certificate_sds_secret_configs {
                    s.sds_config = None;
                }
                if let Some(ValidationContextType::ValidationContextSdsSecretConfig(s)) =
                    &mut common.validation_context_type
                {
                    s.sds_config = None;
                }
            }
            *a = any(&tls);
        }
    }
    l
}

/// Runs `envoy --mode validate` on the bootstrap (callers are gated on `missing_envoy`).
pub(super) fn validate(name: &str, r: &Resources) -> Result<(), String> {
    let bin = crate::xds::test_envoy::envoy(&format!("envoy validation of {name}"));
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("x.pb");
    std::fs::write(&path, bootstrap(r).encode_to_vec()).map_err(|e| e.to_string())?;
    let out = Command::new(bin)
        .args(["--mode", "validate", "--log-level", "warn", "-c"])
        .arg(&path)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "envoy rejected {name}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn intentions(c: &Control) {
    c.put_intention("a", "web", &json!({"Action": "deny"}))
        .expect("intention");
    c.put_intention("*", "web", &json!({"Action": "allow"}))
        .expect("intention");
}

fn l7_intentions(c: &Control) {
    c.put_intention(
        "b",
        "web",
        &json!({"Permissions": [
            {"Action": "deny", "HTTP": {"PathExact": "/admin", "Methods": ["GET", "POST"]}},
            {"Action": "allow", "HTTP": {"PathRegex": "/api/.*", "Header": [
                {"Name": "x-a", "Present": true},
                {"Name": "x-b", "Exact": "1", "Invert": true},
                {"Name": "x-c", "Prefix": "p"},
                {"Name": "x-d", "Suffix": "s"},
                {"Name": "x-e", "Regex": "[0-9]+"}
            ]}},
            {"Action": "allow", "HTTP": {"PathPrefix": "/"}}
        ]}),
    )
    .expect("l7 intention");
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn envoy_accepts_l4_with_intentions_and_failover_inline() {
    let c = sim();
    intentions(&c);
    proxy(&c, "db-backup", 21003);
    c.upsert_config_entry(&json!({
        "Kind": "service-resolver", "Name": "db", "ConnectTimeout": "3s",
        "Failover": {"*": {"Service": "db-backup"}}
    }))
    .expect("entry");
    let r = build(&c, TlsMode::Inline).resources;
    assert!(r.of(types::CLUSTER).count() >= 4);
    validate("l4 + failover (inline)", &r).expect("envoy accepts");
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn envoy_accepts_http_with_l7_intentions_rds_upstream_and_redirect_sds() {
    let c = sim();
    proxy(&c, "db-v2", 21002);
    for entry in [
        json!({"Kind": "proxy-defaults", "Name": "global", "Config": {"protocol": "http"}}),
        json!({"Kind": "service-resolver", "Name": "db", "Redirect": {"Service": "db-v2"}}),
    ] {
        c.upsert_config_entry(&entry).expect("entry");
    }
    intentions(&c);
    l7_intentions(&c);
    for mode in [TlsMode::Sds, TlsMode::Inline] {
        let r = build(&c, mode).resources;
        assert_eq!(r.of(types::ROUTE).count(), 1);
        validate(&format!("http + L7 + redirect ({})", mode.as_str()), &r).expect("envoy accepts");
    }
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn envoy_accepts_grpc_and_a_unix_socket_upstream_sds() {
    let (_, c) = crate::assembly::sim::AgentSim::builder()
        .seed(9)
        .build()
        .expect("sim");
    c.register(&json!({
        "Name": "web", "Port": 8080,
        "Connect": {"SidecarService": {"Port": 21000, "Proxy": {
            "Config": {"protocol": "grpc", "bind_address": "127.0.0.2", "local_connect_timeout_ms": 1500},
            "Upstreams": [{"DestinationName": "db", "LocalBindSocketPath": "/tmp/db.sock", "LocalBindSocketMode": "0600"}]
        }}}
    }))
    .expect("web");
    proxy(&c, "db", 21001);
    let r = build(&c, TlsMode::Sds).resources;
    assert!(r.get(types::LISTENER, "db:/tmp/db.sock").is_some());
    let public: Listener = decode(
        &r.get(types::LISTENER, "public_listener:127.0.0.2:21000")
            .expect("bind_address honoured")
            .any,
    );
    let Some(filter::ConfigType::TypedConfig(a)) = &public.filter_chains[0].filters[0].config_type
    else {
        panic!("hcm")
    };
    let hcm: HttpConnectionManager = decode(a);
    let names: Vec<_> = hcm.http_filters.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "envoy.filters.http.grpc_stats",
            "envoy.filters.http.grpc_http1_bridge",
            "envoy.filters.http.rbac",
            "envoy.filters.http.router"
        ]
    );
    assert!(hcm.http2_protocol_options.is_some());
    validate("grpc + unix socket upstream (sds)", &r).expect("envoy accepts");
}

/// Consul writes a local instance's hostname address into EDS as-is (only peered upstreams and
/// gateways switch to DNS clusters: `PeerUpstreamEndpointsUseHostnames`), and Envoy refuses a
/// hostname in an EDS/static endpoint: the real pair NACKs such an update.
#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn hostname_endpoints_go_into_eds_and_envoy_refuses_them() {
    let c = sim();
    c.catalog_register(&json!({
        "Node": "n2", "Address": "10.0.0.2",
        "Service": {"Kind": "connect-proxy", "ID": "db-proxy-2", "Service": "db-proxy",
            "Address": "localhost", "Port": 21009,
            "Proxy": {"DestinationServiceName": "db"}}
    }))
    .expect("catalog register");
    let r = build(&c, TlsMode::Inline).resources;
    let sni = format!("db.default.dc1.internal.{}", c.trust_domain());
    let cla: ClusterLoadAssignment = decode(&r.get(types::ENDPOINT, &sni).expect("cla").any);
    assert!(format!("{cla:?}").contains("\"localhost\""));
    match validate("hostname endpoint", &r) {
        Ok(()) => panic!("Envoy accepted a hostname in an EDS endpoint"),
        Err(e) => assert!(e.contains("localhost"), "{e}"),
    }
}

/// Transparent mode: the outbound listener matches the virtual IPs of cache and queue
/// (intention upstreams, no explicit entry; queue is known only by its sidecar, as Consul finds
/// it in its virtual-IP table) and sends everything else to `original-destination`.
#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn envoy_accepts_the_transparent_outbound_listener() {
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
    for svc in ["cache", "api"] {
        c.register(&json!({"Name": svc, "Port": 5000}))
            .expect("typical");
    }
    proxy(&c, "cache", 21005);
    proxy(&c, "api", 21006);
    proxy(&c, "queue", 21007);
    for to in ["cache", "queue"] {
        c.put_intention("web", to, &json!({"Action": "allow"}))
            .expect("intention");
    }
    let r = build(&c, TlsMode::Inline).resources;
    let l: Listener = decode(
        &r.get(types::LISTENER, "outbound_listener:127.0.0.1:15001")
            .expect("outbound listener")
            .any,
    );
    assert_eq!(
        l.filter_chains.len(),
        2,
        "only cache and queue are intention upstreams"
    );
    let queue_vip = c.virtual_ip("queue").expect("queue has a virtual IP");
    let queue = l.filter_chains[1].filter_chain_match.as_ref();
    assert_eq!(
        queue.map(|m| m.prefix_ranges[0].address_prefix.clone()),
        Some(queue_vip.to_string())
    );
    let vip = c
        .virtual_ip("cache")
        .expect("cache has a virtual IP")
        .to_string();
    let m = l.filter_chains[0]
        .filter_chain_match
        .as_ref()
        .expect("match");
    assert_eq!(m.prefix_ranges[0].address_prefix, vip);
    assert!(l.default_filter_chain.is_some());
    assert_eq!(
        l.listener_filters[0].name,
        "envoy.filters.listener.original_dst"
    );
    let sni = format!("cache.default.dc1.internal.{}", c.trust_domain());
    assert!(r.get(types::CLUSTER, &sni).is_some());
    assert!(r.get(types::ENDPOINT, &sni).is_some());
    assert!(r.get(types::CLUSTER, "original-destination").is_some());
    assert!(
        r.get(types::CLUSTER, &sni.replace("cache", "api"))
            .is_none()
    );
    validate("transparent outbound listener", &r).expect("envoy accepts");
}

/// An HTTP upstream's chain with a router in front of a splitter becomes RDS routes with
/// matches and weighted clusters.
#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn envoy_accepts_router_and_splitter_routes() {
    let c = sim();
    proxy(&c, "db-v2", 21002);
    for entry in [
        json!({"Kind": "proxy-defaults", "Name": "global", "Config": {"protocol": "http"}}),
        json!({"Kind": "service-splitter", "Name": "db-v2", "Splits": [
            {"Weight": 50, "Service": "db"}, {"Weight": 50, "Service": "db-v2"}
        ]}),
        json!({"Kind": "service-router", "Name": "db", "Routes": [
            {"Match": {"HTTP": {"PathPrefix": "/v2", "Methods": ["GET"],
                "Header": [{"Name": "x-canary", "Exact": "1"}],
                "QueryParam": [{"Name": "debug", "Present": true}]}},
             "Destination": {"Service": "db-v2"}}
        ]}),
    ] {
        c.upsert_config_entry(&entry).expect("entry");
    }
    let r = build(&c, TlsMode::Inline).resources;
    let rc: RouteConfiguration = decode(&r.get(types::ROUTE, "db").expect("route").any);
    let routes = &rc.virtual_hosts[0].routes;
    assert_eq!(routes.len(), 2, "{routes:?}");
    let cluster_of = |i: usize| match &routes[i].action {
        Some(route::Action::Route(a)) => a.cluster_specifier.clone(),
        other => panic!("route action {other:?}"),
    };
    let Some(route_action::ClusterSpecifier::WeightedClusters(w)) = cluster_of(0) else {
        panic!("the /v2 route goes to the splitter")
    };
    let weights: Vec<_> = w
        .clusters
        .iter()
        .map(|c| (c.name.clone(), c.weight.map(|w| w.value)))
        .collect();
    let td = c.trust_domain();
    assert_eq!(
        weights,
        [
            (format!("db.default.dc1.internal.{td}"), Some(5000)),
            (format!("db-v2.default.dc1.internal.{td}"), Some(5000)),
        ]
    );
    let m = routes[0].r#match.as_ref().expect("match");
    assert_eq!(
        m.path_specifier,
        Some(route_match::PathSpecifier::Prefix("/v2".into()))
    );
    assert_eq!(m.headers.len(), 2, "x-canary and :method");
    assert_eq!(m.query_parameters.len(), 1);
    assert_eq!(
        cluster_of(1),
        Some(route_action::ClusterSpecifier::Cluster(format!(
            "db.default.dc1.internal.{td}"
        )))
    );
    validate("router + splitter routes", &r).expect("envoy accepts");
}

/// Issue 10: an RSA CA in chain mode, after a rotation of the intermediate and a cross-signed
/// rotation to P-384: Envoy loads the leaves (P-256 keys, as Consul's agent makes them, signed
/// through RSA and P-384 intermediates) with their whole chain (leaf, cross-signed root,
/// intermediates) and every root, inline and as SDS secrets.
#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn envoy_accepts_rsa_and_p384_chains_with_intermediates() {
    let c = sim_from(
        crate::assembly::sim::AgentSim::builder()
            .seed(11)
            .ca_key_kind(crate::model::ca::KeyKind::Rsa2048)
            .ca_intermediate(true),
    );
    c.rotate_intermediate().expect("intermediate rotates");
    for mode in [TlsMode::Inline, TlsMode::Sds] {
        let r = build(&c, mode).resources;
        validate(&format!("rsa chain ({})", mode.as_str()), &r).expect("envoy accepts");
    }
    c.rotate_ca_to(crate::model::ca::KeyKind::Ec384, true)
        .expect("rotates to P-384");
    for mode in [TlsMode::Inline, TlsMode::Sds] {
        let r = build(&c, mode).resources;
        let text = format!("{:?}", r.of(types::SECRET).count());
        validate(
            &format!("p384 chain ({}, {text} secrets)", mode.as_str()),
            &r,
        )
        .expect("envoy accepts");
    }
}
