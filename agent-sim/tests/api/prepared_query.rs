//! `/v1/query`: wire shapes (snapshots), Consul's validation texts and statuses, ACL rules
//! (`query` prefix, redacted tokens, the token captured in the query), templates, execute
//! filters, and the no-blocking rule.

use agent_sim::acl::DefaultPolicy;
use axum::http::Method;
use serde_json::{Value, json};

use super::support::{App, app, builder};
use crate::assert_wire;

fn instance(a: &App, id: &str, status: &str, tags: &[&str], zone: &str) {
    a.control
        .catalog_register(&json!({
            "Node": format!("node-{id}"), "Address": "127.0.0.2",
            "NodeMeta": {"rack": "r1"},
            "Service": {"Kind": "connect-proxy", "ID": id, "Service": "cache-sidecar-proxy",
                        "Port": 21000, "Tags": tags, "Meta": {"zone": zone},
                        "Proxy": {"DestinationServiceName": "cache"}},
            "Check": {"CheckID": format!("{id}-health"), "Name": "h", "Status": status, "ServiceID": id},
        }))
        .unwrap();
}

async fn create(a: &App, token: Option<&str>, body: &str) -> String {
    let r = a.call(Method::POST, "/v1/query", token, Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()["ID"].as_str().unwrap().to_owned()
}

fn ids(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v["Nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["Service"]["ID"].as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn create_read_list_update_delete() {
    let a = app(builder());
    let id = create(&a, None, r#"{"Name":"geo-cache","Service":{"Service":"cache","Tags":["primary"]},"DNS":{"TTL":"10s"}}"#).await;
    let r = a.get(&format!("/v1/query/{id}")).await;
    assert_eq!(r.status, 200);
    let index = r.index();
    assert_wire!("query_read", r.json());
    let list = a.get("/v1/query").await;
    assert_eq!(list.json().as_array().unwrap().len(), 1);
    let r = a
        .put(
            &format!("/v1/query/{id}"),
            r#"{"ID":"ignored","Name":"geo-cache","Service":{"Service":"cache2"}}"#,
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (200, ""));
    let r = a.get(&format!("/v1/query/{id}")).await;
    assert_eq!(r.json()[0]["Service"]["Service"], "cache2");
    assert_eq!(r.json()[0]["ID"], id.as_str(), "the ID comes from the URL");
    assert!(r.json()[0]["ModifyIndex"].as_u64() > r.json()[0]["CreateIndex"].as_u64());
    assert!(r.index() > index);
    let r = a
        .call(Method::DELETE, &format!("/v1/query/{id}"), None, None)
        .await;
    assert_eq!(r.status, 200);
    let r = a.get(&format!("/v1/query/{id}")).await;
    assert_eq!((r.status, r.text.as_str()), (404, "Query not found"));
    assert_eq!(
        a.get("/v1/query").await.text,
        "[]",
        "an empty list, not null"
    );
}

#[tokio::test]
async fn validation_errors_and_statuses() {
    let a = app(builder());
    let cases = [
        ("", 400, "Request decode failed: EOF"),
        ("{", 400, "Request decode failed: unexpected EOF"),
        (
            r#"{"ID":"x","Name":"q","Service":{"Service":"db"}}"#,
            500,
            "ID must be empty when creating a new prepared query",
        ),
        (
            r#"{"Service":{"Service":"db"}}"#,
            500,
            "Invalid prepared query: Must be bound to a session",
        ),
        (
            r#"{"Name":"q"}"#,
            500,
            "Invalid prepared query: Must provide a Service name to query",
        ),
        (
            r#"{"Name":"q","Service":{"Service":"db","Failover":{"NearestN":-2}}}"#,
            500,
            "Invalid prepared query: Bad NearestN '-2', must be >= 0",
        ),
        (
            r#"{"Name":"q","Session":"s1","Service":{"Service":"db"}}"#,
            500,
            "raft apply failed: invalid session \"s1\"",
        ),
        (
            r#"{"Name":"t","Template":{"Type":"bogus"},"Service":{"Service":"db"}}"#,
            500,
            "raft apply failed: failed compiling template: Bad Template.Type 'bogus'",
        ),
        (
            r#"{"Name":"t","Template":{"Type":"name_prefix_match"},"Service":{"Service":"${nope}"}}"#,
            500,
            "raft apply failed: failed compiling template: Bad evaluation for '${nope}' in Service.Service: 1:3: unknown variable accessed: nope",
        ),
    ];
    for (body, status, text) in cases {
        let r = a.call(Method::POST, "/v1/query", None, Some(body)).await;
        assert_eq!((r.status, r.text.as_str()), (status, text), "{body}");
    }
    create(&a, None, r#"{"Name":"Q1","Service":{"Service":"db"}}"#).await;
    let r = a
        .post("/v1/query", r#"{"Name":"q1","Service":{"Service":"db"}}"#)
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (
            500,
            "raft apply failed: name 'q1' aliases an existing query name"
        )
    );
    let r = a
        .put(
            "/v1/query/8f246b77-f3e1-ff88-5b48-8ec93abf3e05",
            r#"{"Name":"x","Service":{"Service":"db"}}"#,
        )
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (
            500,
            "Cannot modify non-existent prepared query: '8f246b77-f3e1-ff88-5b48-8ec93abf3e05'"
        )
    );
    let r = a.get("/v1/query/nope/execute").await;
    assert_eq!((r.status, r.text.as_str()), (404, "Query not found"));
    let r = a.get("/v1/query/q1/execute?limit=x").await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (
            500,
            "Bad limit: strconv.Atoi: parsing \"x\": invalid syntax"
        )
    );
    let r = a
        .call(Method::POST, "/v1/query/q1/execute", None, None)
        .await;
    assert_eq!(
        (r.status, r.header("allow")),
        (405, Some("OPTIONS,GET,PUT,DELETE"))
    );
    let r = a.put("/v1/query/q1/execute", "").await;
    assert_eq!((r.status, r.header("allow")), (405, Some("GET")));
    let r = a.call(Method::PATCH, "/v1/query", None, None).await;
    assert_eq!(
        (r.status, r.header("allow")),
        (405, Some("OPTIONS,GET,POST"))
    );
}

#[tokio::test]
async fn execute_filters_and_shape() {
    let a = app(builder());
    instance(&a, "cache-1", "passing", &["primary"], "a");
    instance(&a, "cache-2", "warning", &["primary"], "b");
    instance(&a, "cache-3", "critical", &["primary"], "a");
    instance(&a, "cache-4", "passing", &["canary"], "a");
    create(
        &a,
        None,
        r#"{"Name":"all","Service":{"Service":"cache","Connect":true}}"#,
    )
    .await;
    create(&a, None, r#"{"Name":"passing","Service":{"Service":"cache","Connect":true,"OnlyPassing":true,"Tags":["!canary"]}}"#).await;
    create(&a, None, r#"{"Name":"ignore","Service":{"Service":"cache","IgnoreCheckIDs":["cache-3-health"],"ServiceMeta":{"zone":"a"},"NodeMeta":{"rack":"r1"}}}"#).await;
    let r = a.get("/v1/query/all/execute").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        ids(&r.json()),
        ["cache-1", "cache-2", "cache-4"],
        "critical dropped"
    );
    assert_eq!(r.header("x-consul-index"), Some("1"));
    let mut one = r.json();
    one["Nodes"] = json!([]);
    assert_wire!("query_execute_empty_nodes", one);
    assert_eq!(
        ids(&a.get("/v1/query/passing/execute").await.json()),
        ["cache-1"]
    );
    // Without Connect the query asks for instances of `cache` itself: none; with ?connect=true
    // the sidecars (as Consul's proxycfg asks).
    assert_eq!(
        ids(&a.get("/v1/query/ignore/execute").await.json()),
        Vec::<String>::new()
    );
    assert_eq!(
        ids(&a
            .get("/v1/query/ignore/execute?connect=true&near=_agent")
            .await
            .json()),
        ["cache-1", "cache-3", "cache-4"]
    );
    let r = a.get("/v1/query/all/execute?limit=1").await;
    assert_eq!(r.json()["Nodes"].as_array().unwrap().len(), 1);
    // Not blocking: ?index answers at once.
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        a.get("/v1/query/all/execute?index=999999&wait=60s"),
    )
    .await
    .expect("execute does not block");
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn templates_and_explain() {
    let a = app(builder());
    instance(&a, "cache-1", "passing", &["v1"], "a");
    let id = create(
        &a,
        None,
        r#"{"Name":"geo-","Template":{"Type":"name_prefix_match","Regexp":"^geo-([a-z]+)-(v[0-9])$"},
            "Service":{"Service":"${match(1)}","Connect":true,"Tags":["${match(2)}"]}}"#,
    )
    .await;
    let r = a.get("/v1/query/geo-cache-v1/explain").await;
    assert_eq!(r.status, 200);
    assert_wire!("query_explain_template", r.json());
    assert_eq!(
        ids(&a.get("/v1/query/GEO-cache-v1/execute").await.json()),
        Vec::<String>::new(),
        "regexp is case-sensitive"
    );
    assert_eq!(
        ids(&a.get("/v1/query/geo-cache-v1/execute").await.json()),
        ["cache-1"]
    );
    assert_eq!(
        ids(&a.get("/v1/query/geo-cache-v2/execute").await.json()),
        Vec::<String>::new()
    );
    let r = a.get(&format!("/v1/query/{id}/execute")).await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (
            500,
            "prepared query templates can only be resolved up by name, not by ID"
        )
    );
    // The stored form is the template itself.
    assert_eq!(
        a.get(&format!("/v1/query/{id}")).await.json()[0]["Service"]["Service"],
        "${match(1)}"
    );
}

#[tokio::test]
async fn acl_rules_and_captured_token() {
    let a = app(builder().acls("root", DefaultPolicy::Deny));
    instance(&a, "cache-1", "passing", &[], "a");
    let writer = a
        .control
        .create_token(r#"query_prefix "geo-" { policy = "write" }"#, "w")
        .unwrap();
    let reader = a
        .control
        .create_token(r#"query "geo-cache" { policy = "read" }"#, "r")
        .unwrap();
    let svc_reader = a
        .control
        .create_token(
            "service_prefix \"\" { policy = \"read\" }\nnode_prefix \"\" { policy = \"read\" }",
            "s",
        )
        .unwrap();
    // Writing needs query:write on the name.
    let r = a
        .call(
            Method::POST,
            "/v1/query",
            Some(&writer.secret_id),
            Some(r#"{"Name":"other","Service":{"Service":"cache"}}"#),
        )
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.text,
        format!(
            "Permission denied: token with AccessorID '{}' lacks permission 'query:write' on \"other\"",
            writer.accessor_id
        )
    );
    // A query capturing the service reader's token.
    let body = format!(
        r#"{{"Name":"geo-cache","Token":"{}","Service":{{"Service":"cache","Connect":true}}}}"#,
        svc_reader.secret_id
    );
    let id = create(&a, Some(&writer.secret_id), &body).await;
    create(
        &a,
        Some("root"),
        r#"{"Name":"geo-plain","Service":{"Service":"cache","Connect":true}}"#,
    )
    .await;
    // Readers without management rights see the token redacted; management sees it.
    let r = a
        .call(
            Method::GET,
            &format!("/v1/query/{id}"),
            Some(&reader.secret_id),
            None,
        )
        .await;
    assert_eq!(r.json()[0]["Token"], "<hidden>");
    let r = a
        .call(Method::GET, &format!("/v1/query/{id}"), Some("root"), None)
        .await;
    assert_eq!(r.json()[0]["Token"], svc_reader.secret_id.as_str());
    // Reading a named query needs query:read.
    let r = a
        .call(
            Method::GET,
            &format!("/v1/query/{id}"),
            Some(&svc_reader.secret_id),
            None,
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (403, "Permission denied"));
    let r = a
        .call(Method::GET, "/v1/query", Some(&reader.secret_id), None)
        .await;
    assert_eq!(
        r.json().as_array().unwrap().len(),
        1,
        "only what the token may read"
    );
    assert_eq!(r.header("x-consul-results-filtered-by-acls"), Some("true"));
    // Executing uses the captured token: an anonymous caller still gets the instances...
    assert_eq!(
        ids(&a.get("/v1/query/geo-cache/execute").await.json()),
        ["cache-1"]
    );
    // ...while a query without one runs with the caller's (anonymous: nothing readable).
    let r = a.get("/v1/query/geo-plain/execute").await;
    assert_eq!(ids(&r.json()), Vec::<String>::new());
    assert_eq!(r.json()["ResultsFilteredByACLs"], true);
    // Deleting needs query:write on the stored name.
    let r = a
        .call(
            Method::DELETE,
            &format!("/v1/query/{id}"),
            Some(&reader.secret_id),
            None,
        )
        .await;
    assert_eq!(r.status, 403);
    let r = a
        .call(
            Method::GET,
            "/v1/query/geo-cache/explain",
            Some(&svc_reader.secret_id),
            None,
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (403, "Permission denied"));
}
