//! The legacy by-ID intention API: create → `{"ID"}`, get/update/delete by ID, Consul's texts
//! and statuses, the refusal to edit a destination written through config entries, IDs only on
//! legacy intentions, and ACLs (`intention:write` on the destination, read on either end).

use agent_sim::acl::DefaultPolicy;
use axum::http::Method;

use super::support::{App, app, builder};

const WEB_DB: &str =
    r#"{"SourceName":"web","DestinationName":"db","Action":"allow","Meta":{"team":"a"}}"#;

async fn create(a: &App, body: &str) -> String {
    let r = a.post("/v1/connect/intentions", body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.json()["ID"].as_str().expect("ID").to_owned();
    assert_eq!(id.len(), 36, "{id}");
    assert_eq!(r.json().as_object().map(serde_json::Map::len), Some(1));
    id
}

#[tokio::test]
async fn create_get_update_delete_by_id() {
    let a = app(builder());
    let id = create(&a, WEB_DB).await;

    let r = a.get(&format!("/v1/connect/intentions/{id}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let ixn = r.json();
    assert_eq!(ixn["ID"], id.as_str());
    assert_eq!(ixn["SourceName"], "web");
    assert_eq!(ixn["DestinationName"], "db");
    assert_eq!(ixn["Action"], "allow");
    assert_eq!(ixn["Meta"]["team"], "a");
    let created = ixn["CreatedAt"].as_str().unwrap_or_default();
    assert!(
        time::OffsetDateTime::parse(created, &time::format_description::well_known::Rfc3339)
            .is_ok()
            && created.ends_with('Z'),
        "Go's RFC 3339 UTC time: {ixn}"
    );
    assert_eq!(ixn["UpdatedAt"], ixn["CreatedAt"]);
    let keys: Vec<&String> = ixn.as_object().unwrap().keys().collect();
    assert_eq!(keys[..3], ["CreatedAt", "UpdatedAt", "ID"], "{ixn}");

    // The list, exact and the config entry all see it; the entry keeps the legacy fields.
    let list = a.get("/v1/connect/intentions").await.json();
    assert_eq!(list[0]["ID"], id.as_str());
    let exact = a
        .get("/v1/connect/intentions/exact?source=web&destination=db")
        .await;
    assert_eq!(exact.json()["ID"], id.as_str());
    let entry = a.get("/v1/config/service-intentions/db").await.json();
    assert_eq!(entry["Sources"][0]["LegacyID"], id.as_str());

    // A second pair for the same destination; then a duplicate pair is refused.
    let id2 = create(
        &a,
        r#"{"SourceName":"api","DestinationName":"db","Action":"deny"}"#,
    )
    .await;
    assert_ne!(id, id2);
    let r = a.post("/v1/connect/intentions", WEB_DB).await;
    assert_eq!(r.status, 500);
    assert!(
        r.text.contains("defines \"web\" more than once"),
        "{}",
        r.text
    );

    // Update: the action changes, the destination may not.
    let body = r#"{"SourceName":"web","DestinationName":"db","Action":"deny"}"#;
    let r = a.put(&format!("/v1/connect/intentions/{id}"), body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["ID"], id.as_str());
    let r = a.get(&format!("/v1/connect/intentions/{id}")).await;
    assert_eq!(r.json()["Action"], "deny");
    let moved = r#"{"SourceName":"web","DestinationName":"cache","Action":"deny"}"#;
    let r = a.put(&format!("/v1/connect/intentions/{id}"), moved).await;
    assert_eq!(r.status, 500);
    assert_eq!(
        r.text,
        "Cannot modify Destination partition/namespace/name for an intention once it exists."
    );

    // Delete: gone (404 on get), the other stays; deleting again is Consul's 500.
    let r = a
        .call(
            Method::DELETE,
            &format!("/v1/connect/intentions/{id}"),
            None,
            None,
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (200, "true"));
    let r = a.get(&format!("/v1/connect/intentions/{id}")).await;
    assert_eq!((r.status, r.text.as_str()), (404, "Intention not found"));
    let r = a
        .call(
            Method::DELETE,
            &format!("/v1/connect/intentions/{id}"),
            None,
            None,
        )
        .await;
    assert_eq!(r.status, 500);
    assert_eq!(
        r.text,
        format!("Cannot delete non-existent intention: '{id}'")
    );
    let r = a.get(&format!("/v1/connect/intentions/{id2}")).await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn consuls_texts_for_bad_legacy_writes() {
    let a = app(builder());
    let r = a
        .post(
            "/v1/connect/intentions",
            r#"{"ID":"11111111-2222-3333-4444-555555555555","SourceName":"web","DestinationName":"db","Action":"allow"}"#,
        )
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (500, "ID must be empty when creating a new intention")
    );
    let r = a
        .post(
            "/v1/connect/intentions",
            r#"{"SourceName":"web","DestinationName":"db"}"#,
        )
        .await;
    assert_eq!(r.status, 500);
    assert_eq!(r.text, "Sources[0].Action must be set to 'allow' or 'deny'");
    let r = a
        .post(
            "/v1/connect/intentions",
            r#"{"SourceName":"web","DestinationName":"db","Action":"allow","DestinationPartition":"eu"}"#,
        )
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (
            400,
            "Cannot specify a destination partition with this endpoint"
        )
    );
    let r = a
        .post(
            "/v1/connect/intentions",
            r#"{"SourceName":"web","SourcePeer":"other","DestinationName":"db","Action":"allow"}"#,
        )
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (500, "Sources[0].Peer cannot be set by legacy intentions")
    );
    let r = a.post("/v1/connect/intentions", "{").await;
    assert_eq!(r.status, 500);
    assert!(
        r.text.starts_with("Failed to decode request body: "),
        "{}",
        r.text
    );
    let r = a.put("/v1/connect/intentions/nope", WEB_DB).await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (
            500,
            "Intention lookup failed: failed config entry lookup: UUID must be 36 characters"
        )
    );
    let absent = "11111111-2222-3333-4444-555555555555";
    let r = a
        .put(&format!("/v1/connect/intentions/{absent}"), WEB_DB)
        .await;
    assert_eq!(r.status, 500);
    assert_eq!(
        r.text,
        format!("Cannot modify non-existent intention: '{absent}'")
    );
    let r = a.get("/v1/connect/intentions/nope").await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (
            400,
            "failed config entry lookup: UUID must be 36 characters"
        )
    );
    let r = a
        .get("/v1/connect/intentions/gggggggg-2222-3333-4444-555555555555")
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.text,
        "failed config entry lookup: Invalid UUID: encoding/hex: invalid byte: U+0067 'g'"
    );
    let r = a.get(&format!("/v1/connect/intentions/{absent}")).await;
    assert_eq!((r.status, r.text.as_str()), (404, "Intention not found"));

    // A destination written through config entries has ID-less sources: the legacy API may
    // not edit it, and its intentions report no ID.
    let r = a
        .put(
            "/v1/config",
            r#"{"Kind":"service-intentions","Name":"db","Sources":[{"Name":"api","Action":"allow"}]}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let list = a.get("/v1/connect/intentions").await.json();
    assert!(list[0].get("ID").is_none(), "{list}");
    let r = a.post("/v1/connect/intentions", WEB_DB).await;
    assert_eq!(r.status, 500);
    assert_eq!(
        r.text,
        "cannot use legacy intention API to edit intentions with a destination of \"db\" after \
         editing them via a service-intentions config entry"
    );

    // A config-entry write over a legacy destination drops the IDs.
    let id = create(
        &a,
        r#"{"SourceName":"web","DestinationName":"cache","Action":"allow"}"#,
    )
    .await;
    let r = a
        .put(
            "/v1/connect/intentions/exact?source=api&destination=cache",
            r#"{"Action":"deny"}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = a.get(&format!("/v1/connect/intentions/{id}")).await;
    assert_eq!(r.status, 404, "{}", r.text);
}

#[tokio::test]
async fn legacy_api_checks_acls() {
    let a = app(builder().acls("root", DefaultPolicy::Deny));
    let writer = a
        .control
        .create_token(
            r#"service "db" {
 policy = "read"
 intentions = "write"
}"#,
            "",
        )
        .unwrap()
        .secret_id;
    let reader = a
        .control
        .create_token(r#"service "web" { policy = "read" }"#, "")
        .unwrap()
        .secret_id;
    let r = a
        .call(
            Method::POST,
            "/v1/connect/intentions",
            Some(&reader),
            Some(WEB_DB),
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (403, "Permission denied"));
    let r = a
        .call(
            Method::POST,
            "/v1/connect/intentions",
            Some(&writer),
            Some(WEB_DB),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.json()["ID"].as_str().unwrap().to_owned();
    let uri = format!("/v1/connect/intentions/{id}");
    let r = a.call(Method::GET, &uri, Some(&reader), None).await;
    assert_eq!(r.status, 200, "read on the source is enough: {}", r.text);
    let r = a.call(Method::GET, &uri, None, None).await;
    assert_eq!((r.status, r.text.as_str()), (403, "Permission denied"));
    let r = a.call(Method::DELETE, &uri, Some(&reader), None).await;
    assert_eq!((r.status, r.text.as_str()), (403, "Permission denied"));
    let r = a.call(Method::DELETE, &uri, Some(&writer), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
}
