//! Table tests of precedence, default policy and L7 permission matching, plus a proptest against
//! a naive model of Consul's decision.

use http::HeaderMap;
use proptest::prelude::*;

use super::*;

fn src(name: &str) -> ServiceId {
    ServiceId {
        trust_domain: "td.consul".into(),
        partition: "default".into(),
        namespace: "default".into(),
        datacenter: "dc1".into(),
        service: name.into(),
    }
}

fn ixn(sns: &str, sname: &str, dns: &str, dname: &str, allow: bool) -> Intention {
    Intention {
        source_ns: sns.into(),
        source_name: sname.into(),
        destination_ns: dns.into(),
        destination_name: dname.into(),
        action: if allow { "allow" } else { "deny" }.into(),
        ..Intention::default()
    }
}

#[test]
fn precedence_follows_consuls_table() {
    // (src ns, src name, dst ns, dst name) -> precedence, the 9 rows of §13.
    let rows = [
        ("default", "web", "default", "db", 9),
        ("default", "*", "default", "db", 8),
        ("*", "*", "default", "db", 7),
        ("default", "web", "default", "*", 6),
        ("default", "*", "default", "*", 5),
        ("*", "*", "default", "*", 4),
        ("default", "web", "*", "*", 3),
        ("default", "*", "*", "*", 2),
        ("*", "*", "*", "*", 1),
    ];
    for (sns, sn, dns, dn, want) in rows {
        assert_eq!(
            precedence(&ixn(sns, sn, dns, dn, true)),
            want,
            "{sns}/{sn} -> {dns}/{dn}"
        );
    }
}

#[test]
fn higher_precedence_decides_for_each_ce_pair() {
    // For each pair of CE rows (9, 8, 6, 5), the higher one decides whichever order they come in.
    let rows = [
        ("web", "db", 9),
        ("*", "db", 8),
        ("web", "*", 6),
        ("*", "*", 5),
    ];
    for (i, hi) in rows.iter().enumerate() {
        for lo in &rows[i + 1..] {
            for hi_allows in [true, false] {
                let set = IntentionSet::new(
                    "db",
                    vec![
                        Intention::l4(lo.0, lo.1, !hi_allows),
                        Intention::l4(hi.0, hi.1, hi_allows),
                    ],
                );
                let d = set.authorize_l4(&src("web"), DefaultPolicy::DENY);
                assert_eq!(d.allowed, hi_allows, "{hi:?} over {lo:?}: {d}");
                assert!(d.reason.contains(&format!("Precedence: {}", hi.2)), "{d}");
            }
        }
    }
}

#[test]
fn deny_wins_at_equal_precedence() {
    for order in [[true, false], [false, true]] {
        let set = IntentionSet::new(
            "db",
            order
                .iter()
                .map(|a| Intention::l4("web", "db", *a))
                .collect(),
        );
        assert!(!set.authorize_l4(&src("web"), DefaultPolicy::ALLOW).allowed);
    }
}

#[test]
fn default_policy_applies_when_nothing_matches() {
    let set = IntentionSet::new("db", vec![Intention::l4("web", "db", true)]);
    let d = set.authorize_l4(&src("api"), DefaultPolicy::DENY);
    assert_eq!(
        d,
        Decision {
            allowed: false,
            reason: "Default behavior configured by ACLs".into()
        }
    );
    let d = set.authorize_l4(&src("api"), DefaultPolicy::resolve("allow", true, "deny"));
    assert_eq!(
        d,
        Decision {
            allowed: true,
            reason: "Default intention policy".into()
        }
    );
    let empty = IntentionSet::new("db", vec![]);
    assert!(
        empty
            .authorize_l4(&src("web"), DefaultPolicy::ALLOW)
            .allowed
    );
    assert!(!empty.authorize_l4(&src("web"), DefaultPolicy::DENY).allowed);
}

#[test]
fn default_policy_resolution() {
    let r = DefaultPolicy::resolve;
    assert_eq!(
        r("", false, "deny"),
        DefaultPolicy::ALLOW,
        "ACLs off -> allow"
    );
    assert_eq!(r("", true, "deny"), DefaultPolicy::DENY);
    assert_eq!(r("", true, "allow"), DefaultPolicy::ALLOW);
    assert!(!r("deny", false, "allow").allow);
    assert_eq!(
        r("deny", false, "allow").source,
        DefaultPolicySource::IntentionPolicy
    );
    assert!(r("allow", true, "deny").allow);
}

#[test]
fn l4_reason_and_l7_on_l4_is_deny() {
    let set = IntentionSet::new("db", vec![Intention::l4("web", "db", true)]);
    assert_eq!(
        set.authorize_l4(&src("web"), DefaultPolicy::DENY).reason,
        "Matched L4 intention: default/web => default/db (Precedence: 9, Action: ALLOW)"
    );
    let perm = Permission {
        action: "allow".into(),
        http: Some(HttpMatch {
            path_prefix: Some("/".into()),
            ..HttpMatch::default()
        }),
        jwt: None,
    };
    let set = IntentionSet::new("db", vec![Intention::l7("web", "db", vec![perm])]);
    let d = set.authorize_l4(&src("web"), DefaultPolicy::ALLOW);
    assert!(!d.allowed);
    assert_eq!(
        d.reason,
        "Matched L7 intention: default/web => default/db (Precedence: 9, Permissions: 1)"
    );
}

#[test]
fn peers_other_namespaces_and_other_destinations_do_not_match() {
    let mut peer = Intention::l4("web", "db", false);
    peer.source_peer = "other".into();
    let set = IntentionSet::new("db", vec![peer, Intention::l4("web", "cache", false)]);
    assert!(set.authorize_l4(&src("web"), DefaultPolicy::ALLOW).allowed);

    let mut other_ns = src("web");
    other_ns.namespace = "team".into();
    let set = IntentionSet::new(
        "db",
        vec![
            Intention::l4("web", "db", true),
            ixn("*", "*", "default", "db", false),
        ],
    );
    assert!(!set.authorize_l4(&other_ns, DefaultPolicy::ALLOW).allowed);
    assert!(set.authorize_l4(&src("web"), DefaultPolicy::DENY).allowed);
}

// === L7 ===

fn perm(allow: bool, http: HttpMatch) -> Permission {
    Permission {
        action: if allow { "allow" } else { "deny" }.into(),
        http: Some(http),
        jwt: None,
    }
}

fn hdr(name: &str, f: impl FnOnce(&mut HeaderMatch)) -> HeaderMatch {
    let mut h = HeaderMatch {
        name: name.into(),
        ..HeaderMatch::default()
    };
    f(&mut h);
    h
}

fn l7_decide(perms: Vec<Permission>, method: &str, path: &str, headers: &[(&str, &str)]) -> bool {
    let set = IntentionSet::new("db", vec![Intention::l7("web", "db", perms)]);
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        map.append(
            http::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    let req = RequestInfo {
        jwt: &crate::jwt::NO_JWT,
        method,
        path,
        headers: &map,
    };
    set.authorize_l7(&src("web"), &req, DefaultPolicy::DENY)
        .allowed
}

#[test]
fn l7_permission_table() {
    let exact = HttpMatch {
        path_exact: Some("/x".into()),
        ..HttpMatch::default()
    };
    let prefix = HttpMatch {
        path_prefix: Some("/api/".into()),
        ..HttpMatch::default()
    };
    let regex = HttpMatch {
        path_regex: Some("/v[0-9]+/item".into()),
        ..HttpMatch::default()
    };
    let methods = HttpMatch {
        methods: vec!["GET".into(), "HEAD".into()],
        ..HttpMatch::default()
    };
    let with_header = |h: HeaderMatch| HttpMatch {
        header: vec![h],
        ..HttpMatch::default()
    };
    let present = with_header(hdr("x-a", |h| h.present = true));
    let h_exact = with_header(hdr("x-a", |h| h.exact = Some("Yes".into())));
    let h_exact_ic = with_header(hdr("x-a", |h| {
        h.exact = Some("Yes".into());
        h.ignore_case = true;
    }));
    let h_prefix = with_header(hdr("x-a", |h| h.prefix = Some("ab".into())));
    let h_suffix = with_header(hdr("x-a", |h| h.suffix = Some("yz".into())));
    let h_contains = with_header(hdr("x-a", |h| h.contains = Some("mid".into())));
    let h_regex = with_header(hdr("x-a", |h| h.regex = Some("[0-9]{3}".into())));
    let h_invert = with_header(hdr("x-a", |h| {
        h.exact = Some("bad".into());
        h.invert = true;
    }));
    let h_not_present = with_header(hdr("x-a", |h| {
        h.present = true;
        h.invert = true;
    }));

    #[rustfmt::skip]
    type Case<'a> = (&'a str, &'a HttpMatch, &'a str, &'a str, Vec<(&'a str, &'a str)>, bool);
    let cases: Vec<Case<'_>> = vec![
        ("exact hit", &exact, "GET", "/x", vec![], true),
        ("exact miss longer", &exact, "GET", "/x/y", vec![], false),
        ("prefix hit", &prefix, "POST", "/api/v1", vec![], true),
        ("prefix miss", &prefix, "GET", "/apix", vec![], false),
        ("regex full match", &regex, "GET", "/v12/item", vec![], true),
        (
            "regex is anchored",
            &regex,
            "GET",
            "/v1/item/extra",
            vec![],
            false,
        ),
        ("method hit", &methods, "HEAD", "/anything", vec![], true),
        (
            "method miss",
            &methods,
            "DELETE",
            "/anything",
            vec![],
            false,
        ),
        ("present hit", &present, "GET", "/", vec![("x-a", "")], true),
        ("present miss", &present, "GET", "/", vec![], false),
        (
            "header name is case-insensitive",
            &h_exact,
            "GET",
            "/",
            vec![("X-A", "Yes")],
            true,
        ),
        (
            "exact is case-sensitive",
            &h_exact,
            "GET",
            "/",
            vec![("x-a", "yes")],
            false,
        ),
        (
            "exact ignore-case",
            &h_exact_ic,
            "GET",
            "/",
            vec![("x-a", "yES")],
            true,
        ),
        ("prefix", &h_prefix, "GET", "/", vec![("x-a", "abc")], true),
        (
            "prefix miss",
            &h_prefix,
            "GET",
            "/",
            vec![("x-a", "cab")],
            false,
        ),
        ("suffix", &h_suffix, "GET", "/", vec![("x-a", "xyz")], true),
        (
            "contains",
            &h_contains,
            "GET",
            "/",
            vec![("x-a", "amidst")],
            true,
        ),
        ("regex", &h_regex, "GET", "/", vec![("x-a", "123")], true),
        (
            "regex anchored",
            &h_regex,
            "GET",
            "/",
            vec![("x-a", "1234")],
            false,
        ),
        (
            "invert: other value matches",
            &h_invert,
            "GET",
            "/",
            vec![("x-a", "good")],
            true,
        ),
        (
            "invert: the value does not",
            &h_invert,
            "GET",
            "/",
            vec![("x-a", "bad")],
            false,
        ),
        (
            "invert: absent header matches",
            &h_invert,
            "GET",
            "/",
            vec![],
            true,
        ),
        (
            "not present: absent",
            &h_not_present,
            "GET",
            "/",
            vec![],
            true,
        ),
        (
            "not present: present",
            &h_not_present,
            "GET",
            "/",
            vec![("x-a", "1")],
            false,
        ),
    ];
    for (name, m, method, path, headers, want) in cases {
        // An allow permission: a match allows, no match falls to default deny.
        let got = l7_decide(vec![perm(true, m.clone())], method, path, &headers);
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn l7_first_match_wins_and_falls_through_to_default() {
    let admin = HttpMatch {
        path_prefix: Some("/admin".into()),
        ..HttpMatch::default()
    };
    let all_get = HttpMatch {
        path_prefix: Some("/".into()),
        methods: vec!["GET".into()],
        ..HttpMatch::default()
    };
    let perms = vec![perm(false, admin), perm(true, all_get)];
    assert!(!l7_decide(perms.clone(), "GET", "/admin/x", &[]));
    assert!(l7_decide(perms.clone(), "GET", "/public", &[]));
    // No permission matches: default (deny here), not lower-precedence intentions.
    let set = IntentionSet::new(
        "db",
        vec![
            Intention::l7("web", "db", perms),
            Intention::l4("*", "db", true),
        ],
    );
    let map = HeaderMap::new();
    let post = RequestInfo {
        jwt: &crate::jwt::NO_JWT,
        method: "POST",
        path: "/public",
        headers: &map,
    };
    let d = set.authorize_l7(&src("web"), &post, DefaultPolicy::DENY);
    assert!(!d.allowed, "{d}");
    assert!(
        set.authorize_l7(&src("web"), &post, DefaultPolicy::ALLOW)
            .allowed
    );
    // Other sources are governed by the L4 wildcard.
    assert!(
        set.authorize_l7(&src("api"), &post, DefaultPolicy::DENY)
            .allowed
    );
}

#[test]
fn intentions_decode_from_match_api_json() {
    let body = r#"[{"SourceNS":"default","SourceName":"web","DestinationNS":"default",
        "DestinationName":"db","SourceType":"consul","Permissions":[{"Action":"deny",
        "HTTP":{"PathPrefix":"/admin","Methods":null,"Header":[{"Name":"x","Present":true}]}}],
        "Precedence":9,"CreateIndex":23,"ModifyIndex":23}]"#;
    let v: Vec<Intention> = serde_json::from_str(body).unwrap();
    assert_eq!(v[0].permissions.len(), 1);
    assert!(
        v[0].permissions[0]
            .http
            .as_ref()
            .unwrap()
            .methods
            .is_empty()
    );
    assert_eq!(v[0].action, "");
}

// === property: decision equals a naive model ===

#[derive(Debug, Clone, Copy)]
enum Kind {
    Allow,
    Deny,
    L7,
}

fn arb_intention() -> impl Strategy<Value = (usize, usize, Kind)> {
    (
        0..3usize,
        0..2usize,
        prop_oneof![Just(Kind::Allow), Just(Kind::Deny), Just(Kind::L7)],
    )
}

const SOURCES: [&str; 3] = ["web", "api", "*"];
const DESTS: [&str; 2] = ["db", "*"];

fn naive(set: &[(usize, usize, Kind)], source: &str, default_allow: bool) -> bool {
    // CE precedence: exact/exact 9, */exact 8, exact/* 6, */* 5.
    let prec = |s: &str, d: &str| match (s == "*", d == "*") {
        (false, false) => 9,
        (true, false) => 8,
        (false, true) => 6,
        (true, true) => 5,
    };
    let matching: Vec<(u8, Kind)> = set
        .iter()
        .filter(|(s, _, _)| SOURCES[*s] == "*" || SOURCES[*s] == source)
        .map(|(s, d, k)| (prec(SOURCES[*s], DESTS[*d]), *k))
        .collect();
    let Some(top) = matching.iter().map(|(p, _)| *p).max() else {
        return default_allow;
    };
    matching
        .iter()
        .filter(|(p, _)| *p == top)
        .all(|(_, k)| matches!(k, Kind::Allow))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn decision_matches_naive_model(
        set in proptest::collection::vec(arb_intention(), 0..8),
        source in 0..3usize,
        default_allow: bool,
    ) {
        let source = ["web", "api", "other"][source];
        let intentions = set.iter().map(|(s, d, k)| match k {
            Kind::Allow => Intention::l4(SOURCES[*s], DESTS[*d], true),
            Kind::Deny => Intention::l4(SOURCES[*s], DESTS[*d], false),
            Kind::L7 => Intention::l7(SOURCES[*s], DESTS[*d], vec![perm(true, HttpMatch {
                path_prefix: Some("/".into()), ..HttpMatch::default() })]),
        }).collect();
        let default = if default_allow { DefaultPolicy::ALLOW } else { DefaultPolicy::DENY };
        let got = IntentionSet::new("db", intentions).authorize_l4(&src(source), default);
        prop_assert_eq!(got.allowed, naive(&set, source, default_allow), "{}", got);
    }
}
