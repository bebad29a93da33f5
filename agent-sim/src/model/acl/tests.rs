//! Tests of token resolution, rule precedence and Consul's permission texts.

use super::*;

fn cfg(default: DefaultPolicy) -> AclConfig {
    AclConfig {
        enabled: true,
        default_policy: default,
        management_token: Some("root".into()),
        default_token: None,
    }
}

fn with_token(rules: &str) -> (AclConfig, Tokens) {
    let c = cfg(DefaultPolicy::Deny);
    let mut t = Tokens::new(&c);
    t.insert(Token {
        accessor_id: "acc-1".into(),
        secret_id: "s1".into(),
        description: String::new(),
        rules: Rules::parse(rules).unwrap(),
        management: false,
    });
    (c, t)
}

#[test]
fn hcl_and_json_rules_agree() {
    let hcl = r#"
        service "db" { policy = "write" }
        service "web" {
          policy = "read"
          intentions = "write"
        }
        service_prefix "" { policy = "read" }
        node_prefix "" { policy = "read" }
        mesh = "write"
    "#;
    let json = r#"{"service":{"db":{"policy":"write"},"web":{"policy":"read","intentions":"write"}},
        "service_prefix":{"":{"policy":"read"}},"node_prefix":{"":{"policy":"read"}},"mesh":"write"}"#;
    assert_eq!(Rules::parse(hcl).unwrap(), Rules::parse(json).unwrap());
}

#[test]
fn exact_beats_prefix_and_longest_prefix_wins() {
    let r = Rules::parse(
        r#"service_prefix "" { policy = "read" }
           service_prefix "ca" { policy = "write" }
           service "cab" { policy = "deny" }"#,
    )
    .unwrap();
    assert_eq!(r.service("db"), Some(Level::Read));
    assert_eq!(r.service("cache"), Some(Level::Write));
    assert_eq!(r.service("cab"), Some(Level::Deny));
    assert_eq!(
        r.intention("cache"),
        Some(Level::Read),
        "service write implies intentions read"
    );
    assert_eq!(r.intention("cab"), Some(Level::Deny));
}

#[test]
fn disabled_acls_allow_everything_and_ignore_tokens() {
    let c = AclConfig::default();
    let a = resolve(&c, &Tokens::default(), Some("no-such-token")).unwrap();
    assert!(a.allows(Resource::Service, "db", Level::Write));
}

#[test]
fn unknown_token_is_acl_not_found() {
    let (c, t) = with_token("");
    assert_eq!(
        resolve(&c, &t, Some("nope")).unwrap_err().to_string(),
        "ACL not found"
    );
}

#[test]
fn management_token_allows_all() {
    let (c, t) = with_token("");
    assert!(
        resolve(&c, &t, Some("root"))
            .unwrap()
            .allows(Resource::Mesh, "", Level::Write)
    );
}

#[test]
fn default_policy_applies_where_no_rule_matches() {
    let (mut c, t) = with_token(r#"service "db" { policy = "read" }"#);
    let deny = resolve(&c, &t, Some("s1")).unwrap();
    assert!(deny.allows(Resource::Service, "db", Level::Read));
    assert!(!deny.allows(Resource::Service, "db", Level::Write));
    assert!(!deny.allows(Resource::Service, "web", Level::Read));
    c.default_policy = DefaultPolicy::Allow;
    let allow = resolve(&c, &t, Some("s1")).unwrap();
    assert!(allow.allows(Resource::Service, "web", Level::Write));
    assert!(
        !allow.allows(Resource::Service, "db", Level::Write),
        "an explicit rule still limits"
    );
}

#[test]
fn permission_denied_texts() {
    let (c, t) = with_token("");
    let a = resolve(&c, &t, Some("s1")).unwrap();
    assert_eq!(
        a.require(Resource::Service, "web", Level::Write)
            .unwrap_err(),
        "Permission denied: token with AccessorID 'acc-1' lacks permission 'service:write' on \"web\""
    );
    let anon = resolve(&c, &t, None).unwrap();
    assert_eq!(
        anon.require(Resource::Service, "web", Level::Write)
            .unwrap_err(),
        "Permission denied: anonymous token lacks permission 'service:write' on \"web\". The anonymous token is used implicitly when a request does not specify a token."
    );
    assert_eq!(
        a.require(Resource::Mesh, "", Level::Write).unwrap_err(),
        "Permission denied: token with AccessorID 'acc-1' lacks permission 'mesh:write'"
    );
}

#[test]
fn default_token_is_used_when_none_given() {
    let (mut c, t) = with_token(r#"service "db" { policy = "write" }"#);
    c.default_token = Some("s1".into());
    assert!(
        resolve(&c, &t, None)
            .unwrap()
            .allows(Resource::Service, "db", Level::Write)
    );
}

#[test]
fn operator_implies_mesh_and_bad_rules_are_errors() {
    let r = Rules::parse(r#"operator = "write""#).unwrap();
    assert_eq!(r.mesh(), Some(Level::Write));
    assert!(Rules::parse(r#"service "db" { policy = "sometimes" }"#).is_err());
    assert!(Rules::parse(r#"bogus "x" { policy = "read" }"#).is_err());
    assert!(Rules::parse("{not json").is_err());
}
