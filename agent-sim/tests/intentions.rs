//! Property test: `authorize` and `check` agree with a naive model of Consul CE's intention
//! semantics written straight from the precedence table (reference §13), for random intention
//! sets (exact or `*` sources and destinations, allow/deny, some L7) and random pairs.

use std::collections::BTreeMap;

use agent_sim::config_entry::{ConfigEntries, decode_entry};
use agent_sim::intention::{Action, DefaultPolicy, authorize, check};
use proptest::prelude::*;
use serde_json::json;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Rule {
    Allow,
    Deny,
    L7,
}

/// One intention of the model: `None` means `*`.
#[derive(Clone, Debug)]
struct Ixn {
    src: Option<&'static str>,
    dst: Option<&'static str>,
    rule: Rule,
}

const NAMES: [&str; 3] = ["a", "b", "c"];

/// The precedence table of reference §13 for CE (namespaces always exact).
fn table_precedence(src_exact: bool, dst_exact: bool) -> u32 {
    match (src_exact, dst_exact) {
        (true, true) => 9,
        (false, true) => 8,
        (true, false) => 6,
        (false, false) => 5,
    }
}

/// Highest-precedence matching intention decides; L7 denies; nothing matches: default.
fn model(ixns: &[Ixn], src: &str, dst: &str, default_allow: bool) -> (bool, Option<Rule>) {
    let best = ixns
        .iter()
        .filter(|i| i.src.is_none_or(|s| s == src) && i.dst.is_none_or(|d| d == dst))
        .max_by_key(|i| table_precedence(i.src.is_some(), i.dst.is_some()));
    match best {
        Some(i) => (i.rule == Rule::Allow, Some(i.rule)),
        None => (default_allow, None),
    }
}

fn name_or_star() -> impl Strategy<Value = Option<&'static str>> {
    prop_oneof![
        Just(None),
        proptest::sample::select(NAMES.to_vec()).prop_map(Some)
    ]
}

fn rule() -> impl Strategy<Value = Rule> {
    prop_oneof![Just(Rule::Allow), Just(Rule::Deny), Just(Rule::L7)]
}

/// Random intentions, deduplicated per (source, destination) as Consul requires; L7 only on
/// exact destinations (Consul rejects it on `*`).
fn intention_set() -> impl Strategy<Value = Vec<Ixn>> {
    proptest::collection::vec((name_or_star(), name_or_star(), rule()), 0..12).prop_map(|raw| {
        let mut seen = BTreeMap::new();
        for (src, dst, rule) in raw {
            let rule = if dst.is_none() && rule == Rule::L7 {
                Rule::Deny
            } else {
                rule
            };
            seen.insert((src, dst), Ixn { src, dst, rule });
        }
        seen.into_values().collect()
    })
}

fn build(ixns: &[Ixn]) -> ConfigEntries {
    let mut store = ConfigEntries::new();
    let put = |s: &mut ConfigEntries, v: serde_json::Value, i: u64| {
        let entry = decode_entry(v.to_string().as_bytes()).expect("decodes");
        s.upsert(entry, None, i).expect("valid entry")
    };
    put(
        &mut store,
        json!({"Kind": "proxy-defaults", "Config": {"protocol": "http"}}),
        1,
    );
    let mut by_dst: BTreeMap<&str, Vec<serde_json::Value>> = BTreeMap::new();
    for i in ixns {
        let mut source = json!({"Name": i.src.unwrap_or("*")});
        match i.rule {
            Rule::Allow => source["Action"] = json!("allow"),
            Rule::Deny => source["Action"] = json!("deny"),
            Rule::L7 => {
                source["Permissions"] = json!([{"Action": "allow", "HTTP": {"PathPrefix": "/"}}]);
            }
        }
        by_dst.entry(i.dst.unwrap_or("*")).or_default().push(source);
    }
    for (n, (dst, sources)) in by_dst.into_iter().enumerate() {
        put(
            &mut store,
            json!({"Kind": "service-intentions", "Name": dst, "Sources": sources}),
            n as u64 + 2,
        );
    }
    store
}

fn uri(service: &str) -> String {
    format!("spiffe://11111111-2222-3333-4444-555555555555.consul/ns/default/dc/dc1/svc/{service}")
}

fn policy() -> impl Strategy<Value = DefaultPolicy> {
    let action = prop_oneof![
        Just(None),
        Just(Some(Action::Allow)),
        Just(Some(Action::Deny))
    ];
    (action, any::<bool>(), any::<bool>()).prop_map(
        |(intention_default, acl_enabled, acl_default_allow)| DefaultPolicy {
            intention_default,
            acl_enabled,
            acl_default_allow,
        },
    )
}

fn default_allows(p: &DefaultPolicy) -> bool {
    match p.intention_default {
        Some(a) => a == Action::Allow,
        None => !p.acl_enabled || p.acl_default_allow,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn authorize_and_check_agree_with_the_precedence_table(
        ixns in intention_set(),
        src in proptest::sample::select(vec!["a", "b", "c", "z"]),
        dst in proptest::sample::select(vec!["a", "b", "c", "z"]),
        p in policy(),
    ) {
        let store = build(&ixns);
        let (want, rule) = model(&ixns, src, dst, default_allows(&p));
        let got = authorize(&store, dst, &uri(src), &p).expect("authorize");
        prop_assert_eq!(got.allowed, want, "authorize {} -> {} with {:?}: {}", src, dst, ixns, got.reason);
        let expected_reason_prefix = match rule {
            Some(Rule::L7) => "Matched L7 intention: ",
            Some(_) => "Matched L4 intention: ",
            None if p.intention_default.is_some() => "Default intention policy",
            None => "Default behavior configured by ACLs",
        };
        prop_assert!(got.reason.starts_with(expected_reason_prefix), "{}", got.reason);
        prop_assert_eq!(check(&store, src, dst, None, &p).expect("check"), want, "check {} -> {}", src, dst);
    }
}
