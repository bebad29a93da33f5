//! Tests of request-log judgments with hand-written logs.

use agent_sim::http::query::TokenSource;

use super::*;

const TOKEN: &str = "proxy-token";

fn entry(seq: u64, path: &str, index: Option<u64>, token: Option<&str>) -> LogEntry {
    LogEntry {
        seq,
        at_ms: seq * 10,
        method: "GET".into(),
        path: path.into(),
        query: index.map(|i| format!("index={i}")).unwrap_or_default(),
        token: token.map(str::to_owned),
        token_source: if token.is_some() {
            TokenSource::Header
        } else {
            TokenSource::None
        },
        blocking: index.is_some_and(|i| i > 0),
        index,
        hash: None,
        wait: None,
        status: Some(200),
        duration_ms: Some(1),
    }
}

const ROOTS: &str = "/v1/agent/connect/ca/roots";
const LEAF: &str = "/v1/agent/connect/ca/leaf/db";

fn spec(blocking: &[String], max: Option<u32>) -> UsageSpec<'_> {
    UsageSpec {
        token_on_every_request: true,
        blocking,
        max_requests_per_minute: max,
    }
}

#[test]
fn families() {
    assert_eq!(family(ROOTS), Some("roots"));
    assert_eq!(family(LEAF), Some("leaf"));
    assert_eq!(family("/v1/connect/intentions/match"), Some("intentions"));
    assert_eq!(
        family("/v1/agent/service/db-sidecar-proxy"),
        Some("service")
    );
    assert_eq!(family("/v1/agent/service/register"), None);
    assert_eq!(family("/v1/health/connect/cache"), Some("health"));
    assert_eq!(family("/v1/discovery-chain/cache"), Some("chain"));
    assert_eq!(family("/v1/agent/self"), None);
}

#[test]
fn a_quiet_blocking_proxy_passes() {
    // Startup reads, then blocking requests in flight before the window opens at #4.
    let log = [
        entry(1, ROOTS, None, Some(TOKEN)),
        entry(2, LEAF, None, Some(TOKEN)),
        entry(3, ROOTS, Some(5), Some(TOKEN)),
        entry(4, LEAF, Some(7), Some(TOKEN)),
    ];
    let fams = ["roots".to_owned(), "leaf".to_owned()];
    let o = agent_usage(
        &log,
        4,
        Duration::from_secs(3),
        TOKEN,
        spec(&fams, Some(30)),
    );
    assert!(o.ok, "{}", o.text);
    assert_eq!(
        o.text,
        "0 requests in 3000 ms (0/min); token on all 2 requests; blocking: roots, leaf"
    );
}

#[test]
fn tight_polling_fails_blocking_and_rate() {
    let mut log = vec![entry(1, ROOTS, Some(5), Some(TOKEN))];
    for seq in 2..=60 {
        log.push(entry(seq, ROOTS, None, Some(TOKEN)));
    }
    let fams = ["roots".to_owned()];
    let o = agent_usage(
        &log,
        1,
        Duration::from_secs(3),
        TOKEN,
        spec(&fams, Some(30)),
    );
    assert!(!o.ok);
    assert!(
        o.text
            .contains("roots: 59 non-blocking requests in the window (e.g. #2 GET"),
        "{}",
        o.text
    );
    assert!(
        o.text.contains("1180 requests/min, above the bound of 30"),
        "{}",
        o.text
    );
}

#[test]
fn missing_tokens_fail_even_on_in_flight_requests() {
    let log = [
        entry(1, ROOTS, None, Some(TOKEN)),
        entry(2, ROOTS, Some(5), None),
    ];
    let o = agent_usage(&log, 2, Duration::from_secs(3), TOKEN, spec(&[], None));
    assert!(!o.ok);
    assert!(
        o.text
            .starts_with("1 of 1 requests did not carry the proxy's token (e.g. #2 GET"),
        "{}",
        o.text
    );
}

#[test]
fn never_requested_and_unknown_families_fail() {
    let log = [entry(1, ROOTS, Some(2), Some(TOKEN))];
    let fams = ["leaf".to_owned(), "bogus".to_owned()];
    let o = agent_usage(&log, 0, Duration::from_secs(1), TOKEN, spec(&fams, None));
    assert!(!o.ok);
    assert!(o.text.contains("leaf: never requested"), "{}", o.text);
    assert!(
        o.text.contains("unknown endpoint family \"bogus\""),
        "{}",
        o.text
    );
}

#[test]
fn a_latest_non_blocking_read_fails() {
    let log = [
        entry(1, ROOTS, Some(3), Some(TOKEN)),
        entry(2, ROOTS, None, Some(TOKEN)),
    ];
    let fams = ["roots".to_owned()];
    let o = agent_usage(&log, 2, Duration::from_secs(1), TOKEN, spec(&fams, None));
    assert!(!o.ok);
    assert!(
        o.text.contains("roots: latest request is not blocking (#2"),
        "{}",
        o.text
    );
}

#[test]
fn index_reset_is_noticed() {
    let log = [
        entry(1, LEAF, None, Some(TOKEN)),
        entry(2, LEAF, Some(40), Some(TOKEN)),
        // mark at #2; the reset makes the sim answer with index 3
        entry(3, LEAF, Some(3), Some(TOKEN)),
    ];
    let o = index_reset_honoured(&log, 2);
    assert!(o.ok, "{}", o.text);
    assert!(
        o.text
            .starts_with(&format!("{LEAF}: index went back from 40 to 3 at #3")),
        "{}",
        o.text
    );

    // Going through index 0 first also counts, as long as it blocks again afterwards.
    let log = [
        entry(1, LEAF, Some(40), Some(TOKEN)),
        entry(2, LEAF, None, Some(TOKEN)),
        entry(3, LEAF, Some(4), Some(TOKEN)),
    ];
    assert!(index_reset_honoured(&log, 1).ok);
    assert!(!index_reset_honoured(&log[..2], 1).ok);
}

#[test]
fn a_stalled_proxy_is_caught() {
    let log = [
        entry(1, LEAF, Some(40), Some(TOKEN)),
        entry(2, LEAF, Some(40), Some(TOKEN)),
        entry(3, LEAF, Some(41), Some(TOKEN)),
    ];
    let o = index_reset_honoured(&log, 1);
    assert!(!o.ok);
    assert_eq!(
        o.text,
        "no request after the reset used a smaller index (2 requests since)"
    );
}

fn scenario_steps(checks: &[&str]) -> Vec<Step> {
    let mut text = String::from(
        "id = \"x\"\ndescription = \"x\"\nprofile = \"core\"\nfeatures = [\"l4\"]\n[setup]\n\
         [[steps]]\ndo = \"index-reset\"\n",
    );
    for (i, c) in checks.iter().enumerate() {
        text.push_str(&format!(
            "[[steps]]\ndo = \"expect\"\nname = \"c{i}\"\ncheck = {c}\n"
        ));
    }
    text.push_str("[[steps]]\ndo = \"mark\"\nname = \"m\"\n");
    scenarios::parse("x.toml", &text)
        .unwrap_or_else(|e| panic!("{e}"))
        .steps
}

#[test]
fn request_log_checks_are_recognised() {
    let usage = "{ kind = \"agent-usage\", token_on_every_request = true }";
    let reset = "{ kind = \"index-reset-honoured\" }";
    let inbound = "{ kind = \"inbound\", identity = { kind = \"service\", service = \"web\" }, \
                   outcome = \"allowed\" }";
    assert!(only_request_log_checks(&scenario_steps(&[usage, reset])));
    assert!(only_request_log_checks(&scenario_steps(&[usage])));
    assert!(!only_request_log_checks(&scenario_steps(&[usage, inbound])));
    assert!(!only_request_log_checks(&scenario_steps(&[inbound])));
    // Nothing to check at all is not "only request-log checks".
    assert!(!only_request_log_checks(&scenario_steps(&[])));
    // The catalogue's request-log scenarios also check traffic, so they still run.
    for s in scenarios::catalogue() {
        if ["agent-blocking", "index-reset", "acl-token-file"].contains(&s.id.as_str()) {
            assert!(!only_request_log_checks(&s.steps), "{}", s.id);
        }
    }
}
