//! Exact CRUD of intentions (`/v1/connect/intentions/exact`): get, put (upsert into the
//! destination's entry) and delete, with their error texts.

use serde_json::json;

use super::tests::{put, store};
use super::*;
use crate::model::config_entry::{ConfigEntries, Kind};

#[test]
fn exact_crud() {
    let mut s = store();
    assert_eq!(
        exact_get(&s, "cache", "db"),
        Err(IntentionError::NotFound("Intention not found".into()))
    );
    assert_eq!(
        exact_get(&s, "web", "nothing"),
        Err(IntentionError::NotFound("Intention not found".into()))
    );

    exact_put(&mut s, "cache", "db", br#"{"SourceType":"consul","Action":"allow","Description":"d","CreatedAt":"0001-01-01T00:00:00Z","Meta":{"owner":"data"},"Permissions":null}"#, 40).unwrap();
    let got = exact_get(&s, "cache", "db").unwrap();
    assert_eq!(
        (
            got.action.as_str(),
            got.precedence,
            got.modify_index,
            got.create_index
        ),
        ("allow", 9, 40, 20)
    );
    exact_put(&mut s, "cache", "db", br#"{"action":"deny"}"#, 41).unwrap();
    assert_eq!(
        exact_get(&s, "cache", "db").unwrap().action,
        "deny",
        "same-name source replaced"
    );
    assert_eq!(matching(&s, MatchBy::Destination, "db").len(), 6);

    exact_put(&mut s, "web", "fresh", br#"{"Action":"allow"}"#, 42).unwrap();
    let fresh = s.get(Kind::ServiceIntentions, "fresh").unwrap();
    assert_eq!((fresh.create_index(), fresh.modify_index()), (42, 42));
    exact_delete(&mut s, "web", "fresh", 43).unwrap();
    assert!(
        s.get(Kind::ServiceIntentions, "fresh").is_none(),
        "the entry goes with its last source"
    );
    assert_eq!(s.max_index(), 43);
    exact_delete(&mut s, "web", "fresh", 44).unwrap();
    assert_eq!(s.max_index(), 43, "deleting an absent intention is a no-op");
    exact_delete(&mut s, "cache", "db", 45).unwrap();
    assert!(exact_get(&s, "cache", "db").is_err());
}

#[test]
fn exact_put_errors() {
    let mut s = store();
    let fail = |s: &mut ConfigEntries, src: &str, dst: &str, body: &str| {
        exact_put(s, src, dst, body.as_bytes(), 50)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        fail(
            &mut s,
            "web",
            "new",
            r#"{"Action":"allow","Meta":{"a":"b"}}"#
        ),
        "Meta must not be specified"
    );
    assert_eq!(
        fail(
            &mut s,
            "web",
            "db",
            r#"{"Action":"allow","Meta":{"a":"b"}}"#
        ),
        "Meta must not be specified, or should be unchanged during an update."
    );
    exact_put(
        &mut s,
        "web",
        "db",
        br#"{"Action":"allow","Meta":{"owner":"data"}}"#,
        51,
    )
    .unwrap();
    assert_eq!(
        fail(&mut s, "web", "new", r#"{"Foo":1}"#),
        r#"Request decode failed: json: unknown field "Foo""#
    );
    assert_eq!(fail(&mut s, "web", "new", ""), "Request decode failed: EOF");
    assert_eq!(
        fail(&mut s, "web", "new", r#"{"Action":"permit"}"#),
        "Sources[0].Action must be set to 'allow' or 'deny'"
    );
    put(
        &mut s,
        &json!({"Kind": "service-defaults", "Name": "new", "Protocol": "tcp"}),
        52,
    );
    assert_eq!(
        fail(
            &mut s,
            "web",
            "new",
            r#"{"Permissions":[{"Action":"allow","HTTP":{"PathPrefix":"/"}}]}"#
        ),
        r#"service "new" has protocol "tcp", which is incompatible with L7 intentions permissions"#
    );
    assert_eq!(
        fail(
            &mut s,
            "web",
            "new",
            r#"{"Action":"allow","SourcePeer":"p"}"#
        ),
        "SourcePeer field is not supported on this endpoint. Use config entries instead"
    );
    assert_eq!(
        fail(&mut s, "", "db", "{}"),
        "required query parameter 'source' not set"
    );
    assert_eq!(
        fail(&mut s, "web", "", "{}"),
        "required query parameter 'destination' not set"
    );
    assert_eq!(
        fail(&mut s, "peer:p/web", "db", "{}"),
        r#"source "peer:p/web" is invalid: cannot specify a peer here"#
    );
    assert!(
        s.get(Kind::ServiceIntentions, "new").is_none(),
        "failed writes leave no entry behind"
    );
}

#[test]
fn peered_sources_are_addressed_with_the_peer_prefix() {
    let mut s = ConfigEntries::new();
    put(
        &mut s,
        &json!({"Kind": "service-intentions", "Name": "db", "Sources": [
            {"Name": "web", "Peer": "east", "Action": "allow"}]}),
        7,
    );
    let got = exact_get(&s, "peer:east/web", "db").unwrap();
    assert_eq!(
        serde_json::to_string(&got.to_json()).unwrap(),
        r#"{"SourceNS":"default","SourceName":"web","DestinationNS":"default","DestinationName":"db","SourcePeer":"east","SourceType":"consul","Action":"allow","Precedence":9,"CreateIndex":7,"ModifyIndex":7}"#
    );
    assert_eq!(
        got.describe(),
        "peer(east)/default/web => default/db (Precedence: 9, Action: ALLOW)"
    );
    assert!(
        exact_get(&s, "web", "db").is_err(),
        "the local name is a different source"
    );
    let p = DefaultPolicy {
        intention_default: Some(Action::Deny),
        ..DefaultPolicy::default()
    };
    let local = authorize(&s, "db", "spiffe://td.consul/ns/default/dc/dc1/svc/web", &p);
    assert_eq!(
        local.unwrap().reason,
        "Default intention policy",
        "peered sources never match local callers"
    );
}
