//! ACLs on the wire: where tokens come from, Consul's 403 texts, and what each endpoint needs.

use agent_sim::acl::DefaultPolicy;
use axum::http::{Method, Request};
use serde_json::json;

use super::support::{App, app, builder};

fn secured(default: DefaultPolicy) -> App {
    app(builder().acls("root", default))
}

#[tokio::test]
async fn token_sources_and_texts() {
    let a = secured(DefaultPolicy::Deny);
    let t = a
        .control
        .create_token(r#"service "db" { policy = "write" }"#, "sidecar")
        .unwrap();
    let leaf = "/v1/agent/connect/ca/leaf/db";
    assert_eq!(
        a.call(Method::GET, leaf, Some(&t.secret_id), None)
            .await
            .status,
        200,
        "X-Consul-Token"
    );
    assert_eq!(
        a.get(&format!("{leaf}?token={}", t.secret_id)).await.status,
        200,
        "?token="
    );
    let req = Request::get(leaf).header("Authorization", format!("Bearer {}", t.secret_id));
    let r = tower::ServiceExt::oneshot(
        a.router.clone(),
        req.body(axum::body::Body::empty()).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200, "Authorization: Bearer");

    let r = a.call(Method::GET, leaf, Some("bogus"), None).await;
    assert_eq!((r.status, r.text.as_str()), (403, "ACL not found"));
    let r = a
        .call(
            Method::GET,
            "/v1/agent/connect/ca/leaf/web",
            Some(&t.secret_id),
            None,
        )
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.text,
        format!(
            "Permission denied: token with AccessorID '{}' lacks permission 'service:write' on \"web\"",
            t.accessor_id
        )
    );
    let r = a.get(leaf).await;
    assert_eq!(
        r.text,
        "Permission denied: anonymous token lacks permission 'service:write' on \"db\". The anonymous token is used implicitly when a request does not specify a token."
    );
    assert_eq!(r.header("x-consul-default-acl-policy"), Some("deny"));
}

#[tokio::test]
async fn endpoint_permissions() {
    let a = secured(DefaultPolicy::Deny);
    let reader = a
        .control
        .create_token(r#"service_prefix "" { policy = "read" }"#, "")
        .unwrap();
    let r = a
        .call(Method::GET, "/v1/health/connect/db", None, None)
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (403, "Permission denied"),
        "health is a bare 403"
    );
    let r = a
        .call(
            Method::GET,
            "/v1/health/connect/db",
            Some(&reader.secret_id),
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    let r = a
        .call(
            Method::GET,
            "/v1/connect/intentions/match?by=destination&name=db",
            Some(&reader.secret_id),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "service read implies intentions read");
    let body = r#"{"Kind":"proxy-defaults","Name":"global","Config":{}}"#;
    let r = a
        .call(
            Method::PUT,
            "/v1/config",
            Some(&reader.secret_id),
            Some(body),
        )
        .await;
    assert_eq!(r.status, 403);
    assert!(
        r.text.ends_with("lacks permission 'mesh:write'"),
        "{}",
        r.text
    );
    assert_eq!(
        a.call(Method::PUT, "/v1/config", Some("root"), Some(body))
            .await
            .status,
        200
    );
    let r = a
        .call(Method::GET, "/v1/agent/connect/ca/roots", None, None)
        .await;
    assert_eq!(r.status, 200, "roots need no token");
    let reg = r#"{"Name":"db","Port":1,"Connect":{"SidecarService":{}}}"#;
    let r = a
        .call(
            Method::PUT,
            "/v1/agent/service/register",
            Some(&reader.secret_id),
            Some(reg),
        )
        .await;
    assert_eq!(r.status, 403);
}

#[tokio::test]
async fn default_allow_and_authorize_default_reason() {
    let a = secured(DefaultPolicy::Allow);
    let td = a.control.trust_domain();
    let body = json!({"Target": "db", "ClientCertURI": format!("spiffe://{td}/ns/default/dc/dc1/svc/web")}).to_string();
    let r = a
        .call(
            Method::POST,
            "/v1/agent/connect/authorize",
            None,
            Some(&body),
        )
        .await;
    assert_eq!(
        r.json(),
        json!({"Authorized": true, "Reason": "Default behavior configured by ACLs"})
    );
    let d = secured(DefaultPolicy::Deny);
    let r = d
        .call(
            Method::POST,
            "/v1/agent/connect/authorize",
            Some("root"),
            Some(&body),
        )
        .await;
    assert_eq!(
        r.json(),
        json!({"Authorized": false, "Reason": "Default behavior configured by ACLs"})
    );
    let i = app(builder().default_intention_policy(agent_sim::config::IntentionDefault::Deny));
    let r = i
        .call(
            Method::POST,
            "/v1/agent/connect/authorize",
            None,
            Some(&body),
        )
        .await;
    assert_eq!(
        r.json(),
        json!({"Authorized": false, "Reason": "Default intention policy"})
    );
}

#[tokio::test]
async fn control_api_requires_the_management_token() {
    // Default allow is the lenient case: even there an anonymous request may not drive the sim.
    for default in [DefaultPolicy::Allow, DefaultPolicy::Deny] {
        let a = secured(default);
        let ordinary = a
            .control
            .create_token(r#"service_prefix "" { policy = "write" }"#, "sidecar")
            .unwrap();
        for (path, method) in [
            ("/_sim/faults", Method::GET),
            ("/_sim/ca/rotate", Method::POST),
            ("/_sim/forge", Method::POST),
            ("/_sim/no-such-endpoint", Method::GET),
        ] {
            let r = a.call(method.clone(), path, None, None).await;
            assert_eq!(r.status, 403, "anonymous {method} {path}: {}", r.text);
            assert!(r.text.contains("the anonymous token"), "{}", r.text);
            let r = a
                .call(method.clone(), path, Some(&ordinary.secret_id), None)
                .await;
            assert_eq!(r.status, 403, "ordinary token {method} {path}: {}", r.text);
            assert!(
                r.text.contains("requires the management token"),
                "{}",
                r.text
            );
            let r = a.call(method.clone(), path, Some("bogus"), None).await;
            assert_eq!((r.status, r.text.as_str()), (403, "ACL not found"));
        }
        let roots_before = a.control.root_pems().len();
        let r = a
            .call(Method::POST, "/_sim/ca/rotate", Some("root"), None)
            .await;
        assert_eq!(r.status, 200, "management token: {}", r.text);
        assert_eq!(a.control.root_pems().len(), roots_before + 1, "rotated");
        let r = a.get("/_sim/faults?token=root").await;
        assert_eq!(r.status, 200, "?token= works too");
    }
}

#[tokio::test]
async fn control_port_requires_the_management_token_too() {
    let n = super::support::net(
        builder()
            .acls("root", DefaultPolicy::Allow)
            .control_bind("127.0.0.1:0".parse().unwrap()),
    )
    .await;
    let url = format!("http://{}/_sim/faults", n.sim.control_addr().unwrap());
    let r = n.client.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 403);
    let r = n
        .client
        .get(&url)
        .header("X-Consul-Token", "root")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}
