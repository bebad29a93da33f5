//! The `mesh` config entry on the wire: `mesh:write` to write it, no token to read it, one entry
//! named `mesh` (get, list, 404 for any other name), blocking on the config-entries index, and
//! the permissive-mTLS gate it holds over service-defaults.

use std::time::Duration;

use agent_sim::acl::DefaultPolicy;
use axum::http::Method;
use serde_json::json;

use super::support::{App, app, builder};

fn secured() -> App {
    app(builder().acls("root", DefaultPolicy::Deny))
}

#[tokio::test]
async fn written_with_mesh_write_read_by_anyone_and_blocking() {
    let a = secured();
    let svc = a
        .control
        .create_token(r#"service "db" { policy = "write" }"#, "sidecar")
        .unwrap();
    let body = r#"{"Kind":"mesh","HTTP":{"SanitizeXForwardedClientCert":true}}"#;
    let r = a
        .call(Method::PUT, "/v1/config", Some(&svc.secret_id), Some(body))
        .await;
    assert_eq!(r.status, 403);
    assert!(
        r.text.ends_with("lacks permission 'mesh:write'"),
        "{}",
        r.text
    );
    let r = a
        .call(Method::PUT, "/v1/config", Some("root"), Some(body))
        .await;
    assert_eq!((r.status, r.text.as_str()), (200, "true"));

    let r = a
        .call(Method::GET, "/v1/config/mesh/mesh", None, None)
        .await;
    assert_eq!(r.status, 200, "no token needed: {}", r.text);
    let got = r.json();
    assert_eq!(got["Kind"], "mesh");
    assert_eq!(got["HTTP"], json!({"SanitizeXForwardedClientCert": true}));
    let index = r.index();
    assert!(index > 0);
    let r = a
        .call(Method::GET, "/v1/config/mesh", Some(&svc.secret_id), None)
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json().as_array().map(Vec::len), Some(1));
    let r = a
        .call(Method::GET, "/v1/config/mesh/other", None, None)
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.text, r#"Config entry not found for "mesh" / "other""#);

    // A blocking list read wakes on the next write of the entry.
    let uri = format!("/v1/config/mesh?index={index}&wait=10s");
    let blocked = a.call(Method::GET, &uri, None, None);
    let write = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let b = r#"{"Kind":"mesh","AllowEnablingPermissiveMutualTLS":true}"#;
        a.call(Method::PUT, "/v1/config", Some("root"), Some(b))
            .await
    };
    let (r, w) = tokio::join!(blocked, write);
    assert_eq!(w.status, 200);
    assert!(r.index() > index, "woken by the write");
    assert_eq!(r.json()[0]["AllowEnablingPermissiveMutualTLS"], true);

    // The gate: permissive is accepted now, refused once the mesh entry withdraws it (for a
    // service not yet permissive).
    let sd = |n: &str| {
        format!(r#"{{"Kind":"service-defaults","Name":"{n}","MutualTLSMode":"permissive"}}"#)
    };
    let r = a
        .call(Method::PUT, "/v1/config", Some("root"), Some(&sd("db")))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = a
        .call(
            Method::PUT,
            "/v1/config",
            Some("root"),
            Some(r#"{"Kind":"mesh"}"#),
        )
        .await;
    assert_eq!(r.status, 200);
    let r = a
        .call(Method::PUT, "/v1/config", Some("root"), Some(&sd("web")))
        .await;
    assert_eq!(r.status, 500);
    assert_eq!(
        r.text,
        "cannot set MutualTLSMode=permissive because AllowEnablingPermissiveMutualTLS=false in the mesh config entry"
    );
}
