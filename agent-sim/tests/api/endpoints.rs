//! One wire snapshot per endpoint (run-dependent values filtered), plus the headers each sets.

use axum::http::Method;
use serde_json::json;

use super::support::{App, app, builder};
use crate::assert_wire;

async fn seeded() -> App {
    let a = app(builder());
    let c = &a.control;
    c.upsert_config_entry(&json!({"Kind": "proxy-defaults", "Name": "global", "Config": {"local_connect_timeout_ms": 500}})).unwrap();
    c.upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "db", "Protocol": "http"}))
        .unwrap();
    c.upsert_config_entry(
        &json!({"Kind": "service-intentions", "Name": "db", "Sources": [
            {"Name": "web", "Action": "allow"},
            {"Name": "api", "Permissions": [{"Action": "deny", "HTTP": {"PathPrefix": "/admin"}}]},
            {"Name": "*", "Action": "deny"}
        ]}),
    )
    .unwrap();
    c.register(
        &json!({"Name": "db", "Port": 9090, "Connect": {"SidecarService": {"Proxy": {
        "Upstreams": [{"DestinationName": "cache", "LocalBindPort": 9191}]}}}}),
    )
    .unwrap();
    c.catalog_register(&json!({"Node": "n2", "Address": "127.0.0.2", "Service": {
        "Kind": "connect-proxy", "ID": "cache-proxy", "Service": "cache-sidecar-proxy", "Port": 21000,
        "Proxy": {"DestinationServiceName": "cache", "DestinationServiceID": "cache"}},
        "Check": {"CheckID": "cache-alive", "Name": "alive", "Status": "passing", "ServiceID": "cache-proxy"}}))
    .unwrap();
    a
}

#[tokio::test]
async fn agent_roots() {
    let a = seeded().await;
    let r = a.get("/v1/agent/connect/ca/roots").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-cache"), Some("MISS"));
    assert_eq!(r.header("x-consul-knownleader"), Some("true"));
    assert_eq!(r.header("x-consul-query-backend"), Some("blocking-query"));
    assert_eq!(
        r.header("x-consul-effective-consistency"),
        None,
        "roots do not set it"
    );
    assert_eq!(r.header("x-consul-default-acl-policy"), Some("allow"));
    assert_wire!("agent_roots", r.json());
    let again = a.get("/v1/agent/connect/ca/roots").await;
    assert_eq!(
        (again.header("x-cache"), again.header("age")),
        (Some("HIT"), Some("0"))
    );
}

#[tokio::test]
async fn leaf() {
    let a = seeded().await;
    let r = a.get("/v1/agent/connect/ca/leaf/web").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("x-consul-knownleader"),
        None,
        "the leaf sets no KnownLeader"
    );
    let body = r.json();
    assert_eq!(r.index(), body["ModifyIndex"].as_u64().unwrap());
    assert!(
        body["ServiceURI"]
            .as_str()
            .unwrap()
            .ends_with("/ns/default/dc/dc1/svc/web")
    );
    assert!(
        body["PrivateKeyPEM"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN EC PRIVATE KEY-----")
    );
    assert_wire!("leaf", body);
    let again = a.get("/v1/agent/connect/ca/leaf/web").await.json();
    assert_eq!(
        again["SerialNumber"],
        r.json()["SerialNumber"],
        "cached until renewal"
    );
}

#[tokio::test]
async fn authorize() {
    let a = seeded().await;
    let td = a.control.trust_domain();
    let uri = |svc: &str| format!("spiffe://{td}/ns/default/dc/dc1/svc/{svc}");
    let cases = [
        (
            "web",
            json!({"Authorized": true, "Reason": "Matched L4 intention: default/web => default/db (Precedence: 9, Action: ALLOW)"}),
        ),
        (
            "api",
            json!({"Authorized": false, "Reason": "Matched L7 intention: default/api => default/db (Precedence: 9, Permissions: 1)"}),
        ),
        (
            "other",
            json!({"Authorized": false, "Reason": "Matched L4 intention: default/* => default/db (Precedence: 8, Action: DENY)"}),
        ),
    ];
    for (src, want) in cases {
        let body = json!({"Target": "db", "ClientCertURI": uri(src), "ClientCertSerial": "01"})
            .to_string();
        let r = a.post("/v1/agent/connect/authorize", &body).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.json(), want, "{src}");
        assert!(r.header("x-cache").is_some());
        assert_eq!(r.header("x-consul-index"), None);
    }
    let body = json!({"Target": "cache", "ClientCertURI": uri("web")}).to_string();
    let r = a.post("/v1/agent/connect/authorize", &body).await;
    assert_eq!(
        r.json(),
        json!({"Authorized": true, "Reason": "Default behavior configured by ACLs"})
    );
}

#[tokio::test]
async fn intention_match_and_check() {
    let a = seeded().await;
    let r = a
        .get("/v1/connect/intentions/match?by=destination&name=db&name=cache")
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-consul-effective-consistency"), Some("leader"));
    assert_eq!(
        r.json()["cache"],
        serde_json::Value::Null,
        "no matches is null, not []"
    );
    assert_wire!("intention_match", r.json());
    // The match answer is written as bytes; `?pretty` parses and indents it like any other.
    let pretty = a
        .get("/v1/connect/intentions/match?by=destination&name=db&name=cache&pretty")
        .await;
    assert_eq!(pretty.status, 200);
    assert_eq!(pretty.json(), r.json(), "the same answer, pretty");
    assert!(
        pretty.text.ends_with("}\n") && pretty.text.contains("\n    \""),
        "indented by four spaces, with a trailing newline: {}",
        pretty.text
    );
    let r = a
        .get("/v1/connect/intentions/check?source=web&destination=db")
        .await;
    assert_eq!(r.json(), json!({"Allowed": true}));
    let r = a
        .get("/v1/connect/intentions/check?source=api&destination=db")
        .await;
    assert_eq!(r.json(), json!({"Allowed": false}), "L7 counts as deny");
    let r = a
        .get("/v1/connect/intentions/exact?source=web&destination=db")
        .await;
    assert_wire!("intention_exact", r.json());
}

#[tokio::test]
async fn config_entries() {
    let a = seeded().await;
    let r = a.get("/v1/config/service-intentions/db").await;
    assert_eq!(r.status, 200);
    assert_wire!("config_service_intentions", r.json());
    let r = a.get("/v1/config/service-defaults").await;
    assert_wire!("config_list_service_defaults", r.json());
    let r = a.get("/v1/config/service-defaults/nope").await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (
            404,
            "Config entry not found for \"service-defaults\" / \"nope\""
        )
    );
    let r = a
        .put(
            "/v1/config?cas=0",
            r#"{"Kind":"service-defaults","Name":"db","Protocol":"tcp"}"#,
        )
        .await;
    assert_eq!(r.text, "false", "CAS 0 on an existing entry fails");
    let r = a
        .call(Method::DELETE, "/v1/config/service-defaults/db", None, None)
        .await;
    assert_eq!(r.status, 500, "db's L7 intentions need its http protocol");
    assert_eq!(
        r.text,
        "service \"db\" has protocol \"tcp\", which is incompatible with L7 intentions permissions"
    );
    let r = a
        .call(
            Method::DELETE,
            "/v1/config/service-intentions/db",
            None,
            None,
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (200, "{}"));
    let r = a
        .call(Method::DELETE, "/v1/config/service-defaults/db", None, None)
        .await;
    assert_eq!((r.status, r.text.as_str()), (200, "{}"));
}

#[tokio::test]
async fn discovery_chain() {
    let a = seeded().await;
    let r = a.get("/v1/discovery-chain/cache").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-consul-effective-consistency"), Some("leader"));
    assert_wire!("chain_default", r.json());
    let r = a
        .post(
            "/v1/discovery-chain/db",
            r#"{"OverrideProtocol":"tcp","OverrideConnectTimeout":"7s"}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let chain = &r.json()["Chain"];
    assert_eq!(chain["Protocol"], "tcp");
    assert!(chain["CustomizationHash"].is_string());
}

#[tokio::test]
async fn health_connect() {
    let a = seeded().await;
    let r = a.get("/v1/health/connect/db").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-consul-effective-consistency"), Some("leader"));
    assert_wire!("health_connect_db", r.json());
    let r = a.get("/v1/health/connect/db?passing=1").await;
    assert_eq!(
        r.json(),
        json!([]),
        "the sidecar's listening check is still critical"
    );
    let r = a.get("/v1/health/connect/cache?passing").await;
    assert_eq!(r.json().as_array().unwrap().len(), 1);
    assert_eq!(
        a.get("/v1/health/connect/db?passing=maybe").await.text,
        "Invalid value for ?passing"
    );
    let r = a.get("/v1/health/service/db").await;
    assert_eq!(
        r.json()[0]["Service"]["Service"],
        "db",
        "health/service lists the plain instances"
    );
    let r = a.get("/v1/health/connect/db?cached").await;
    assert_eq!(r.header("x-consul-query-backend"), Some("streaming"));
}

#[tokio::test]
async fn agent_service_and_services() {
    let a = seeded().await;
    let r = a.get("/v1/agent/service/db-sidecar-proxy").await;
    assert_eq!(r.status, 200);
    let hash = r.header("x-consul-contenthash").unwrap().to_owned();
    let body = r.json();
    assert_eq!(body["ContentHash"], hash);
    assert_eq!(
        body["Proxy"]["Config"]["protocol"], "http",
        "service-defaults merged"
    );
    assert_eq!(
        body["Proxy"]["Config"]["local_connect_timeout_ms"], 500,
        "proxy-defaults merged"
    );
    assert_wire!("agent_service_sidecar", body);
    let r = a.get("/v1/agent/services").await;
    assert_wire!("agent_services", r.json());
    let r = a.get("/v1/agent/service/nope").await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (404, "unknown service ID: nope")
    );
}

#[tokio::test]
async fn catalog_status_and_self() {
    let a = seeded().await;
    let r = a.get("/v1/catalog/service/cache-sidecar-proxy").await;
    assert_eq!(r.status, 200);
    assert_wire!("catalog_service", r.json());
    assert_eq!(
        a.get("/v1/status/leader").await.json(),
        json!("127.0.0.1:8300")
    );
    let r = a.get("/v1/agent/self").await;
    assert_eq!(r.json()["Config"]["Datacenter"], "dc1");
    assert_eq!(r.json()["DebugConfig"]["DefaultIntentionPolicy"], "");
}

#[tokio::test]
async fn register_deregister_and_ca_configuration() {
    let a = seeded().await;
    let r = a
        .put(
            "/v1/agent/service/register",
            r#"{"Name":"web","Port":8080}"#,
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (200, ""));
    let r = a.put("/v1/agent/service/deregister/web", "").await;
    assert_eq!((r.status, r.text.as_str()), (200, ""));
    let r = a.put("/v1/agent/service/deregister/web", "").await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.text,
        "Unknown service ID \"web\". Ensure that the service ID is passed, not the service name."
    );
    let r = a.put("/v1/agent/service/deregister/db", "").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        a.get("/v1/agent/service/db-sidecar-proxy").await.status,
        404,
        "the sidecar went with its parent"
    );
    let r = a.get("/v1/connect/ca/configuration").await;
    assert_wire!("ca_configuration", r.json());
}
