//! The embedded catalogue: every file loads and validates, every table row of scenarios.md
//! (core, l7, extended) has its scenario, and the claims (`catches`) are well formed.

use std::collections::BTreeSet;

use super::*;
use crate::model::{Profile, Step};
use crate::names::BROKEN_BEHAVIOURS;
use crate::{expand, validate, validate_all};

/// Every row of the core, l7 and extended tables of shared/design/scenarios.md, by profile.
/// `default-policy` (two runs: deny, then allow) is two files; `precedence-table` is three.
const EXPECTED: &[(&str, &[&str])] = &[
    (
        "core",
        &[
            "l4-allow-deny",
            "default-policy-deny",
            "default-policy-allow",
            // One table row, three files of four phases each (run in parallel).
            "precedence-table-9v8-9v6",
            "precedence-table-9v5-6v5",
            "precedence-table-8v6-8v5",
            "precedence-property",
            "intention-change",
            "spiffe-validation",
            "trust-domain-check",
            "served-identity",
            "ca-intermediate-chain",
            "ca-key-types",
            "ca-rotation",
            "ca-rotation-key-type",
            "ca-rotation-no-cross-sign",
            "leaf-renewal",
            "persistent-connection",
            "fail-static-agent-down",
            "fail-static-agent-hung",
            "fail-static-servers-down",
            "upstream-basic",
            "upstream-impostor",
            "upstream-health",
            "agent-blocking",
            "index-reset",
            "unrelated-change-keeps-connections",
        ],
    ),
    (
        "l7",
        &[
            "l7-path-method-header",
            "l7-change-on-keepalive",
            "l7-default-deny-fallthrough",
            "l7-grpc-method",
            "l7-http2-multiplexed-change",
            "l7-grpc-upstream",
        ],
    ),
    (
        "extended",
        &[
            "config-change",
            "discovery-chain-redirect",
            "discovery-chain-failover",
            "agent-restart",
            "agent-restart-policy",
            "acl-token-file",
            "prepared-query-upstream",
            "l4-only-chain",
            "ipv6-endpoints",
            "inbound-connection-limit",
            "inbound-local-request-timeout",
            "token-without-intentions-read",
            "token-without-service-read",
            "authorize-cert-serial",
            "ca-without-spiffe-san",
            "agent-tls",
        ],
    ),
    (
        "transparent",
        &[
            "tproxy-outbound-virtual-ip",
            "tproxy-outbound-deny-unknown",
            "tproxy-inbound-capture",
            "tproxy-no-loop",
            "tproxy-exclusions",
            "uds-local-app",
            "uds-upstream",
            "hostname-endpoint",
        ],
    ),
    (
        "l7-traffic",
        &[
            "traffic-change-on-keepalive",
            "traffic-lb-hash",
            "traffic-lb-least-request",
            "traffic-limits",
            "traffic-passive-health",
            "traffic-retries",
            "traffic-retry-connect-failure",
            "traffic-rewrite-headers",
            "traffic-route-matches",
            "traffic-split-weights",
            "traffic-subsets",
            "traffic-timeouts",
        ],
    ),
    (
        "security",
        &[
            "jwt-forward-payload",
            "jwt-inline-jwks",
            "jwt-remote-jwks",
            "jwt-verify-claims",
            "l7-path-normalization",
            "mesh-request-normalization",
            "mesh-xfcc",
            "mesh-tls-versions",
            "mesh-destinations-only",
            "mesh-permissive-mtls",
            "mesh-tls-outgoing",
        ],
    ),
];

fn profile_name(p: Profile) -> &'static str {
    match p {
        Profile::Core => "core",
        Profile::L7 => "l7",
        Profile::Extended => "extended",
        Profile::Transparent => "transparent",
        Profile::L7Traffic => "l7-traffic",
        Profile::Security => "security",
    }
}

#[test]
fn every_file_parses_and_validates() {
    for (path, text) in catalogue_files() {
        let s = parse(path, text).unwrap_or_else(|e| panic!("{e}"));
        validate(&s).unwrap_or_else(|e| panic!("{path}: {e}"));
        // The file sits at catalogue/<profile>/<id>.toml.
        assert_eq!(
            path,
            format!("catalogue/{}/{}.toml", profile_name(s.profile), s.id),
            "file path must name the profile and id"
        );
    }
    assert_eq!(
        catalogue().len(),
        catalogue_files().len(),
        "no file left out"
    );
}

#[test]
fn every_table_row_has_a_scenario_and_nothing_else_is_there() {
    let got: BTreeSet<(String, String)> = catalogue()
        .iter()
        .map(|s| (profile_name(s.profile).to_owned(), s.id.clone()))
        .collect();
    let want: BTreeSet<(String, String)> = EXPECTED
        .iter()
        .flat_map(|(p, ids)| ids.iter().map(|id| ((*p).to_owned(), (*id).to_owned())))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn ids_are_unique_and_ordered_by_profile_then_id() {
    let all = catalogue();
    validate_all(&all).unwrap();
    let keys: Vec<(Profile, String)> = all.iter().map(|s| (s.profile, s.id.clone())).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
}

#[test]
fn every_scenario_but_trust_domain_check_claims_a_broken_behaviour() {
    // Informational scenarios record what a proxy does; nothing in them can fail but a control.
    const INFORMATIONAL: [&str; 2] = ["trust-domain-check", "authorize-cert-serial"];
    for s in catalogue() {
        if INFORMATIONAL.contains(&s.id.as_str()) {
            assert!(s.catches.is_empty(), "{} is informational", s.id);
            continue;
        }
        assert!(!s.catches.is_empty(), "{} catches nothing", s.id);
    }
}

#[test]
fn every_broken_behaviour_is_caught_by_some_scenario() {
    let claimed: BTreeSet<String> = catalogue()
        .into_iter()
        .flat_map(|s| s.catches)
        .map(|c| c.sabotage)
        .collect();
    for name in BROKEN_BEHAVIOURS {
        assert!(claimed.contains(*name), "no scenario catches {name}");
    }
}

#[test]
fn the_model_derive_reads_the_files_the_same_way() {
    // The loader goes through path-preserving mirrors of the model; the model's own derive must
    // agree on every file (so the mirrors have not drifted).
    for (path, text) in catalogue_files() {
        let derived: Scenario = toml::from_str(text).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(derived, parse(path, text).unwrap(), "{path}");
    }
}

#[test]
fn generated_scenarios_expand_to_valid_concrete_ones() {
    for s in catalogue().iter().filter(|s| s.generate.is_some()) {
        for seed in [0, 1, 42, u64::MAX] {
            let e = expand(s, seed);
            assert!(e.generate.is_none());
            validate(&e).unwrap_or_else(|err| panic!("{} seed {seed}: {err}", s.id));
            assert!(e.steps.len() > s.steps.len());
        }
    }
}

#[test]
fn checks_that_wait_for_something_to_stop_observe_for_a_while() {
    // A refused probe after an intention change (or a fault), observed once, could pass on a
    // proxy that flaps; so could an open connection seen once after a change that a broken proxy
    // reacts to a moment later. Spot-check the scenarios whose catalogue row is about stopping
    // (or about something that must not stop).
    let stable = |id: &str| {
        catalogue()
            .into_iter()
            .find(|s| s.id == id)
            .map(|s| {
                s.steps
                    .iter()
                    .filter(|st| matches!(st, Step::Expect(e) if e.stable_for.is_some()))
                    .count()
            })
            .unwrap_or(0)
    };
    for id in [
        "intention-change",
        "fail-static-agent-down",
        "fail-static-agent-hung",
        "fail-static-servers-down",
        "upstream-health",
        "upstream-impostor",
        "index-reset",
        "unrelated-change-keeps-connections",
    ] {
        assert!(stable(id) > 0, "{id} has no stable_for check");
    }
}
