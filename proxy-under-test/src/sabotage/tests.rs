//! Sabotage tests: the fixed names, the set, the `--sabotage` flag; the behaviours themselves
//! against the reference in `tests/` (authorization, data plane, agent usage, endpoints).

mod agent;
mod authz;
mod chain;
mod dataplane;
mod drop_on_change;
mod endpoints;
mod h2;
mod normalize;
mod outbound;
mod routing;
mod transparent;

use super::*;
use crate::cli::parse_args;

/// The names the scenario catalogue uses, verbatim.
const CATALOGUE: [&str; 73] = [
    "ignore-deny",
    "authorize-by-cn",
    "hardcoded-allow",
    "first-match",
    "last-write-wins",
    "cache-intentions-forever",
    "accept-any-trusted-cert",
    "skip-expiry-check",
    "serve-self-signed",
    "never-refresh-certs",
    "leaf-fetched-once",
    "never-recheck-open",
    "fail-closed-agent-down",
    "fail-open-agent-down",
    "authorize-via-agent",
    "drop-state-on-error",
    "no-client-cert",
    "skip-upstream-identity",
    "resolve-endpoints-once",
    "tight-polling",
    "missing-token",
    "stall-after-index-reset",
    "ignore-permissions",
    "authorize-per-connection",
    "ignore-config-changes",
    "ignore-discovery-chain",
    "ignore-token-file",
    "ignore-original-dst",
    "forward-unknown",
    "ignore-implicit-upstreams",
    "reject-hostname-endpoints",
    "ignore-app-socket",
    "drop-on-change",
    "ignore-grpc-paths",
    "drop-trailers",
    "p256-only",
    "leaf-without-chain",
    "roots-only-verification",
    "policy-on-timer",
    "raw-path-authz",
    "ignore-routes",
    "ignore-splits",
    "ignore-subsets",
    "no-retries",
    "retry-unbounded",
    "ignore-timeouts",
    "ignore-prefix-rewrite",
    "ignore-header-manipulation",
    "ignore-limits",
    "no-outlier-detection",
    "ignore-hash-policy",
    "stale-routes",
    "ignore-lb-policy",
    "never-repoll-query",
    "no-protocol-override",
    "ignore-inbound-limit",
    "ignore-local-timeouts",
    "fail-open-on-403",
    "ignore-mesh-entry",
    "pass-spoofed-xfcc",
    "require-ca-spiffe-san",
    "skip-agent-tls-verify",
    "ignore-mesh-destinations-only",
    "always-permissive",
    "ignore-outgoing-tls-bounds",
    "case-sensitive-headers",
    "jwt-skip-verify",
    "jwt-ignore-claims",
    "jwt-stale-jwks",
    "jwt-no-forward-payload",
    "jwt-forward-spoofable",
    "anonymous-on-403",
    "ipv6-unbracketed",
];

#[test]
fn names_are_the_catalogues_and_round_trip() {
    let names: Vec<&str> = Sabotage::ALL.map(Sabotage::as_str).to_vec();
    assert_eq!(names, CATALOGUE);
    for s in Sabotage::ALL {
        assert_eq!(s.as_str().parse::<Sabotage>(), Ok(s));
        assert_eq!(s.to_string(), s.as_str());
    }
    let err = "ignore_deny".parse::<Sabotage>().unwrap_err();
    assert_eq!(err, UnknownSabotage("ignore_deny".into()));
    assert!(
        err.to_string()
            .starts_with("unknown sabotage \"ignore_deny\"; known: ignore-deny, authorize-by-cn,"),
        "{err}"
    );
}

#[test]
fn sets_hold_exactly_their_members() {
    let set: Sabotages = [Sabotage::TightPolling, Sabotage::IgnoreDeny]
        .into_iter()
        .collect();
    for s in Sabotage::ALL {
        let expected = matches!(s, Sabotage::TightPolling | Sabotage::IgnoreDeny);
        assert_eq!(set.contains(s), expected, "{s}");
        assert!(Sabotages::from(s).contains(s));
        assert_eq!(Sabotages::from(s).iter().collect::<Vec<_>>(), [s]);
    }
    assert_eq!(set.to_string(), "ignore-deny,tight-polling");
    assert!(Sabotages::NONE.is_empty() && !set.is_empty());
    let all: Sabotages = Sabotage::ALL.into_iter().collect();
    assert_eq!(all.iter().count(), Sabotage::ALL.len(), "distinct bits");
}

#[test]
fn the_flag_is_repeatable_and_comma_separated() {
    let inv = parse_args([
        "proxy-under-test",
        "-proxy-id",
        "db-sidecar-proxy",
        "--sabotage",
        "ignore-deny",
        "--sabotage=tight-polling,missing-token",
    ])
    .unwrap();
    assert_eq!(inv.cli.proxy_id.as_deref(), Some("db-sidecar-proxy"));
    assert_eq!(
        inv.hooks.iter().collect::<Vec<_>>(),
        [
            Sabotage::IgnoreDeny,
            Sabotage::TightPolling,
            Sabotage::MissingToken
        ]
    );
    let none = parse_args(["proxy-under-test", "-proxy-id", "x"]).unwrap();
    assert!(none.hooks.is_empty());
    let err = parse_args(["proxy-under-test", "-proxy-id", "x", "--sabotage", "nope"]).unwrap_err();
    assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue, "{err}");
}

#[test]
fn ignore_token_file_drops_only_the_flag() {
    let argv = |extra: &[&str]| {
        let mut v = vec!["proxy-under-test", "-proxy-id", "p", "-token-file", "/f"];
        v.extend_from_slice(extra);
        Sabotages::adjust(parse_args(v).unwrap())
    };
    assert_eq!(argv(&[]).cli.token_file.as_deref(), Some("/f"));
    let broken = argv(&["--sabotage", "ignore-token-file"]);
    assert_eq!(broken.cli.token_file, None);
    let with_token = argv(&["--sabotage", "ignore-token-file", "-token", "t"]);
    assert_eq!(
        with_token.cli.token.as_deref(),
        Some("t"),
        "-token still works"
    );
}

#[test]
fn skip_agent_tls_verify_turns_verification_off() {
    let tls = crate::agent::AgentTls::default();
    assert!(!Sabotages::NONE.agent_tls(tls.clone()).skip_verify);
    assert!(
        Sabotages::from(Sabotage::SkipAgentTlsVerify)
            .agent_tls(tls)
            .skip_verify
    );
}
