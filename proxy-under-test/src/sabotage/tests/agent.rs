//! Broken agent usage against the reference: the whole proxy in-process on agent-sim, compared
//! through the sim's request log; agent health as the fail-closed / fail-open variants see it;
//! stalled indexes; authorization through the agent; the default policy read on its timer only.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use agent_sim::request_log::LogEntry;
use agent_sim::{AgentSim, Listening};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::AgentClient;
use crate::authz::DefaultPolicy;
use crate::dataplane::DataPlane;
use crate::knobs::Knobs;
use crate::proxy::Proxy;
use crate::sabotage::{Hooks, Sabotage, Sabotages};
use crate::testutil::*;

/// How long [`request_log`] lets the proxy run: until its log shows something (an event, polled
/// with a generous deadline), or for a fixed window where the test asserts an upper bound only
/// (a loaded machine makes fewer requests, never more).
enum Until {
    Seen(&'static str, LogTest),
    For(Duration),
}

/// What the request log must show.
type LogTest = Box<dyn Fn(&[LogEntry]) -> bool + Send>;

/// The deadline for an awaited request-log event.
const EVENT_DEADLINE: Duration = Duration::from_secs(20);

/// A sim with `db` and its sidecar (upstream `cache`), the proxy on it running `set` after it
/// bound its listeners, until `until`; returns the sim's request log and how long that took.
async fn request_log(
    set: Sabotages,
    token: Option<&str>,
    until: Until,
) -> (Vec<LogEntry>, Duration) {
    let sim = AgentSim::builder().start().await.unwrap();
    let app = echo_app().await;
    sim.control()
        .register(&json!({
            "Name": "db", "Address": "127.0.0.1", "Port": app.port(),
            "Connect": {"SidecarService": {"Port": free_port(), "Proxy": {
                "Upstreams": [{"DestinationName": "cache", "LocalBindPort": free_port()}]
            }}}
        }))
        .unwrap();
    let client = AgentClient::new(&sim.http_addr(), token.map(str::to_owned))
        .unwrap()
        .with_sabotage(set);
    let proxy = Proxy::new(client, "db-sidecar-proxy")
        .start()
        .await
        .unwrap();
    let started = std::time::Instant::now();
    match until {
        Until::For(d) => tokio::time::sleep(d).await,
        Until::Seen(what, seen) => loop {
            if seen(&sim.control().request_log()) {
                break;
            }
            assert!(
                started.elapsed() < EVENT_DEADLINE,
                "{set:?}: not seen within {EVENT_DEADLINE:?}: {what}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        },
    }
    let took = started.elapsed();
    let log = sim.control().request_log();
    drop(proxy);
    (log, took)
}

/// Until every one of `paths` has had a blocking read.
fn all_blocking(paths: Vec<&'static str>) -> Until {
    Until::Seen(
        "a blocking read of every watched path",
        Box::new(move |log| paths.iter().all(|p| blocking(log, p) >= 1)),
    )
}

fn to(log: &[LogEntry], prefix: &str) -> Vec<LogEntry> {
    log.iter()
        .filter(|e| e.path.starts_with(prefix))
        .cloned()
        .collect()
}

fn blocking(log: &[LogEntry], prefix: &str) -> usize {
    to(log, prefix).iter().filter(|e| e.blocking).count()
}

const SERVICE: &str = "/v1/agent/service/db-sidecar-proxy";
const LEAF: &str = "/v1/agent/connect/ca/leaf/db";
const ROOTS: &str = "/v1/agent/connect/ca/roots";
const INTENTIONS: &str = "/v1/connect/intentions/match";
const CHAIN: &str = "/v1/discovery-chain/cache";
const HEALTH: &str = "/v1/health/connect/cache";
const WATCHED: [&str; 6] = [SERVICE, LEAF, ROOTS, INTENTIONS, CHAIN, HEALTH];

#[tokio::test]
async fn once_variants_never_reread_what_they_fetched() {
    let (reference, _) = request_log(Sabotages::NONE, None, all_blocking(WATCHED.to_vec())).await;
    for path in WATCHED {
        assert!(blocking(&reference, path) >= 1, "reference re-reads {path}");
    }
    let cases: [(Sabotage, &[&str]); 6] = [
        (Sabotage::NeverRefreshCerts, &[LEAF, ROOTS]),
        (Sabotage::LeafFetchedOnce, &[LEAF]),
        (Sabotage::CacheIntentionsForever, &[INTENTIONS]),
        (Sabotage::ResolveEndpointsOnce, &[HEALTH]),
        (Sabotage::IgnoreConfigChanges, &[SERVICE]),
        (Sabotage::IgnoreDiscoveryChain, &[CHAIN]),
    ];
    for (s, frozen) in cases {
        // Once every other watch blocks, a frozen one has had its chance to be re-read.
        let others = WATCHED
            .into_iter()
            .filter(|p| !frozen.contains(p))
            .collect();
        let (log, _) = request_log(s.into(), None, all_blocking(others)).await;
        for path in WATCHED {
            let reads = to(&log, path).len();
            if frozen.contains(&path) {
                let first_reads = usize::from(path != CHAIN);
                assert_eq!(reads, first_reads, "{s}: {path} read once (chain: never)");
            } else {
                assert!(blocking(&log, path) >= 1, "{s}: {path} still watched");
            }
        }
    }
}

#[tokio::test]
async fn tight_polling_drops_blocking_and_polls_every_50ms() {
    // The broken proxy polls every path 8 times (an event: however long a loaded machine
    // takes); the reference, given at least as long, blocks on the leaf instead of re-reading
    // it (an upper bound, which a fixed window cannot flake).
    let polled = |log: &[LogEntry]| {
        WATCHED.iter().all(|p| to(log, p).len() >= 8) && to(log, "/v1/agent/self").len() >= 8
    };
    let (log, took) = request_log(
        Sabotage::TightPolling.into(),
        None,
        Until::Seen("8 polls of every path and of agent/self", Box::new(polled)),
    )
    .await;
    assert!(
        log.iter().all(|e| !e.blocking && e.wait.is_none()),
        "no index, hash or wait"
    );
    let window = took.max(Duration::from_secs(1));
    let (reference, _) = request_log(Sabotages::NONE, None, Until::For(window)).await;
    assert!(
        to(&reference, LEAF).len() <= 3,
        "reference blocks on the leaf (read {} times in {window:?})",
        to(&reference, LEAF).len()
    );
}

/// Until the log holds more than five requests.
fn six_requests() -> Until {
    Until::Seen("six requests", Box::new(|log| log.len() > 5))
}

#[tokio::test]
async fn missing_token_sends_it_on_the_first_request_only() {
    let (reference, _) = request_log(Sabotages::NONE, Some("s3cret"), six_requests()).await;
    assert!(reference.len() > 5);
    assert!(
        reference
            .iter()
            .all(|e| e.token.as_deref() == Some("s3cret"))
    );
    let (log, _) = request_log(
        Sabotage::MissingToken.into(),
        Some("s3cret"),
        six_requests(),
    )
    .await;
    assert!(log.len() > 5);
    assert_eq!(log[0].token.as_deref(), Some("s3cret"), "{:?}", log[0]);
    assert!(log[1..].iter().all(|e| e.token.is_none()));
}

#[tokio::test]
async fn drop_state_on_error_stops_using_the_agent_cache() {
    let cached = |log: &[LogEntry]| {
        log.iter()
            .filter(|e| {
                e.query
                    .split('&')
                    .any(|kv| kv == "cached" || kv == "cached=")
            })
            .count()
    };
    let (reference, _) = request_log(
        Sabotages::NONE,
        None,
        Until::Seen(
            "cached reads of intentions and health",
            Box::new(move |log| cached(&to(log, INTENTIONS)) >= 1 && cached(&to(log, HEALTH)) >= 1),
        ),
    )
    .await;
    assert!(cached(&to(&reference, INTENTIONS)) >= 1);
    // The broken proxy reads the same paths (twice each: the first read and its watch) without
    // ?cached.
    let (log, _) = request_log(
        Sabotage::DropStateOnError.into(),
        None,
        Until::Seen(
            "two reads each of intentions and health",
            Box::new(|log| to(log, INTENTIONS).len() >= 2 && to(log, HEALTH).len() >= 2),
        ),
    )
    .await;
    assert!(log.len() > 5);
    assert_eq!(cached(&log), 0);
}

#[test]
fn stall_after_index_reset_keeps_the_highest_index() {
    let q = [("name", "db".to_owned())];
    let hooks = |set: Sabotages| {
        AgentClient::new("127.0.0.1:1", None)
            .unwrap()
            .with_sabotage(set)
    };
    let good = hooks(Sabotages::NONE);
    let bad = hooks(Sabotage::StallAfterIndexReset.into());
    let seq = [0, 40, 41, 7, 0, 8, 50];
    let sent: Vec<u64> = seq
        .iter()
        .map(|i| bad.hooks.blocking_index(INTENTIONS, &q, *i))
        .collect();
    assert_eq!(sent, [0, 40, 41, 41, 41, 41, 50]);
    let other = bad.hooks.blocking_index(LEAF, &[], 3);
    assert_eq!(other, 3, "per request");
    let passthrough: Vec<u64> = seq
        .iter()
        .map(|i| good.hooks.blocking_index(INTENTIONS, &q, *i))
        .collect();
    assert_eq!(passthrough, seq);
}

/// An HTTP agent answering every request with `status` (0 = closing without an answer).
async fn flaky_agent(status: Arc<AtomicU16>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let mut buf = vec![0u8; 8192];
            let _ = s.read(&mut buf).await;
            let reply: &[u8] = match status.load(Ordering::SeqCst) {
                200 => b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
                500 => b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\nconnection: close\r\n\r\nboom",
                _ => b"",
            };
            let _ = s.write_all(reply).await;
        }
    });
    addr
}

#[tokio::test]
async fn agent_failures_drop_or_open_the_data_plane_view() {
    let ca = TestCa::new("Consul CA 1");
    let status = Arc::new(AtomicU16::new(200));
    let addr = flaky_agent(status.clone()).await;
    // What the data plane sees after the agent answered `code`: None, the snapshot itself
    // ("same") or an allow-everything copy ("open").
    let outcomes = [
        (Sabotages::NONE, ["same", "same", "same", "same"]),
        (
            Sabotage::FailClosedAgentDown.into(),
            ["same", "none", "none", "same"],
        ),
        (
            Sabotage::DropStateOnError.into(),
            ["same", "none", "none", "same"],
        ),
        (
            Sabotage::FailOpenAgentDown.into(),
            ["same", "same", "open", "same"],
        ),
    ];
    for (set, expected) in outcomes {
        let client = AgentClient::new(&addr.to_string(), None)
            .unwrap()
            .with_sabotage(set);
        let mut snap = snapshot(
            &ca,
            addr,
            vec![],
            DefaultPolicy::DENY,
            Knobs::default(),
            vec![],
        );
        snap.hooks = Hooks::from_client(&client);
        let snap = Arc::new(snap);
        let mut seen = Vec::new();
        for code in [200, 500, 0, 200] {
            status.store(code, Ordering::SeqCst);
            let _ = client.services().await;
            seen.push(match Hooks::serving(snap.clone()) {
                None => "none",
                Some(v) if Arc::ptr_eq(&v, &snap) => "same",
                Some(v) if v.default_policy.allow && v.intentions.is_empty() => "open",
                Some(_) => "other",
            });
        }
        assert_eq!(seen, expected, "{set}");
    }
}

async fn authz_sim() -> Listening {
    let sim = AgentSim::builder().start().await.unwrap();
    sim.control()
        .put_intention("api", "db", &json!({"Action": "deny"}))
        .unwrap();
    sim
}

#[tokio::test]
async fn authorize_via_agent_asks_the_agent_on_every_connection() {
    let ca = TestCa::new("Consul CA 1");
    let sim = authz_sim().await;
    let dead = format!("127.0.0.1:{}", free_port());
    let cases = [
        (Sabotages::NONE, sim.http_addr(), [true, true]),
        (
            Sabotage::AuthorizeViaAgent.into(),
            sim.http_addr(),
            [true, false],
        ),
        (Sabotage::AuthorizeViaAgent.into(), dead, [false, false]),
    ];
    for (set, agent, expected) in cases {
        let client = AgentClient::new(&agent, None).unwrap().with_sabotage(set);
        let app = echo_app().await;
        // Locally everything is allowed.
        let mut snap = snapshot(
            &ca,
            app,
            vec![],
            DefaultPolicy::ALLOW,
            Knobs::default(),
            vec![],
        );
        snap.hooks = Hooks::from_client(&client);
        let (_tx, rx) = watch::channel(Some(Arc::new(snap)));
        let dp = DataPlane::new(rx).start().await.unwrap();
        let mut got = Vec::new();
        for who in ["web", "api"] {
            let cfg = client_config(Some(&ca.service_leaf(who)), &ca.roots(), "db", false);
            got.push(probe(dp.inbound_addr(), cfg, b"hi").await.is_ok());
        }
        assert_eq!(got, expected, "{set} via {agent}");
    }
    let asked = to(&sim.control().request_log(), "/v1/agent/connect/authorize");
    assert_eq!(
        asked.len(),
        2,
        "one call per connection of the sabotaged proxy"
    );
    assert!(asked.iter().all(|e| e.method == "POST"));
}

#[tokio::test]
async fn policy_on_timer_misses_the_restarted_agents_policy() {
    let client = |addr: &str| {
        AgentClient::new(addr, None)
            .unwrap()
            .with_sabotage(Sabotage::PolicyOnTimer.into())
    };
    // Bounded wait for an update that must not come (the reference gets it in milliseconds).
    let got = crate::agent::recovery::tests::after_restart(client, Duration::from_secs(2)).await;
    assert_eq!(got, None);
}
