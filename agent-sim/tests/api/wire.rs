//! Wire fidelity that independent clients (py-consul, npm `consul`) exposed: the intention list,
//! the catalog node/datacenter/connect endpoints and the `consul` service, agent members and
//! checks, `/v1/agent/self` omitempty, `?pretty` and Go's escaping, Go map key order, the
//! authorize 403 text, and central upstream config in `GET /v1/agent/service/:id`.

use std::time::Duration;

use agent_sim::acl::DefaultPolicy;
use axum::http::Method;
use serde_json::{Value, json};

use super::support::{App, app, builder};

fn plain() -> App {
    app(builder())
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn intention_list_is_precedence_ordered_filterable_and_blocking() {
    let a = plain();
    let r = a.get("/v1/connect/intentions").await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (200, "[]"),
        "none: [] not null"
    );
    let start = r.index();
    for (src, dst, action) in [
        ("*", "db", "deny"),
        ("web", "db", "allow"),
        ("web", "*", "deny"),
    ] {
        let uri = format!("/v1/connect/intentions/exact?source={src}&destination={dst}");
        let body = json!({ "Action": action }).to_string();
        assert_eq!(a.put(&uri, &body).await.status, 200);
    }
    let r = a.get("/v1/connect/intentions").await;
    let got: Vec<(String, String, i64)> = r
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["SourceName"].as_str().unwrap().to_owned(),
                i["DestinationName"].as_str().unwrap().to_owned(),
                i["Precedence"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("web".into(), "db".into(), 9),
            ("*".into(), "db".into(), 8),
            ("web".into(), "*".into(), 6),
        ]
    );
    assert!(r.index() > start);
    let r = a
        .get("/v1/connect/intentions?filter=DestinationName%20%3D%3D%20%22db%22%20and%20Action%20%3D%3D%20deny")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json().as_array().unwrap().len(), 1);
    let r = a
        .get("/v1/connect/intentions?filter=Bogus%20%3D%3D%201")
        .await;
    assert_eq!(
        r.status, 500,
        "an unknown selector is Consul's 500: {}",
        r.text
    );

    // Blocking: a write wakes a list blocked on the current index.
    let idx = a.get("/v1/connect/intentions").await.index();
    let blocked = {
        let a = a.clone();
        let uri = format!("/v1/connect/intentions?index={idx}&wait=30s");
        tokio::spawn(async move { a.get(&uri).await })
    };
    a.control.delete_intention("web", "*").unwrap();
    let r = tokio::time::timeout(Duration::from_secs(30), blocked)
        .await
        .expect("the blocked list returns")
        .unwrap();
    assert!(r.index() > idx);
    assert_eq!(r.json().as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn intention_list_leaves_out_what_the_token_cannot_read() {
    let a = app(builder().acls("root", DefaultPolicy::Deny));
    for dst in ["db", "api"] {
        let uri = format!("/v1/connect/intentions/exact?source=web&destination={dst}");
        let r = a
            .call(
                Method::PUT,
                &uri,
                Some("root"),
                Some(r#"{"Action":"allow"}"#),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let t = a
        .control
        .create_token(
            "service \"db\" {\n  policy = \"read\"\n  intentions = \"read\"\n}",
            "reader",
        )
        .unwrap();
    let r = a
        .call(
            Method::GET,
            "/v1/connect/intentions",
            Some(&t.secret_id),
            None,
        )
        .await;
    let v = r.json();
    let dsts: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["DestinationName"].as_str().unwrap())
        .collect();
    assert_eq!(dsts, vec!["db"]);
}

#[tokio::test]
async fn intention_match_names_come_in_go_map_order() {
    let a = plain();
    let r = a
        .get("/v1/connect/intentions/match?by=destination&name=zeta&name=alpha")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.text, r#"{"alpha":null,"zeta":null}"#);
}

#[tokio::test]
async fn catalog_has_the_server_node_and_the_consul_service() {
    let a = plain();
    let r = a.get("/v1/catalog/services").await;
    assert_eq!(r.json(), json!({ "consul": [] }));
    let r = a.get("/v1/catalog/service/consul").await;
    let svc = &r.json()[0];
    assert_eq!(
        (
            svc["Node"].as_str(),
            svc["ServiceID"].as_str(),
            svc["ServicePort"].as_u64()
        ),
        (Some("consul-server"), Some("consul"), Some(8300))
    );
    assert_eq!(svc["ServiceMeta"]["raft_version"], "3");
    let r = a.get("/v1/health/service/consul?passing").await;
    assert_eq!(r.json().as_array().unwrap().len(), 1, "serfHealth passes");
    let r = a.get("/v1/agent/services").await;
    assert_eq!(r.json(), json!({}), "not a local service of this agent");
    let r = a.get("/v1/health/connect/consul").await;
    assert_eq!(r.json(), json!([]), "not connect-capable");
}

#[tokio::test]
async fn catalog_nodes_datacenters_and_connect() {
    let a = plain();
    let r = a.get("/v1/catalog/datacenters").await;
    assert_eq!((r.status, r.text.as_str()), (200, r#"["dc1"]"#));
    assert!(r.header("x-consul-index").is_none());

    let r = a.get("/v1/catalog/nodes").await;
    let v = r.json();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["Node"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["agent-sim", "consul-server"]);
    assert!(r.index() > 0);
    let node = &r.json()[0];
    assert_eq!(
        keys(node),
        vec![
            "ID",
            "Node",
            "Address",
            "Datacenter",
            "TaggedAddresses",
            "Meta",
            "CreateIndex",
            "ModifyIndex"
        ]
    );
    assert_eq!(
        keys(&node["TaggedAddresses"]),
        vec!["lan", "lan_ipv4", "wan", "wan_ipv4"]
    );
    let r = a
        .get("/v1/catalog/nodes?node-meta=consul-version:nope")
        .await;
    assert_eq!(r.text, "[]");
    let r = a
        .get("/v1/catalog/nodes?filter=Node%20%3D%3D%20%22consul-server%22")
        .await;
    assert_eq!(r.json().as_array().unwrap().len(), 1, "{}", r.text);

    a.control
        .register(&json!({"Name": "web", "Port": 8080, "Connect": {"SidecarService": {}}}))
        .unwrap();
    let r = a.get("/v1/catalog/connect/web").await;
    let v = r.json();
    let ids: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["ServiceID"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["web-sidecar-proxy"]);
    assert_eq!(r.json()[0]["ServiceKind"], "connect-proxy");
}

#[tokio::test]
async fn agent_members_and_checks() {
    let a = plain();
    let r = a.get("/v1/agent/members").await;
    let m = r.json();
    assert_eq!(m[0]["Name"], "agent-sim");
    assert_eq!(m[1]["Tags"]["role"], "consul");
    assert_eq!(
        keys(&m[0]),
        vec![
            "Name",
            "Addr",
            "Port",
            "Tags",
            "Status",
            "ProtocolMin",
            "ProtocolMax",
            "ProtocolCur",
            "DelegateMin",
            "DelegateMax",
            "DelegateCur"
        ]
    );
    let tags = keys(&m[0]["Tags"]);
    let mut sorted = tags.clone();
    sorted.sort_unstable();
    assert_eq!(tags, sorted, "a Go map: sorted keys");

    a.control
        .register(&json!({"Name": "cache", "Port": 6379, "Check": {"TTL": "30s"}}))
        .unwrap();
    let r = a.get("/v1/agent/checks").await;
    assert_eq!(keys(&r.json()), vec!["serfHealth", "service:cache"]);
    assert_eq!(r.json()["service:cache"]["ServiceTags"], json!([]));
    let r = a
        .get("/v1/agent/checks?filter=ServiceName%20%3D%3D%20%22cache%22")
        .await;
    assert_eq!(keys(&r.json()), vec!["service:cache"], "{}", r.text);
}

#[tokio::test]
async fn agent_check_register_and_deregister() {
    let a = plain();
    a.control
        .register(&json!({"Name": "web", "Port": 80, "Tags": ["v1"]}))
        .unwrap();
    let r = a
        .put(
            "/v1/agent/check/register",
            r#"{"Name": "web-ttl", "ServiceID": "web", "TTL": "30s"}"#,
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (200, ""));
    let r = a
        .put(
            "/v1/agent/check/register",
            r#"{"ID": "disk", "Name": "Disk", "TTL": "1m", "Status": "passing"}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let checks = a.get("/v1/agent/checks").await.json();
    assert_eq!(
        keys(&checks),
        vec!["disk", "serfHealth", "web-ttl"],
        "ID defaults to Name"
    );
    assert_eq!(checks["web-ttl"]["ServiceName"], "web");
    assert_eq!(checks["web-ttl"]["ServiceTags"], json!(["v1"]));
    assert_eq!(checks["web-ttl"]["Status"], "critical");
    assert_eq!(checks["disk"]["Type"], "ttl");
    assert_eq!(checks["disk"]["ServiceID"], "");
    let r = a.get("/v1/health/service/web?passing").await;
    assert_eq!(r.text, "[]", "the new critical check makes web unhealthy");
    assert_eq!(a.put("/v1/agent/check/pass/web-ttl", "").await.status, 200);
    let r = a.get("/v1/health/service/web?passing").await;
    assert_eq!(r.json().as_array().unwrap().len(), 1);

    let r = a
        .put(
            "/v1/agent/check/register",
            r#"{"Name": "x", "ServiceID": "nope", "TTL": "1s"}"#,
        )
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (404, r#"ServiceID "nope" does not exist"#)
    );
    let r = a.put("/v1/agent/check/register", r#"{"TTL": "1s"}"#).await;
    assert_eq!((r.status, r.text.as_str()), (400, "Missing check name"));
    let r = a
        .put(
            "/v1/agent/check/register",
            r#"{"Name": "x", "TTL": "1s", "Status": "bogus"}"#,
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (400, "Bad check status"));

    assert_eq!(
        a.put("/v1/agent/check/deregister/web-ttl", "").await.status,
        200
    );
    let r = a.put("/v1/agent/check/deregister/web-ttl", "").await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(
        keys(&a.get("/v1/agent/checks").await.json()),
        vec!["disk", "serfHealth"]
    );
}

#[tokio::test]
async fn agent_self_omits_what_consul_omits_and_sorts_maps() {
    let a = plain();
    let r = a.get("/v1/agent/self").await;
    let v = r.json();
    assert!(
        v["Config"].get("Partition").is_none(),
        "Partition is omitempty (CE)"
    );
    assert!(
        v.get("xDS").is_none(),
        "xDS is omitempty (no gRPC port served here)"
    );
    let debug = keys(&v["DebugConfig"]);
    let mut sorted = debug.clone();
    sorted.sort_unstable();
    assert_eq!(debug, sorted, "DebugConfig is a map: sorted keys");
    assert_eq!(v["Member"]["ProtocolCur"], 2);
}

#[tokio::test]
async fn pretty_is_go_marshal_indent_and_html_is_escaped() {
    let a = plain();
    a.control
        .register(&json!({"Name": "web", "Port": 80, "Meta": {"z": "1", "a": "<b>&"}}))
        .unwrap();
    let r = a.get("/v1/agent/service/web?pretty").await;
    assert!(
        r.text.starts_with("{\n    \"ID\": \"web\",\n"),
        "{}",
        r.text
    );
    assert!(r.text.ends_with("}\n"));
    assert!(
        r.text.contains(
            "\"Meta\": {\n        \"a\": \"\\u003cb\\u003e\\u0026\",\n        \"z\": \"1\"\n    },"
        ),
        "{}",
        r.text
    );
    let r = a.get("/v1/agent/services").await;
    assert!(
        r.text
            .contains(r#""Meta":{"a":"\u003cb\u003e\u0026","z":"1"}"#),
        "{}",
        r.text
    );
    let r = a.get("/v1/agent/service/web?pretty").await;
    let hash = r
        .header("x-consul-contenthash")
        .unwrap_or_default()
        .to_owned();
    insta::assert_snapshot!("agent_service_pretty", r.text.replace(&hash, "HASH"));
}

#[tokio::test]
async fn authorize_with_an_unknown_token_is_consuls_403() {
    let a = app(builder().acls("root", DefaultPolicy::Deny));
    let body = json!({
        "Target": "db",
        "ClientCertURI": "spiffe://11111111-2222-3333-4444-555555555555.consul/ns/default/dc/dc1/svc/web",
        "ClientCertSerial": "01",
    })
    .to_string();
    let r = a
        .call(
            Method::POST,
            "/v1/agent/connect/authorize",
            Some("bogus"),
            Some(&body),
        )
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (403, "Could not resolve token to authorizer: ACL not found")
    );
}
