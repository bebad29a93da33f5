//! Central config in `GET /v1/agent/service/:id` as the agent's `MergeServiceConfig` makes it:
//! the per-upstream resolved config (proxy-defaults protocol and mesh gateway, the upstream's
//! service-defaults protocol, the downstream's `UpstreamConfig` defaults and overrides), for
//! sidecars registered before and after the entries, with the hash-blocked read woken; and the
//! merged `MutualTLSMode`.

use std::time::Duration;

use serde_json::{Value, json};

use super::support::{app, builder};

#[tokio::test]
async fn central_upstream_config_reaches_agent_service_before_and_after_the_entry() {
    let a = app(builder());
    let sidecar = |name: &str| {
        json!({
            "Name": name, "Port": 8080,
            "Connect": {"SidecarService": {"Proxy": {"Upstreams": [
                {"DestinationName": "db", "LocalBindPort": 9191},
                {"DestinationName": "cache", "LocalBindPort": 9292, "Config": {"protocol": "tcp"}}
            ]}}}
        })
    };
    a.control.register(&sidecar("early")).unwrap();
    let before = a.get("/v1/agent/service/early-sidecar-proxy").await;
    let hash = before.header("x-consul-contenthash").unwrap().to_owned();
    let waiting = {
        let a = a.clone();
        let uri = format!("/v1/agent/service/early-sidecar-proxy?hash={hash}&wait=30s");
        tokio::spawn(async move { a.get(&uri).await })
    };
    a.control
        .upsert_config_entry(&json!({"Kind": "proxy-defaults", "Name": "global",
            "Config": {"protocol": "http"}, "MeshGateway": {"Mode": "local"}}))
        .unwrap();
    a.control
        .upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "db", "Protocol": "grpc"}))
        .unwrap();
    a.control
        .upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "early",
            "UpstreamConfig": {"Defaults": {"ConnectTimeoutMs": 2500},
                               "Overrides": [{"Name": "cache", "Protocol": "http2", "ConnectTimeoutMs": 100}]}}))
        .unwrap();
    let woke = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the hash-blocked read wakes")
        .unwrap();
    assert_ne!(woke.header("x-consul-contenthash"), Some(hash.as_str()));
    a.control.register(&sidecar("late")).unwrap();
    for id in ["early-sidecar-proxy", "late-sidecar-proxy"] {
        let v = a.get(&format!("/v1/agent/service/{id}")).await.json();
        let ups = &v["Proxy"]["Upstreams"];
        let (svc_defaults_name, _) = id.split_once('-').unwrap();
        let want_db_timeout = if svc_defaults_name == "early" {
            json!(2500)
        } else {
            Value::Null
        };
        assert_eq!(
            ups[0]["Config"]["protocol"], "grpc",
            "{id}: the upstream's own protocol"
        );
        assert_eq!(
            ups[0]["MeshGateway"]["Mode"], "local",
            "{id}: proxy-defaults mode"
        );
        assert!(ups[0]["Config"].get("mesh_gateway").is_none());
        assert_eq!(
            ups[0]["Config"]
                .get("connect_timeout_ms")
                .cloned()
                .unwrap_or(Value::Null),
            want_db_timeout,
            "{id}"
        );
        assert_eq!(
            ups[1]["Config"]["protocol"], "tcp",
            "{id}: the registration wins"
        );
        if svc_defaults_name == "early" {
            assert_eq!(
                ups[1]["Config"]["connect_timeout_ms"], 100,
                "the override beats defaults"
            );
        }
        assert_eq!(
            v["Proxy"]["Config"]["protocol"], "http",
            "{id}: proxy-defaults Config"
        );
    }
}

#[tokio::test]
async fn service_defaults_inbound_limits_reach_the_sidecar_config_and_wake_its_watch() {
    let a = app(builder());
    a.control
        .register(
            &json!({"Name": "db", "Port": 8080, "Connect": {"SidecarService": {
            "Proxy": {"Config": {"local_request_timeout_ms": 900}}}}}),
        )
        .unwrap();
    let before = a.get("/v1/agent/service/db-sidecar-proxy").await;
    let hash = before.header("x-consul-contenthash").unwrap().to_owned();
    let waiting = {
        let a = a.clone();
        let uri = format!("/v1/agent/service/db-sidecar-proxy?hash={hash}&wait=30s");
        tokio::spawn(async move { a.get(&uri).await })
    };
    a.control
        .upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "db",
            "MaxInboundConnections": 2, "LocalConnectTimeoutMs": 250,
            "LocalRequestTimeoutMs": 300, "BalanceInboundConnections": "exact_balance"}))
        .unwrap();
    let woke = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the hash-blocked read wakes")
        .unwrap();
    assert_ne!(woke.header("x-consul-contenthash"), Some(hash.as_str()));
    let cfg = woke.json()["Proxy"]["Config"].clone();
    assert_eq!(
        cfg,
        json!({"max_inbound_connections": 2, "local_connect_timeout_ms": 250,
               "local_request_timeout_ms": 900, "balance_inbound_connections": "exact_balance"}),
        "merged as resolve.go does; the registration's own key wins"
    );
}

/// `MutualTLSMode` in `GET /v1/agent/service/:id`: proxy-defaults' mode, service-defaults' over
/// it, the registration's own over both (`agent/configentry/resolve.go`), followed as the entries
/// change.
#[tokio::test]
async fn mutual_tls_mode_is_merged_into_the_agent_service() {
    let a = app(builder());
    a.control
        .register(&json!({"Name": "db", "Port": 8080, "Connect": {"SidecarService": {}}}))
        .unwrap();
    a.control
        .register(
            &json!({"Name": "web", "Port": 8081, "Connect": {"SidecarService": {
            "Proxy": {"MutualTLSMode": "strict"}}}}),
        )
        .unwrap();
    let mode = |v: Value| v["Proxy"].get("MutualTLSMode").cloned();
    let db = "/v1/agent/service/db-sidecar-proxy";
    assert_eq!(mode(a.get(db).await.json()), None, "unset: omitted");
    a.control
        .upsert_config_entry(&json!({"Kind": "mesh", "AllowEnablingPermissiveMutualTLS": true}))
        .unwrap();
    a.control
        .upsert_config_entry(&json!({"Kind": "proxy-defaults", "Name": "global",
            "MutualTLSMode": "permissive"}))
        .unwrap();
    assert_eq!(mode(a.get(db).await.json()), Some(json!("permissive")));
    a.control
        .upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "db",
            "MutualTLSMode": "strict"}))
        .unwrap();
    assert_eq!(mode(a.get(db).await.json()), Some(json!("strict")));
    let web = a.get("/v1/agent/service/web-sidecar-proxy").await.json();
    assert_eq!(mode(web), Some(json!("strict")), "the registration wins");
}
