//! The L4 relay's idle timeout on the public listener (`tcp_idle_timeout_ms`, Envoy's
//! `tcp_proxy` `idle_timeout`): a silent connection is closed once the timeout has passed since
//! its last byte, never before; without the knob's limit it stays open.

use std::time::Duration;

use tokio::time::Instant;

use super::*;

/// How long after its last byte a caller's connection was closed (None: still open, and usable,
/// after the wait), and the wait.
async fn silent_for(knobs: Knobs) -> (Option<Duration>, Duration) {
    let limit = knobs.tcp_idle_timeout;
    let (_tx, _dp, mut s) = echoed_once(knobs).await;
    let quiet_since = Instant::now();
    let wait = limit.map_or(Duration::from_millis(600), |l| l * 10);
    let closed = closed_within(&mut s, wait).await;
    let silent = quiet_since.elapsed();
    if !closed {
        // Still usable after the wait.
        assert_eq!(echo_once(&mut s, b"b").await.unwrap(), b"b");
    }
    (closed.then_some(silent), wait)
}

#[tokio::test]
async fn a_silent_relay_is_closed_after_the_idle_timeout() {
    let limit = Duration::from_millis(300);
    let knobs = Knobs {
        tcp_idle_timeout: Some(limit),
        reauthorize_interval: Duration::ZERO,
        ..Knobs::default()
    };
    let (closed_after, _) = silent_for(knobs).await;
    let closed_after = closed_after.expect("closed within ten times the idle timeout");
    assert!(
        closed_after >= limit,
        "closed {closed_after:?} after the last byte, before the {limit:?} timeout"
    );
}

#[tokio::test]
async fn without_the_limit_a_silent_relay_stays_open() {
    let knobs = Knobs {
        tcp_idle_timeout: None,
        reauthorize_interval: Duration::ZERO,
        ..Knobs::default()
    };
    let (closed_after, waited) = silent_for(knobs).await;
    assert_eq!(
        closed_after, None,
        "closed although silent for only {waited:?}"
    );
}
