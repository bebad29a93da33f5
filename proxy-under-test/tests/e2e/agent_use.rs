//! How the proxy uses the agent, judged from the sim's request log: its token on every request,
//! blocking queries (hash for the registration, index for the rest) and no polling while idle.

use std::collections::BTreeMap;
use std::time::Duration;

use agent_sim::request_log::LogEntry;
use serde_json::json;

use super::support::*;

/// The watch a request belongs to.
fn watch_of(e: &LogEntry) -> &'static str {
    let p = e.path.as_str();
    if p.starts_with("/v1/agent/service/") {
        "service"
    } else if p.starts_with("/v1/agent/connect/ca/leaf/") {
        "leaf"
    } else if p == "/v1/agent/connect/ca/roots" {
        "roots"
    } else if p == "/v1/connect/intentions/match" {
        "intentions"
    } else if p.starts_with("/v1/discovery-chain/") {
        "chain"
    } else if p.starts_with("/v1/health/connect/") {
        "health"
    } else if p == "/v1/agent/self" {
        "self"
    } else if p == "/v1/config/mesh" {
        "mesh"
    } else if p == "/v1/config/jwt-provider" {
        "jwt-provider"
    } else {
        "other"
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_on_every_request_blocking_queries_and_no_polling_while_idle() {
    let up = free_port();
    let w = World::new(
        sim_builder(),
        json!({"Upstreams": [{"DestinationName": "cache", "LocalBindPort": up}]}),
    )
    .await;
    w.allow("web");
    let _proxy = w.proxy().await;
    let log = w.c().log();
    // Settled: every index/hash watch has a blocking request outstanding.
    for watch in [
        "service",
        "leaf",
        "roots",
        "intentions",
        "chain",
        "health",
        "mesh",
        "jwt-provider",
    ] {
        let seen = log
            .wait_for(PATIENCE, |e| watch_of(e) == watch && e.blocking)
            .await;
        assert!(seen.is_some(), "no blocking request for {watch}");
    }
    w.probe("web")
        .echo(w.public(), b"traffic is not agent traffic")
        .await
        .unwrap();

    // Idle window: nothing changes, so at most a couple of requests (the default-policy
    // refresh) may arrive.
    let idle = Duration::from_secs(5);
    let before = log.last_seq();
    tokio::time::sleep(idle).await;
    let during = log.since(before);
    assert!(
        during.len() <= 2,
        "{} requests in an idle {idle:?}: {:?}",
        during.len(),
        during
            .iter()
            .map(|e| (&e.path, &e.query))
            .collect::<Vec<_>>()
    );

    let all = w.c().request_log();
    let mut per_watch: BTreeMap<&str, Vec<&LogEntry>> = BTreeMap::new();
    for e in &all {
        assert_eq!(
            e.token.as_deref(),
            Some(w.token.as_str()),
            "request without the proxy's token: {} {}?{}",
            e.method,
            e.path,
            e.query
        );
        per_watch.entry(watch_of(e)).or_default().push(e);
    }
    assert!(!per_watch.contains_key("other"), "{per_watch:?}");
    for (watch, reqs) in &per_watch {
        if *watch == "self" {
            continue;
        }
        // Only the first read of a watch is non-blocking (no errors happened here).
        assert!(!reqs[0].blocking, "{watch}: first read blocks on nothing");
        for e in &reqs[1..] {
            assert!(
                e.blocking,
                "{watch}: non-blocking re-read {}?{}",
                e.path, e.query
            );
            assert!(e.wait.is_some(), "{watch}: blocking without wait");
            if *watch == "service" {
                assert!(e.hash.is_some(), "registration watched by hash");
            } else {
                assert!(
                    e.index.is_some_and(|i| i > 0),
                    "{watch}: index {:?}",
                    e.index
                );
            }
        }
    }
}
