//! Raw attackers: a real ClientHello as bytes, plain TCP connections that send what they are
//! given and then half-close, vanish or stall, the number of proptest cases, and the worlds the
//! attacks run in (the proxy binary in front of an L4 echo app or an L7 h2c/HTTP/1.1 app).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use bytes::Bytes;
use http::Response;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use proptest::test_runner::Config;
use rustls::ClientConnection;
use rustls_pki_types::ServerName;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::child::ProxyChild;
use crate::e2e::support::*;

/// Proptest cases per property in the CI pass; `PROPTEST_CASES` overrides (the long run).
const CI_CASES: u32 = 48;

pub(crate) fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(CI_CASES);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// A runtime for the proptest-driven tests (proptest runs cases synchronously; each case is
/// driven with `block_on`).
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The handshake timeout of the abuse worlds (short, so stalls end quickly).
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_millis(1500);

/// A sim, `db` behind the proxy binary with `proxy` as its `Proxy` block (a
/// `handshake_timeout_ms` of [`HANDSHAKE_TIMEOUT`] unless `proxy` sets one), `web` allowed.
pub(crate) async fn world(mut proxy: Value, app: Option<SocketAddr>) -> (World, ProxyChild) {
    let config = proxy
        .as_object_mut()
        .unwrap()
        .entry("Config")
        .or_insert_with(|| json!({}));
    let timeout = u64::try_from(HANDSHAKE_TIMEOUT.as_millis()).unwrap();
    config
        .as_object_mut()
        .unwrap()
        .entry("handshake_timeout_ms")
        .or_insert(json!(timeout));
    let w = match app {
        Some(app) => {
            World::with_app(sim_builder(), proxy, app, Arc::new(AtomicUsize::new(0))).await
        }
        None => World::new(sim_builder(), proxy).await,
    };
    w.allow("web");
    let child = ProxyChild::start(&w).await;
    (w, child)
}

/// An HTTP app answering `200 ok` over HTTP/1.1 or h2c (prior knowledge), as the L7 proxy
/// reaches it.
pub(crate) async fn http_app() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            let svc = service_fn(|_req| async {
                Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::from_static(
                    b"ok",
                ))))
            });
            tokio::spawn(async move {
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    addr
}

/// The first flight `probe` sends: one TLS record holding its ClientHello.
pub(crate) fn client_hello(probe: &Probe) -> Vec<u8> {
    let name = ServerName::try_from("db.default.dc1.internal.consul").unwrap();
    let mut conn = ClientConnection::new(probe.config.clone(), name).unwrap();
    let mut out = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut out).unwrap();
    }
    out
}

/// What an attacker does after sending its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Then {
    /// Shuts down its write side and waits for the proxy to close.
    HalfClose,
    /// Closes at once (the proxy may be mid-read or mid-write).
    Vanish,
    /// Keeps the connection open and silent; the proxy must close it.
    Stall,
}

/// Connects to `addr`, writes `bytes` (a failed write is fine: the proxy may have closed
/// already), then does `then`. For `HalfClose` and `Stall`, returns how long the proxy took to
/// close after the bytes were written (`None`: still open after `limit`).
pub(crate) async fn attack(
    addr: SocketAddr,
    bytes: &[u8],
    then: Then,
    limit: Duration,
) -> Option<Duration> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(bytes).await;
    let sent = tokio::time::Instant::now();
    match then {
        Then::Vanish => {
            drop(s);
            Some(Duration::ZERO)
        }
        Then::HalfClose | Then::Stall => {
            if then == Then::HalfClose {
                let _ = s.shutdown().await;
            }
            closed_by_peer(&mut s, limit).await.then(|| sent.elapsed())
        }
    }
}

/// Reads (and discards) until EOF or an error; `false` if still open after `limit`.
pub(crate) async fn closed_by_peer(s: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = vec![0u8; 16 * 1024];
    tokio::time::timeout(limit, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}
