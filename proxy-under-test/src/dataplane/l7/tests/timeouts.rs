//! Half a request body cannot hold a stream: with a short `stream_idle_timeout_ms` (injected),
//! a caller that sends a request head and part of its body, then nothing, gets Envoy's
//! `408 stream timeout` (HTTP/1.1: and the connection closed), over HTTP/1.1 and HTTP/2 (to an app
//! that reads the whole body before answering); a body that keeps coming is unaffected (a GET
//! over HTTP/2, whose body of unknown length reaches the HTTP/1.1 app chunked).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use crate::authz::{DefaultPolicy, Intention};
use crate::dataplane::{DataPlane, RunningDataPlane};
use crate::knobs::Knobs;
use crate::snapshot::Snapshot;
use crate::testutil::h2::chan_body;
use crate::testutil::*;

/// An HTTP/1.1 app that reads the whole request body before it answers `read <n>`.
async fn reading_app() -> std::net::SocketAddr {
    use http_body_util::{BodyExt, Full};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            let svc = hyper::service::service_fn(|req: Request<hyper::body::Incoming>| async {
                let body = req.into_body().collect().await?.to_bytes();
                let text = format!("read {}", body.len());
                Ok::<_, hyper::Error>(http::Response::new(Full::new(Bytes::from(text))))
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    addr
}

const IDLE: Duration = Duration::from_millis(300);
/// Generous: the close must come from the proxy's timer, not from this one.
const PATIENCE: Duration = Duration::from_secs(20);

/// The public listener of an http `db` whose `Proxy.Config` also has `key: ms` (injected).
async fn db_with(
    ca: &TestCa,
    key: &str,
    ms: u64,
) -> (watch::Sender<Option<Arc<Snapshot>>>, RunningDataPlane) {
    let app = reading_app().await;
    let mut config = serde_json::json!({"protocol": "http"});
    config[key] = ms.into();
    let knobs = Knobs::from_config(config.as_object().unwrap());
    let snap = snapshot(
        ca,
        app,
        vec![Intention::l4("web", "db", true)],
        DefaultPolicy::DENY,
        knobs,
        vec![],
    );
    let (tx, rx) = watch::channel(Some(Arc::new(snap)));
    (tx, DataPlane::new(rx).start().await.unwrap())
}

#[tokio::test]
async fn half_a_body_over_http1_gets_408_and_a_close() {
    let ca = TestCa::new("Consul CA 1");
    let (_tx, dp) = db_with(&ca, "stream_idle_timeout_ms", 300).await;
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let mut tls = connect(dp.inbound_addr(), cfg).await.unwrap();
    tls.write_all(b"POST /public/x HTTP/1.1\r\nhost: db\r\ncontent-length: 10\r\n\r\nabc")
        .await
        .unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(PATIENCE, tls.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(read.is_ok(), "still open after {PATIENCE:?}: {text:?}");
    assert!(text.starts_with("HTTP/1.1 408 "), "{text:?}");
    assert!(text.ends_with("stream timeout"), "{text:?}");
    assert!(
        started.elapsed() >= IDLE - Duration::from_millis(50),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn half_a_body_over_http2_gets_408() {
    let ca = TestCa::new("Consul CA 1");
    let (_tx, dp) = db_with(&ca, "stream_idle_timeout_ms", 300).await;
    let mut cfg = (*client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false)).clone();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let tls = connect(dp.inbound_addr(), Arc::new(cfg)).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let (tx, body) = chan_body();
    tx.send(Ok(Bytes::from_static(b"abc"))).await.unwrap();
    let req = Request::post("https://db/public/x").body(body).unwrap();
    let started = Instant::now();
    let resp = tokio::time::timeout(PATIENCE, sender.send_request(req))
        .await
        .expect("an answer in time")
        .unwrap();
    assert_eq!(resp.status(), StatusCode::REQUEST_TIMEOUT);
    assert!(started.elapsed() >= IDLE - Duration::from_millis(50));
    drop(tx);
}

#[tokio::test]
async fn a_body_that_keeps_coming_is_not_cut() {
    let ca = TestCa::new("Consul CA 1");
    let (_tx, dp) = db_with(&ca, "stream_idle_timeout_ms", 300).await;
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let mut cfg = (*cfg).clone();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let tls = connect(dp.inbound_addr(), Arc::new(cfg)).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let (tx, body) = chan_body();
    // Each chunk comes well within the idle timeout; together they take longer than it.
    tokio::spawn(async move {
        for _ in 0..6 {
            if tx.send(Ok(Bytes::from_static(b"chunk"))).await.is_err() {
                return;
            }
            tokio::time::sleep(IDLE / 3).await;
        }
    });
    let req = Request::get("https://db/public/x").body(body).unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let got = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap();
    assert_eq!(got.to_bytes(), "read 30");
}

/// An HTTP/2 caller that sends the preface and half a HEADERS frame, then nothing, is closed
/// by the connection idle timeout (no request head ever completes, so no stream timer runs).
#[tokio::test]
async fn a_stalled_http2_header_block_is_closed_when_idle() {
    let ca = TestCa::new("Consul CA 1");
    let (_tx, dp) = db_with(&ca, "idle_timeout_ms", 300).await;
    let mut cfg = (*client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false)).clone();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let mut tls = connect(dp.inbound_addr(), Arc::new(cfg)).await.unwrap();
    tls.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    // An empty SETTINGS frame, then the first 9-byte header of a HEADERS frame announcing 64
    // bytes (stream 1, END_HEADERS) followed by only 3 of them.
    tls.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
    tls.write_all(&[0, 0, 64, 1, 4, 0, 0, 0, 1, 0x82, 0x86, 0x84])
        .await
        .unwrap();
    tls.flush().await.unwrap();
    let started = Instant::now();
    let mut sink = Vec::new();
    let read = tokio::time::timeout(PATIENCE, tls.read_to_end(&mut sink)).await;
    assert!(read.is_ok(), "still open after {PATIENCE:?}");
    assert!(
        started.elapsed() >= IDLE - Duration::from_millis(50),
        "closed before the idle timeout: {:?}",
        started.elapsed()
    );
}

/// Requests that keep coming keep the connection: idle means no byte moving, not a lifetime.
#[tokio::test]
async fn a_busy_connection_outlives_the_idle_timeout() {
    let ca = TestCa::new("Consul CA 1");
    // A generous timeout: the pauses between requests must stay far below it on a busy machine.
    let idle = Duration::from_millis(1000);
    let (_tx, dp) = db_with(&ca, "idle_timeout_ms", 1000).await;
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let tls = connect(dp.inbound_addr(), cfg).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let started = Instant::now();
    let mut sent = 0;
    while started.elapsed() < idle * 3 {
        let req = Request::get("https://db/public/x")
            .header("host", "db")
            .body(http_body_util::Empty::<Bytes>::new())
            .unwrap();
        let resp = sender.send_request(req).await.expect("connection kept");
        assert_eq!(resp.status(), StatusCode::OK);
        let _ = http_body_util::BodyExt::collect(resp.into_body()).await;
        sent += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(sent >= 4, "{sent}");
}
