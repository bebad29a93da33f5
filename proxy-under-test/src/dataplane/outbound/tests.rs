//! Outbound tests: mTLS to fake upstream instances, identity verification (impostor refused),
//! round-robin spread, failover targets, no endpoint.

mod h2;
mod l7;
mod tonic_e2e;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use super::candidates;
use crate::authz::DefaultPolicy;
use crate::dataplane::DataPlane;
use crate::knobs::Knobs;
use crate::snapshot::{Endpoint, Target, Upstream};
use crate::testutil::*;
use crate::tls;

type Seen = Arc<Mutex<Vec<String>>>;

/// A fake upstream instance presenting `leaf`: records the client's URI SAN, sends its 8-byte
/// `name`, then echoes.
async fn fake_upstream(ca: &TestCa, leaf: TestLeaf, name: &'static str, seen: Seen) -> SocketAddr {
    let cfg = tls::inbound(&leaf.leaf(), &ca.roots()).unwrap().config;
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            let acceptor = TlsAcceptor::from(cfg.clone());
            let seen = seen.clone();
            tokio::spawn(async move {
                let Ok(mut s) = acceptor.accept(tcp).await else {
                    return;
                };
                let uri = s
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|c| c.first())
                    .and_then(|c| crate::spiffe::uri_sans(c).ok())
                    .and_then(|u| u.into_iter().next())
                    .unwrap_or_default();
                seen.lock().unwrap().push(format!("{name}<-{uri}"));
                if s.write_all(name.as_bytes()).await.is_err() {
                    return;
                }
                let (mut r, mut w) = tokio::io::split(s);
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

pub(super) fn ep(addr: SocketAddr, label: &str) -> Endpoint {
    Endpoint {
        host: addr.ip().to_string(),
        port: addr.port(),
        datacenter: "dc1".into(),
        label: label.into(),
        dialed_directly: false,
    }
}

pub(super) fn target(service: &str, endpoints: Vec<Endpoint>) -> Target {
    Target {
        id: format!("{service}.default.default.dc1"),
        service: service.into(),
        namespace: "default".into(),
        datacenter: "dc1".into(),
        endpoints,
    }
}

fn upstream(targets: Vec<Target>) -> Upstream {
    Upstream {
        name: "cache".into(),
        bind: "127.0.0.1:0".parse().unwrap(),
        connect_timeout: Duration::from_secs(2),
        protocol: crate::knobs::Protocol::Tcp,
        targets,
        virtual_ips: vec![],
        l7: None,
    }
}

/// Connects to the local upstream listener and returns the 8-byte instance name, after checking
/// an echo round trip.
async fn via(addr: SocketAddr) -> Result<String, String> {
    let fut = async {
        let mut s = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let mut name = [0u8; 8];
        s.read_exact(&mut name)
            .await
            .map_err(|e| format!("closed: {e}"))?;
        assert_eq!(echo_once(&mut s, b"hello").await?, b"hello");
        Ok(String::from_utf8_lossy(&name).into_owned())
    };
    tokio::time::timeout(Duration::from_secs(5), fut)
        .await
        .map_err(|_| "timeout".to_owned())?
}

#[tokio::test]
async fn verifies_upstream_identity_and_spreads_over_endpoints() {
    let ca = TestCa::new("Consul CA 1");
    let seen: Seen = Arc::default();
    let good1 = fake_upstream(&ca, ca.service_leaf("cache"), "cache-01", seen.clone()).await;
    let good2 = fake_upstream(&ca, ca.service_leaf("cache"), "cache-02", seen.clone()).await;
    let impostor = fake_upstream(&ca, ca.service_leaf("web"), "impostor", seen.clone()).await;
    let untrusted = TestCa::new("Other");
    let foreign = fake_upstream(
        &untrusted,
        untrusted.service_leaf("cache"),
        "foreign!",
        seen.clone(),
    )
    .await;
    let up = upstream(vec![target(
        "cache",
        vec![
            ep(impostor, "impostor"),
            ep(good1, "good1"),
            ep(foreign, "foreign"),
            ep(good2, "good2"),
        ],
    )]);
    let snap = snapshot(
        &ca,
        echo_app().await,
        vec![],
        DefaultPolicy::ALLOW,
        Knobs::default(),
        vec![up],
    );
    let (_tx, rx) = watch::channel(Some(Arc::new(snap)));
    let dp = DataPlane::new(rx).start().await.unwrap();
    let local = dp.upstream_addr("cache").unwrap();
    let mut reached = BTreeSet::new();
    let mut refused = 0;
    for _ in 0..8 {
        match via(local).await {
            Ok(name) => {
                reached.insert(name);
            }
            Err(_) => refused += 1,
        }
    }
    assert_eq!(
        reached,
        BTreeSet::from(["cache-01".to_owned(), "cache-02".to_owned()]),
        "only genuine cache instances, both of them (refused {refused})"
    );
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    for s in &seen {
        if s.starts_with("cache-") {
            assert!(
                s.ends_with(&svc_uri(TD, "db")),
                "the proxy presents db's leaf: {s}"
            );
        }
    }
}

#[tokio::test]
async fn fails_over_to_the_next_target_and_closes_without_endpoints() {
    let ca = TestCa::new("Consul CA 1");
    let seen: Seen = Arc::default();
    let v2 = fake_upstream(&ca, ca.service_leaf("cache-v2"), "cachev2!", seen.clone()).await;
    let up = upstream(vec![
        target("cache", vec![]),
        target("cache-v2", vec![ep(v2, "v2")]),
    ]);
    let snap = snapshot(
        &ca,
        echo_app().await,
        vec![],
        DefaultPolicy::ALLOW,
        Knobs::default(),
        vec![up],
    );
    let (tx, rx) = watch::channel(Some(Arc::new(snap)));
    let dp = DataPlane::new(rx).start().await.unwrap();
    let local = dp.upstream_addr("cache").unwrap();
    assert_eq!(via(local).await.unwrap(), "cachev2!");
    // No endpoints at all: the connection is closed.
    tx.send_modify(|cur| {
        let mut next = (**cur.as_ref().unwrap()).clone();
        next.upstreams[0].targets = vec![target("cache", vec![])];
        *cur = Some(Arc::new(next));
    });
    assert!(via(local).await.is_err());
}

#[tokio::test]
async fn upstream_listeners_follow_the_snapshot() {
    let ca = TestCa::new("Consul CA 1");
    let snap = snapshot(
        &ca,
        echo_app().await,
        vec![],
        DefaultPolicy::ALLOW,
        Knobs::default(),
        vec![],
    );
    let (tx, rx) = watch::channel(Some(Arc::new(snap)));
    let dp = DataPlane::new(rx).start().await.unwrap();
    assert!(dp.upstream_addr("cache").is_none());
    tx.send_modify(|cur| {
        let mut next = (**cur.as_ref().unwrap()).clone();
        next.upstreams = vec![upstream(vec![])];
        *cur = Some(Arc::new(next));
    });
    eventually(Duration::from_secs(2), || {
        dp.upstream_addr("cache").is_some()
    })
    .await;
    let addr = dp.upstream_addr("cache").unwrap();
    assert!(TcpStream::connect(addr).await.is_ok());
    tx.send_modify(|cur| {
        let mut next = (**cur.as_ref().unwrap()).clone();
        next.upstreams.clear();
        *cur = Some(Arc::new(next));
    });
    eventually(Duration::from_secs(2), || {
        dp.upstream_addr("cache").is_none()
    })
    .await;
}

/// An upstream listener's relay is closed once no byte has moved for `tcp_idle_timeout_ms`
/// (Envoy's `tcp_proxy` `idle_timeout`), counted from the last byte.
#[tokio::test]
async fn a_silent_upstream_relay_is_closed_after_the_idle_timeout() {
    let ca = TestCa::new("Consul CA 1");
    let seen: Seen = Arc::default();
    let cache = fake_upstream(&ca, ca.service_leaf("cache"), "cache-01", seen).await;
    let limit = Duration::from_millis(300);
    let knobs = Knobs {
        tcp_idle_timeout: Some(limit),
        ..Knobs::default()
    };
    let up = upstream(vec![target("cache", vec![ep(cache, "c1")])]);
    let snap = snapshot(
        &ca,
        echo_app().await,
        vec![],
        DefaultPolicy::ALLOW,
        knobs,
        vec![up],
    );
    let (_tx, rx) = watch::channel(Some(Arc::new(snap)));
    let dp = DataPlane::new(rx).start().await.unwrap();
    let mut s = TcpStream::connect(dp.upstream_addr("cache").unwrap())
        .await
        .unwrap();
    let mut name = [0u8; 8];
    s.read_exact(&mut name).await.unwrap();
    assert_eq!(echo_once(&mut s, b"hello").await.unwrap(), b"hello");
    let quiet_since = tokio::time::Instant::now();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(limit * 10, s.read_to_end(&mut rest)).await;
    assert!(
        read.is_ok(),
        "still open {:?} after the last byte",
        limit * 10
    );
    assert!(rest.is_empty(), "{rest:?}");
    let silent = quiet_since.elapsed();
    assert!(
        silent >= limit,
        "closed after {silent:?}, before the {limit:?} timeout"
    );
}

#[test]
fn candidates_rotate_and_are_bounded() {
    let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let up = upstream(vec![
        target("cache", vec![ep(a, "a"), ep(a, "b")]),
        target("cache-dc2", vec![ep(a, "c"), ep(a, "d")]),
    ]);
    let labels = |start| {
        candidates(&up, start)
            .iter()
            .map(|(_, e)| e.label.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(labels(0), ["a", "b", "c"]);
    assert_eq!(labels(1), ["b", "a", "d"]);
}
