//! `?filter=` on the wire: the three endpoints that take it keep exactly the items the
//! expression selects, a bad expression is Consul's 500, and filters key the agent cache and
//! survive blocking.

use std::time::Duration;

use agent_sim::acl::DefaultPolicy;
use serde_json::{Value, json};

use super::support::{App, app, builder, net};

const PREFIX: &str = "Failed to create boolean expression evaluator: ";

/// `?filter=<expr>`, form-encoded as clients send it.
fn filter(expr: &str) -> String {
    let enc: String = form_urlencoded::byte_serialize(expr.as_bytes()).collect();
    format!("filter={enc}")
}

/// Local `web` (with a v1 sidecar) and `db`; a v2 proxy for `web` on node n2.
fn seeded() -> App {
    let a = app(builder());
    let c = &a.control;
    c.register(
        &json!({"Name": "web", "Port": 8080, "Meta": {"version": "v1"},
        "Connect": {"SidecarService": {"Meta": {"version": "v1"}}}}),
    )
    .unwrap();
    c.register(&json!({"Name": "db", "Port": 9090, "Tags": ["primary"]}))
        .unwrap();
    c.catalog_register(&json!({"Node": "n2", "Address": "127.0.0.2", "Service": {
        "Kind": "connect-proxy", "ID": "web-proxy-2", "Service": "web-sidecar-proxy",
        "Port": 21000, "Meta": {"version": "v2"},
        "Proxy": {"DestinationServiceName": "web", "DestinationServiceID": "web"}}}))
        .unwrap();
    a
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

/// A hand-written model of what an expression keeps.
type Keep = fn(&Value) -> bool;

/// The items of an unfiltered array answer that satisfy `keep`.
fn expected(all: &Value, keep: impl Fn(&Value) -> bool) -> Value {
    Value::Array(
        all.as_array()
            .unwrap()
            .iter()
            .filter(|i| keep(i))
            .cloned()
            .collect(),
    )
}

#[tokio::test]
async fn agent_services_by_kind_tag_and_meta() {
    let a = seeded();
    let all = a.get("/v1/agent/services").await.json();
    assert_eq!(keys(&all), ["db", "web", "web-sidecar-proxy"]);
    let cases: [(&str, &[&str]); 4] = [
        (r#"Kind == "connect-proxy""#, &["web-sidecar-proxy"]),
        (r#"Kind == """#, &["db", "web"]),
        ("Tags contains primary", &["db"]),
        ("Meta.version == v1", &["web", "web-sidecar-proxy"]),
    ];
    for (expr, want) in cases {
        let r = a.get(&format!("/v1/agent/services?{}", filter(expr))).await;
        assert_eq!(r.status, 200, "{expr}: {}", r.text);
        let body = r.json();
        assert_eq!(keys(&body), want, "{expr}");
        for k in want {
            assert_eq!(body[k], all[k], "{expr}: items are returned unchanged");
        }
    }
}

#[tokio::test]
async fn health_connect_by_meta_node_and_checks() {
    let a = seeded();
    let all = a.get("/v1/health/connect/web").await.json();
    assert_eq!(all.as_array().unwrap().len(), 2);
    let cases: [(&str, Keep); 4] = [
        ("Service.Meta.version == v1", |e| {
            e["Service"]["Meta"]["version"] == "v1"
        }),
        ("Node.Node == n2", |e| e["Node"]["Node"] == "n2"),
        (
            r#"Service.ID != "web-proxy-2" and Service.Port == 21000"#,
            |e| e["Service"]["ID"] != "web-proxy-2" && e["Service"]["Port"] == 21000,
        ),
        ("Checks.Status == critical", |e| {
            e["Checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["Status"] == "critical")
        }),
    ];
    for (expr, keep) in cases {
        let r = a
            .get(&format!("/v1/health/connect/web?{}", filter(expr)))
            .await;
        assert_eq!(r.status, 200, "{expr}: {}", r.text);
        let want = expected(&all, keep);
        assert!(!want.as_array().unwrap().is_empty(), "{expr} selects some");
        assert_eq!(r.json(), want, "{expr}");
    }
    let v1 = a
        .get(&format!(
            "/v1/health/connect/web?{}",
            filter("Service.Meta.version == v1")
        ))
        .await
        .json();
    assert_eq!(v1[0]["Service"]["ID"], "web-sidecar-proxy");
    let none = a
        .get(&format!(
            "/v1/health/service/db?{}",
            filter("Node.Node == n2")
        ))
        .await;
    assert_eq!((none.status, none.text.as_str()), (200, "[]"));
}

#[tokio::test]
async fn catalog_service_by_service_meta() {
    let a = seeded();
    let all = a.get("/v1/catalog/service/web-sidecar-proxy").await.json();
    assert_eq!(all.as_array().unwrap().len(), 2);
    for (expr, keep) in [
        ("ServiceMeta.version == v2", "n2"),
        (r#"ServiceID == "web-sidecar-proxy""#, "agent-sim"),
    ] {
        let r = a
            .get(&format!(
                "/v1/catalog/service/web-sidecar-proxy?{}",
                filter(expr)
            ))
            .await;
        assert_eq!(r.status, 200, "{expr}: {}", r.text);
        assert_eq!(r.json(), expected(&all, |i| i["Node"] == keep), "{expr}");
    }
}

#[tokio::test]
async fn bad_filters_are_consuls_500() {
    let a = seeded();
    let syntax = format!(
        r#"{PREFIX}1:8 (7): no match found, expected: "-", "0", "\"", "`", [ \t\r\n], [1-9] or [a-zA-Z]"#
    );
    let cases = [
        ("/v1/agent/services", "Kind ==", syntax.clone()),
        ("/v1/health/connect/web", "Kind ==", syntax.clone()),
        ("/v1/catalog/service/web", "Kind ==", syntax),
        // Unknown fields fail before any data is looked at, even with nothing to filter.
        (
            "/v1/health/connect/nothing",
            "Foo == x",
            format!(r#"{PREFIX}Selector "Foo" is not valid"#),
        ),
        (
            "/v1/agent/services",
            "Datacenter == dc1",
            format!(r#"{PREFIX}Selector "Datacenter" is not valid"#),
        ),
        (
            "/v1/catalog/service/web",
            "CreateIndex == 1",
            format!(r#"{PREFIX}Selector "CreateIndex" is not valid"#),
        ),
        (
            "/v1/health/connect/web",
            "Service.Tags == v1",
            format!(r#"{PREFIX}Invalid match operator "Equal" for selector "Service.Tags""#),
        ),
        (
            "/v1/agent/services",
            "Port == http",
            format!(
                r#"{PREFIX}Failed to coerce value "http" for selector "Port": strconv.ParseInt: parsing "http": invalid syntax"#
            ),
        ),
    ];
    for (path, expr, want) in cases {
        let r = a.get(&format!("{path}?{}", filter(expr))).await;
        assert_eq!(
            (r.status, r.text.as_str()),
            (500, want.as_str()),
            "{path} {expr}"
        );
        assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    }
    // An empty filter is no filter.
    let r = a.get("/v1/agent/services?filter=").await;
    assert_eq!(keys(&r.json()), ["db", "web", "web-sidecar-proxy"]);
}

#[tokio::test]
async fn query_and_token_errors_come_before_the_filter() {
    let bad = filter("Kind ==");
    let a = seeded();
    let r = a
        .get(&format!("/v1/health/connect/web?index=abc&{bad}"))
        .await;
    assert_eq!((r.status, r.text.as_str()), (400, "Invalid index"));
    let secured = app(builder().acls("root", DefaultPolicy::Deny));
    for path in ["/v1/health/connect/web", "/v1/agent/services"] {
        let r = secured.get(&format!("{path}?token=bogus&{bad}")).await;
        assert_eq!(
            (r.status, r.text.as_str()),
            (403, "ACL not found"),
            "{path}"
        );
    }
}

#[tokio::test]
async fn filters_key_the_agent_cache() {
    let a = seeded();
    let get = |expr: &str| {
        let uri = format!("/v1/health/connect/web?cached&{}", filter(expr));
        let a = &a;
        async move { a.get(&uri).await }
    };
    let first = get("Node.Node == n2").await;
    assert_eq!(first.header("x-cache"), Some("MISS"));
    assert_eq!(first.json().as_array().unwrap().len(), 1);
    assert_eq!(get("Node.Node == n2").await.header("x-cache"), Some("HIT"));
    let other = get("Node.Node != n2").await;
    assert_eq!(other.header("x-cache"), Some("MISS"), "another filter");
    assert_eq!(other.json()[0]["Node"]["Node"], "agent-sim");
}

#[tokio::test]
async fn a_blocked_query_answers_filtered() {
    let n = net(builder()).await;
    n.control()
        .register(&json!({"Name": "web", "Port": 8080, "Connect": {"SidecarService": {}}}))
        .unwrap();
    let path = format!("/v1/health/connect/web?{}", filter("Node.Node == n3"));
    let first = n.get(&path).await.unwrap();
    assert_eq!(first.text, "[]");
    let blocked = tokio::spawn({
        let url = n.url(&format!("{path}&index={}&wait=60s", first.index()));
        let client = n.client.clone();
        async move { client.get(url).send().await.unwrap() }
    });
    n.control()
        .log()
        .wait_for(Duration::from_secs(10), |e| e.blocking)
        .await
        .unwrap();
    n.control()
        .catalog_register(&json!({"Node": "n3", "Address": "127.0.0.3", "Service": {
            "Kind": "connect-proxy", "ID": "web-proxy-3", "Service": "web-sidecar-proxy",
            "Port": 21000, "Proxy": {"DestinationServiceName": "web"}}}))
        .unwrap();
    let body: Value = blocked.await.unwrap().json().await.unwrap();
    let nodes: Vec<&Value> = body
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["Node"]["Node"])
        .collect();
    assert_eq!(nodes, [&json!("n3")]);
}
