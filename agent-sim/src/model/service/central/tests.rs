//! Tests for the central-config merge rules.

use super::*;
use crate::model::service::model::ServiceKind;
use serde_json::json;

fn sidecar() -> NodeService {
    let mut ns = NodeService {
        kind: ServiceKind::ConnectProxy,
        id: "web-sidecar-proxy".into(),
        service: "web-sidecar-proxy".into(),
        port: 21000,
        ..Default::default()
    };
    ns.proxy.destination_service_name = "web".into();
    ns
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn config_keys_fill_in_and_registration_wins() {
    let mut ns = sidecar();
    ns.proxy.config = obj(json!({"protocol": "tcp", "local_connect_timeout_ms": 500}));
    let central = CentralConfig {
        proxy_config: obj(json!({"local_connect_timeout_ms": 1000, "handshake_timeout_ms": 2000})),
        protocol: Some("http".into()),
        ..Default::default()
    };
    let merged = merge_central_config(&ns, &central);
    assert_eq!(
        Value::Object(merged.proxy.config),
        json!({"protocol": "tcp", "local_connect_timeout_ms": 500, "handshake_timeout_ms": 2000})
    );
}

#[test]
fn service_defaults_protocol_beats_proxy_defaults() {
    let central = CentralConfig {
        proxy_config: obj(json!({"protocol": "grpc"})),
        protocol: Some("http".into()),
        ..Default::default()
    };
    let merged = merge_central_config(&sidecar(), &central);
    assert_eq!(merged.proxy.config.get("protocol"), Some(&json!("http")));
    let only_proxy_defaults = CentralConfig {
        protocol: None,
        ..central
    };
    let merged = merge_central_config(&sidecar(), &only_proxy_defaults);
    assert_eq!(merged.proxy.config.get("protocol"), Some(&json!("grpc")));
}

#[test]
fn modes_transparent_proxy_and_expose_fill_only_when_unset() {
    let central = CentralConfig {
        mode: Some("transparent".into()),
        mesh_gateway_mode: Some("local".into()),
        transparent_proxy: Some(json!({"outbound_listener_port": 15001, "DialedDirectly": true})),
        expose: Some(
            json!({"Checks": true, "Paths": [{"ListenerPort": 21500, "Path": "/metrics", "LocalPathPort": 9102, "Protocol": "http"}]}),
        ),
        ..Default::default()
    };
    let merged = merge_central_config(&sidecar(), &central);
    assert_eq!(merged.proxy.mode, "transparent");
    assert_eq!(merged.proxy.mesh_gateway.mode, "local");
    assert_eq!(merged.proxy.transparent_proxy.outbound_listener_port, 15001);
    assert!(merged.proxy.transparent_proxy.dialed_directly);
    assert!(merged.proxy.expose.checks);
    assert_eq!(merged.proxy.expose.paths[0].path, "/metrics");
    assert_eq!(merged.proxy.expose.paths[0].local_path_port, 9102);

    let mut set = sidecar();
    set.proxy.mode = "direct".into();
    set.proxy.mesh_gateway.mode = "none".into();
    set.proxy.transparent_proxy.outbound_listener_port = 16001;
    let merged = merge_central_config(&set, &central);
    assert_eq!(merged.proxy.mode, "direct");
    assert_eq!(merged.proxy.mesh_gateway.mode, "none");
    assert_eq!(merged.proxy.transparent_proxy.outbound_listener_port, 16001);
    assert!(
        merged.proxy.transparent_proxy.dialed_directly,
        "each field fills separately"
    );
}

#[test]
fn typical_services_are_not_merged() {
    let web = NodeService {
        id: "web".into(),
        service: "web".into(),
        ..Default::default()
    };
    let central = CentralConfig {
        protocol: Some("http".into()),
        mode: Some("transparent".into()),
        ..Default::default()
    };
    assert_eq!(merge_central_config(&web, &central), web);
    let mut gateway = NodeService {
        kind: ServiceKind::MeshGateway,
        port: 8443,
        ..Default::default()
    };
    gateway.proxy.config = Map::new();
    assert_eq!(
        merge_central_config(&gateway, &central).proxy.mode,
        "transparent",
        "gateways merge"
    );
}
