//! The agent's faults on the gRPC port, over loopback with the test source: agent down (refused,
//! streams reset), hung (no answers), servers unreachable (no updates), latency.

use std::time::Duration;

use tokio::net::TcpStream;

use super::tests::{PROXY, QUIET, ack_of, first, names, nv, open, set, start, wait_log};
use super::*;
use crate::xds::types::CLUSTER;

#[tokio::test]
async fn agent_down_resets_streams_and_refuses() {
    let h = start(false).await;
    h.source.put(PROXY, set(&[(CLUSTER, "a", "1")]));
    let mut c = open(h.addr, None).await.expect("open");
    c.send(first(CLUSTER, &[])).await;
    c.next().await.expect("cds");
    let guard = h.control.agent_down();
    assert!(c.next().await.is_err(), "stream survived agent down");
    let refused = TcpStream::connect(h.addr).await;
    assert!(refused.is_err(), "connection accepted while down");
    drop(guard);
    wait_log(&h.control, |e| matches!(e.event, XdsEvent::Closed { .. })).await;
    // Back up: a new stream gets everything again (versions forgotten).
    let mut c = loop {
        if let Ok(c) = open(h.addr, None).await {
            break c;
        }
        tokio::task::yield_now().await;
    };
    c.send(first(CLUSTER, &[])).await;
    let r = c.next().await.expect("cds after restart");
    assert_eq!(names(&r), nv(&[("a", "1")]));
}

#[tokio::test]
async fn hung_agent_answers_nothing_until_it_recovers() {
    let h = start(false).await;
    h.source.put(PROXY, set(&[(CLUSTER, "a", "1")]));
    let mut c = open(h.addr, None).await.expect("open");
    c.send(first(CLUSTER, &[])).await;
    let r = c.next().await.expect("cds");
    c.send(ack_of(&r)).await;
    wait_log(&h.control, |e| matches!(e.event, XdsEvent::Ack { .. })).await;
    let guard = h.control.agent_hung();
    h.source.put(PROXY, set(&[(CLUSTER, "a", "2")]));
    assert!(c.quiet().await, "answered while hung");
    // New connections get no answer either.
    let new_conn = tokio::time::timeout(QUIET, open(h.addr, None)).await;
    assert!(new_conn.is_err(), "a new stream was answered while hung");
    drop(guard);
    let r = c.next().await.expect("after recovery");
    assert_eq!(names(&r), nv(&[("a", "2")]));
}

#[tokio::test]
async fn servers_unreachable_keeps_the_stream_without_updates() {
    let h = start(false).await;
    h.source.put(PROXY, set(&[(CLUSTER, "a", "1")]));
    let mut c = open(h.addr, None).await.expect("open");
    c.send(first(CLUSTER, &[])).await;
    let r = c.next().await.expect("cds");
    c.send(ack_of(&r)).await;
    let guard = h.control.servers_unreachable();
    let mut rx = h.control.faults.subscribe();
    while rx.borrow_and_update().servers_down_since.is_none() {
        rx.changed().await.expect("faults");
    }
    h.source.put(PROXY, set(&[(CLUSTER, "a", "2")]));
    assert!(c.quiet().await, "update sent while servers unreachable");
    drop(guard);
    let r = c.next().await.expect("after servers return");
    assert_eq!(names(&r), nv(&[("a", "2")]));
}

#[tokio::test]
async fn latency_delays_responses() {
    let h = start(false).await;
    h.source.put(PROXY, set(&[(CLUSTER, "a", "1")]));
    let _g = h.control.inject(crate::state::faults::Fault::Latency {
        delay: Duration::from_millis(400),
        path_prefix: Some("/envoy.service.discovery.v3".into()),
    });
    let mut c = open(h.addr, None).await.expect("open");
    let t0 = tokio::time::Instant::now();
    c.send(first(CLUSTER, &[])).await;
    c.next().await.expect("cds");
    assert!(t0.elapsed() >= Duration::from_millis(400));
}

#[tokio::test]
async fn servers_unreachable_new_streams_get_the_kept_snapshot() {
    let h = start(false).await;
    h.source.put(PROXY, set(&[(CLUSTER, "a", "1")]));
    let mut c = open(h.addr, None).await.expect("open");
    c.send(first(CLUSTER, &[])).await;
    assert_eq!(names(&c.next().await.expect("cds")), nv(&[("a", "1")]));
    let _guard = h.control.servers_unreachable();
    let mut rx = h.control.faults.subscribe();
    while rx.borrow_and_update().servers_down_since.is_none() {
        rx.changed().await.expect("faults");
    }
    h.source.put(PROXY, set(&[(CLUSTER, "a", "2")]));
    // A reconnecting Envoy gets what the agent kept for the proxy, not the newer state.
    let mut c2 = open(h.addr, None).await.expect("open");
    c2.send(first(CLUSTER, &[])).await;
    assert_eq!(names(&c2.next().await.expect("cds")), nv(&[("a", "1")]));
}
