//! Intention JSON and match snapshots, sort order, authorize/check reasons and default policy,
//! match query errors and exact CRUD.

use serde_json::{Value, json};

use super::*;
use crate::model::config_entry::{ConfigEntries, decode_entry};

const TD: &str = "11111111-2222-3333-4444-555555555555.consul";

fn uri(service: &str) -> String {
    format!("spiffe://{TD}/ns/default/dc/dc1/svc/{service}")
}

pub(super) fn put(s: &mut ConfigEntries, v: &Value, index: u64) {
    s.upsert(decode_entry(v.to_string().as_bytes()).unwrap(), None, index)
        .unwrap();
}

/// db: web allow (9), api L7 (9), * deny (8); api: web deny (9); *: web allow (6), * deny (5).
pub(super) fn store() -> ConfigEntries {
    let mut s = ConfigEntries::new();
    put(
        &mut s,
        &json!({"Kind": "proxy-defaults", "Config": {"protocol": "http"}}),
        1,
    );
    put(
        &mut s,
        &json!({"Kind": "service-intentions", "Name": "db", "Meta": {"owner": "data"}, "Sources": [
            {"Name": "*", "Action": "deny"},
            {"Name": "web", "Action": "allow", "Description": "frontend reads"},
            {"Name": "api", "Permissions": [
                {"Action": "deny", "HTTP": {"PathPrefix": "/admin"}},
                {"Action": "allow", "HTTP": {"PathPrefix": "/", "Methods": ["GET"]}}]}]}),
        20,
    );
    put(
        &mut s,
        &json!({"Kind": "service-intentions", "Name": "api", "Sources": [{"Name": "web", "Action": "deny"}]}),
        21,
    );
    put(
        &mut s,
        &json!({"Kind": "service-intentions", "Name": "*", "Sources": [
            {"Name": "*", "Action": "deny"}, {"Name": "web", "Action": "allow"}]}),
        22,
    );
    s
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

fn pairs(ixns: &[Intention]) -> Vec<String> {
    ixns.iter()
        .map(|i| format!("{}->{} {}", i.source_name, i.destination_name, i.precedence))
        .collect()
}

#[test]
fn intention_json() {
    let s = store();
    let web = exact_get(&s, "web", "db").unwrap();
    insta::assert_snapshot!(
        "intention_l4",
        serde_json::to_string(&web.to_json()).unwrap()
    );
    let api = exact_get(&s, "api", "db").unwrap();
    insta::assert_snapshot!(
        "intention_l7",
        serde_json::to_string_pretty(&api.to_json()).unwrap()
    );
}

#[test]
fn match_json_mix() {
    let s = store();
    let by_dest = match_json(&s, MatchBy::Destination, &names(&["db", "default/api"]));
    insta::assert_snapshot!(
        "match_by_destination",
        serde_json::to_string_pretty(&by_dest).unwrap()
    );
    let mut only_db = ConfigEntries::new();
    put(
        &mut only_db,
        &json!({"Kind": "service-intentions", "Name": "db", "Sources": [{"Name": "web", "Action": "allow"}]}),
        5,
    );
    let mixed = match_json(&only_db, MatchBy::Source, &names(&["web", "db"]));
    assert_eq!(
        serde_json::to_string(&mixed).unwrap(),
        r#"{"db":null,"web":[{"SourceNS":"default","SourceName":"web","DestinationNS":"default","DestinationName":"db","SourceType":"consul","Action":"allow","Precedence":9,"CreateIndex":5,"ModifyIndex":5}]}"#,
        "a Go map: names in sorted order, not request order"
    );
    assert_eq!(
        match_json(&ConfigEntries::new(), MatchBy::Destination, &names(&["db"])),
        json!({"db": null})
    );
}

#[test]
fn match_sort_order_with_wildcard_ties() {
    let s = store();
    assert_eq!(
        pairs(&matching(&s, MatchBy::Destination, "db")),
        ["api->db 9", "web->db 9", "*->db 8", "web->* 6", "*->* 5"]
    );
    // Two precedence-8 intentions tie on the `*` source and break on the destination name.
    let mut t = store();
    put(
        &mut t,
        &json!({"Kind": "service-intentions", "Name": "api", "Sources": [
        {"Name": "web", "Action": "deny"}, {"Name": "*", "Action": "allow"}]}),
        30,
    );
    assert_eq!(
        pairs(&matching(&t, MatchBy::Source, "web")),
        [
            "web->api 9",
            "web->db 9",
            "*->api 8",
            "*->db 8",
            "web->* 6",
            "*->* 5"
        ]
    );
    // `*` (0x2A) sorts before letters when precedences are equal.
    let mk = |src: &str| Intention {
        source_name: src.into(),
        destination_name: "db".into(),
        precedence: 9,
        ..Intention::default()
    };
    let mut v = vec![mk("b"), mk("*"), mk("a")];
    sort_intentions(&mut v);
    assert_eq!(pairs(&v), ["*->db 9", "a->db 9", "b->db 9"]);
}

fn policy(
    intention_default: Option<Action>,
    acl_enabled: bool,
    acl_default_allow: bool,
) -> DefaultPolicy {
    DefaultPolicy {
        intention_default,
        acl_enabled,
        acl_default_allow,
    }
}

#[test]
fn authorize_reasons() {
    let s = store();
    let p = policy(None, false, true);
    let auth = |target: &str, src: &str| authorize(&s, target, &uri(src), &p).unwrap();
    assert_eq!(
        auth("db", "web"),
        Decision {
            allowed: true,
            reason:
                "Matched L4 intention: default/web => default/db (Precedence: 9, Action: ALLOW)"
                    .into()
        }
    );
    assert_eq!(
        auth("db", "api"),
        Decision {
            allowed: false,
            reason:
                "Matched L7 intention: default/api => default/db (Precedence: 9, Permissions: 2)"
                    .into()
        }
    );
    assert_eq!(
        auth("db", "other"),
        Decision {
            allowed: false,
            reason: "Matched L4 intention: default/* => default/db (Precedence: 8, Action: DENY)"
                .into()
        }
    );
    assert_eq!(
        auth("api", "web").reason,
        "Matched L4 intention: default/web => default/api (Precedence: 9, Action: DENY)"
    );
    assert_eq!(
        auth("cache", "web"),
        Decision {
            allowed: true,
            reason: "Matched L4 intention: default/web => default/* (Precedence: 6, Action: ALLOW)"
                .into()
        }
    );
    assert_eq!(
        auth("cache", "x").reason,
        "Matched L4 intention: default/* => default/* (Precedence: 5, Action: DENY)"
    );
    // A non-default namespace never matches CE intentions: default policy.
    let other_ns = format!("spiffe://{TD}/ns/team/dc/dc1/svc/web");
    assert_eq!(
        authorize(&s, "db", &other_ns, &p).unwrap().reason,
        "Default behavior configured by ACLs"
    );
}

#[test]
fn default_policy_rules() {
    let empty = ConfigEntries::new();
    let decide = |p: DefaultPolicy| authorize(&empty, "db", &uri("web"), &p).unwrap();
    let cases = [
        (
            policy(Some(Action::Allow), true, false),
            true,
            "Default intention policy",
        ),
        (
            policy(Some(Action::Deny), false, true),
            false,
            "Default intention policy",
        ),
        (
            policy(None, false, false),
            true,
            "Default behavior configured by ACLs",
        ),
        (
            policy(None, true, true),
            true,
            "Default behavior configured by ACLs",
        ),
        (
            policy(None, true, false),
            false,
            "Default behavior configured by ACLs",
        ),
    ];
    for (p, allowed, reason) in cases {
        assert_eq!(
            decide(p),
            Decision {
                allowed,
                reason: reason.into()
            },
            "{p:?}"
        );
        assert_eq!(
            check(&empty, "web", "db", None, &p),
            Ok(allowed),
            "check uses the same rules: {p:?}"
        );
    }
}

#[test]
fn authorize_errors() {
    let s = store();
    let p = DefaultPolicy::default();
    let err = |target: &str, u: &str| authorize(&s, target, u, &p).unwrap_err();
    assert_eq!(
        err("", &uri("web")),
        IntentionError::BadRequest("Target service must be specified".into())
    );
    let not_connect =
        IntentionError::BadRequest("ClientCertURI not a valid Connect identifier".into());
    assert_eq!(err("db", ""), not_connect);
    assert_eq!(
        err("db", "https://x/ns/default/dc/dc1/svc/web"),
        not_connect
    );
    assert_eq!(err("db", &format!("spiffe://{TD}/svc/web")), not_connect);
    assert_eq!(
        err("db", &format!("spiffe://{TD}/agent/client/dc/dc1/id/node1")),
        IntentionError::BadRequest("ClientCertURI not a valid Service identifier".into())
    );
    assert_eq!(
        err(
            "db",
            &format!("spiffe://{TD}/ap/p1/ns/default/dc/dc1/svc/web")
        ),
        IntentionError::BadRequest(r#"Mismatched partitions: "p1" != "default""#.into())
    );
}

#[test]
fn check_decisions_and_errors() {
    let s = store();
    let p = policy(None, true, true);
    assert_eq!(check(&s, "web", "db", None, &p), Ok(true));
    assert_eq!(
        check(&s, "api", "db", Some("consul"), &p),
        Ok(false),
        "L7 counts as deny"
    );
    assert_eq!(check(&s, "x", "db", None, &p), Ok(false));
    assert_eq!(check(&s, "web", "cache", None, &p), Ok(true));
    let internal = |s: &str| Err(IntentionError::Internal(s.into()));
    assert_eq!(
        check(&s, "web", "db", Some("ext"), &p),
        internal(r#"unsupported SourceType: "ext""#)
    );
    assert_eq!(
        check(&s, "a/b/c/d", "db", None, &p),
        internal(r#"source "a/b/c/d" is invalid: input can contain at most two '/'"#)
    );
    assert_eq!(
        check(&s, "web", "peer:x/db", None, &p),
        internal(r#"destination "peer:x/db" is invalid: cannot specify a peer here"#)
    );
    assert_eq!(
        check(&s, "ns1/web", "db", None, &p),
        internal(r#"Invalid source namespace "ns1": Namespaces is a Consul Enterprise feature"#)
    );
    assert_eq!(
        check(&s, "web", "ns2/db", None, &p),
        internal(
            r#"Invalid destination namespace "ns2": Namespaces is a Consul Enterprise feature"#
        )
    );
}

#[test]
fn match_query_errors() {
    let err =
        |by: Option<&str>, n: &[&str]| parse_match_query(by, &names(n)).unwrap_err().to_string();
    assert_eq!(err(None, &["db"]), "required query parameter 'by' not set");
    assert_eq!(
        err(Some("both"), &["db"]),
        "'by' parameter must be one of 'source' or 'destination'"
    );
    assert_eq!(
        err(Some("source"), &[]),
        "required query parameter 'name' not set"
    );
    assert_eq!(
        err(Some("source"), &["a/b/c/d"]),
        r#"name "a/b/c/d" is invalid: input can contain at most two '/'"#
    );
    assert_eq!(
        err(Some("source"), &["peer:p/web"]),
        r#"name "peer:p/web" is invalid: cannot specify a peer here"#
    );
    assert_eq!(
        err(Some("destination"), &["db", "ns1/web", "x/y/z/w"]),
        r#"name "x/y/z/w" is invalid: input can contain at most two '/'"#,
        "every name is parsed before namespaces are checked"
    );
    assert_eq!(
        err(Some("destination"), &["ns1/web"]),
        r#"Invalid match entry namespace "ns1": Namespaces is a Consul Enterprise feature"#
    );
    assert_eq!(
        err(Some("destination"), &["p1/default/web"]),
        r#"Invalid match entry partition "p1": Partitions is a Consul Enterprise feature"#
    );
    let ok = parse_match_query(
        Some("destination"),
        &names(&["db", "default/api", "default/default/web"]),
    )
    .unwrap();
    assert_eq!(ok, (MatchBy::Destination, names(&["db", "api", "web"])));
}
