//! Broken authorization against the reference, decision by decision.

use http::HeaderMap;

use crate::authz::{DefaultPolicy, HttpMatch, Intention, IntentionSet, Permission, RequestInfo};
use crate::sabotage::{Sabotage, Sabotages};
use crate::spiffe::ServiceId;

fn src(service: &str) -> ServiceId {
    ServiceId {
        trust_domain: "td.consul".into(),
        partition: "default".into(),
        namespace: "default".into(),
        datacenter: "dc1".into(),
        service: service.into(),
    }
}

/// (reference, sabotaged) L4 decisions for `source`.
fn l4(ixns: &[Intention], s: Sabotage, source: &str, default: DefaultPolicy) -> (bool, bool) {
    let good = IntentionSet::new("db", ixns.to_vec());
    let bad = IntentionSet::new("db", ixns.to_vec()).with_sabotage(Sabotages::from(s));
    (
        good.authorize_l4(&src(source), default).allowed,
        bad.authorize_l4(&src(source), default).allowed,
    )
}

fn with_index(mut i: Intention, modify_index: u64) -> Intention {
    i.modify_index = modify_index;
    i
}

#[test]
fn ignore_deny_allows_l4_denies_only() {
    let ixns = [
        Intention::l4("web", "db", true),
        Intention::l4("api", "db", false),
    ];
    let s = Sabotage::IgnoreDeny;
    assert_eq!(l4(&ixns, s, "api", DefaultPolicy::DENY), (false, true));
    assert_eq!(l4(&ixns, s, "web", DefaultPolicy::DENY), (true, true));
    assert_eq!(
        l4(&ixns, s, "other", DefaultPolicy::DENY),
        (false, false),
        "the default policy is not an intention"
    );
}

#[test]
fn hardcoded_allow_ignores_the_default_only_when_nothing_matches() {
    let ixns = [Intention::l4("api", "db", false)];
    let s = Sabotage::HardcodedAllow;
    assert_eq!(l4(&ixns, s, "web", DefaultPolicy::DENY), (false, true));
    assert_eq!(l4(&ixns, s, "api", DefaultPolicy::DENY), (false, false));
    assert_eq!(l4(&[], s, "web", DefaultPolicy::ALLOW), (true, true));
}

#[test]
fn first_match_lets_the_lowest_precedence_decide() {
    // web -> db deny (precedence 9) vs * -> db allow (8) vs * -> * deny (5).
    let wildcard = Intention::l4("*", "db", true);
    let everything = Intention::l4("*", "*", false);
    let ixns = [Intention::l4("web", "db", false), wildcard.clone()];
    assert_eq!(
        l4(&ixns, Sabotage::FirstMatch, "web", DefaultPolicy::DENY),
        (false, true)
    );
    let ixns = [wildcard, everything];
    assert_eq!(
        l4(&ixns, Sabotage::FirstMatch, "web", DefaultPolicy::DENY),
        (true, false)
    );
    assert_eq!(
        l4(&ixns[..1], Sabotage::FirstMatch, "web", DefaultPolicy::DENY),
        (true, true),
        "a single match decides either way"
    );
}

#[test]
fn last_write_wins_follows_modify_index() {
    let exact = with_index(Intention::l4("web", "db", false), 10);
    let wildcard = with_index(Intention::l4("*", "*", true), 20);
    let s = Sabotage::LastWriteWins;
    let ixns = [exact.clone(), wildcard.clone()];
    assert_eq!(l4(&ixns, s, "web", DefaultPolicy::DENY), (false, true));
    // Written in precedence order, the right one wins anyway.
    let ixns = [with_index(exact, 30), wildcard];
    assert_eq!(l4(&ixns, s, "web", DefaultPolicy::DENY), (false, false));
}

#[test]
fn ignore_permissions_treats_l7_intentions_as_allow() {
    let perms = vec![Permission {
        action: "allow".into(),
        http: Some(HttpMatch {
            path_prefix: Some("/public".into()),
            ..HttpMatch::default()
        }),
        jwt: None,
    }];
    let ixns = vec![Intention::l7("web", "db", perms)];
    let good = IntentionSet::new("db", ixns.clone());
    let bad = IntentionSet::new("db", ixns).with_sabotage(Sabotage::IgnorePermissions.into());
    let headers = HeaderMap::new();
    let req = |path| RequestInfo {
        jwt: &crate::jwt::NO_JWT,
        method: "GET",
        path,
        headers: &headers,
    };
    let d = DefaultPolicy::DENY;
    assert!(good.authorize_l7(&src("web"), &req("/public/x"), d).allowed);
    assert!(!good.authorize_l7(&src("web"), &req("/admin"), d).allowed);
    assert!(bad.authorize_l7(&src("web"), &req("/admin"), d).allowed);
    assert!(
        !good.authorize_l4(&src("web"), d).allowed,
        "L7 on L4 denies"
    );
    assert!(bad.authorize_l4(&src("web"), d).allowed);
    assert!(!bad.authorize_l7(&src("api"), &req("/public"), d).allowed);
}

#[test]
fn an_empty_set_changes_nothing() {
    let ixns = vec![
        Intention::l4("web", "db", true),
        Intention::l4("api", "db", false),
    ];
    let bad = IntentionSet::new("db", ixns).with_sabotage(Sabotages::NONE);
    for (who, allowed) in [("web", true), ("api", false), ("x", false)] {
        let d = bad.authorize_l4(&src(who), DefaultPolicy::DENY);
        assert_eq!(d.allowed, allowed, "{who}: {d}");
    }
}
