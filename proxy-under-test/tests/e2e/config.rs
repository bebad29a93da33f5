//! Registration-driven behaviour at runtime: an upstream added to the registration opens its
//! listener (hash blocking), the maximum connection lifetime, and the metrics listener.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_added_at_runtime_gets_its_listener() {
    let w = World::basic().await;
    let proxy = w.proxy().await;
    assert_eq!(proxy.upstream_addr("cache"), None);
    let c = w.c();
    let cache = FakeUpstream::start(
        "cache-1",
        &c.issue_identity("cache").unwrap(),
        &c.root_pems(),
    )
    .await;
    cache.register(c, "n2", "cache");
    let up = free_port();
    w.register_db(&json!({"Config": {"reauthorize_interval_ms": 200},
        "Upstreams": [{"DestinationName": "cache", "LocalBindPort": up}]}));
    let addr = SocketAddr::from(([127, 0, 0, 1], up));
    eventually(
        "new upstream listener carries traffic",
        PATIENCE,
        || async { via_upstream(addr).await.as_deref() == Ok("cache-1") },
    )
    .await;
    assert_eq!(proxy.upstream_addr("cache"), Some(addr));

    // Removed again: the listener closes.
    w.register_db(&json!({"Config": {"reauthorize_interval_ms": 200}}));
    eventually("listener closed", PATIENCE, || async {
        TcpStream::connect(addr).await.is_err()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_end_at_the_maximum_lifetime() {
    let w = World::new(
        sim_builder(),
        json!({"Config": {"max_connection_lifetime_ms": 1500, "reauthorize_interval_ms": 200}}),
    )
    .await;
    w.allow("web");
    let _proxy = w.proxy().await;
    let web = w.probe("web");
    let opened = Instant::now();
    let mut open = web.connect(w.public()).await.unwrap();
    round_trip(&mut open, b"young").await.unwrap();
    assert!(closed_within(&mut open, PATIENCE).await, "never closed");
    let lived = opened.elapsed();
    assert!(
        lived >= Duration::from_millis(1400),
        "closed after {lived:?}, before the lifetime"
    );
    // Still allowed: a new connection works.
    web.echo(w.public(), b"again").await.unwrap();
}

/// `GET /metrics` over plain HTTP/1.0.
async fn scrape(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

/// The value of the sample line starting with `series` (e.g. `name{label="x"}`).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_listener_reports_decisions_and_agent_health() {
    let w = World::new(
        sim_builder(),
        json!({"Config": {"metrics_bind_addr": "127.0.0.1:0"}}),
    )
    .await;
    w.allow("web");
    w.deny("api");
    let proxy = w.proxy().await;
    let addr = proxy.metrics_addr().expect("metrics listener bound");
    w.probe("web").echo(w.public(), b"x").await.unwrap();
    assert!(w.probe("api").echo(w.public(), b"x").await.is_err());
    let text = scrape(addr).await;
    assert!(
        text.starts_with("HTTP/1.0 200") || text.starts_with("HTTP/1.1 200"),
        "{text}"
    );
    let get = |series: &str| sample(&text, series).unwrap_or_else(|| panic!("{series}: {text}"));
    assert!(get("proxy_connections_accepted_total{direction=\"inbound\"}") >= 2.0);
    assert!(get("proxy_connections_refused_total{reason=\"denied\"}") >= 1.0);
    assert!(get("proxy_authorization_decisions_total{decision=\"allow\"}") >= 1.0);
    assert!(get("proxy_authorization_decisions_total{decision=\"deny\"}") >= 1.0);
    // A 72 h leaf, and the agent answered recently.
    let expiry = get("proxy_leaf_expiry_seconds");
    assert!(
        (71.0 * 3600.0..=72.0 * 3600.0).contains(&expiry),
        "{expiry}"
    );
    assert!(get("proxy_agent_staleness_seconds") <= 5.0);
}
