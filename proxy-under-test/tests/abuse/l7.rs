//! The L7 listener (`protocol = "http2"`: HTTP/2 by ALPN `h2`, HTTP/1.1 otherwise) after a good
//! mTLS handshake: malformed HTTP/1.1 (bad request lines, oversize and countless headers,
//! smuggling shapes, short bodies), bad prefaces and hostile HTTP/2 frames (oversize frames,
//! CONTINUATION and rapid-reset floods, bad SETTINGS/PING/WINDOW_UPDATE, garbage HPACK), and
//! proptest-random frame sequences. Each gets an answer or a close, never a hang and never a
//! 5xx for the caller's own mistake; the proxy still serves good HTTP/1.1 and HTTP/2 requests
//! after each one, with bounded memory, and its connections return to the baseline.

use std::sync::Arc;

use bytes::Bytes;
use http::Request;
use http_body_util::Empty;
use hyper_util::rt::{TokioExecutor, TokioIo};
use proptest::test_runner::TestRunner;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::child::ProxyChild;
use super::frames::{h1_attacks, h2_attacks, random_frames};
use super::raw::*;
use crate::e2e::support::*;

/// `web`'s probe offering one ALPN protocol.
fn probe(w: &World, alpn: &[u8]) -> Probe {
    let mut p = w.probe("web");
    let mut cfg = (*p.config).clone();
    cfg.alpn_protocols = vec![alpn.to_vec()];
    p.config = Arc::new(cfg);
    p
}

/// A good request over a fresh connection; its status.
async fn good_status(w: &World, h2: bool) -> Result<u16, String> {
    let tls = probe(w, if h2 { b"h2" } else { b"http/1.1" })
        .connect(w.public())
        .await?;
    let req = Request::get("https://db/")
        .header("host", "db")
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let io = TokioIo::new(tls);
    let fut = async {
        let resp = if h2 {
            let (mut s, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
                .handshake(io)
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            s.send_request(req).await
        } else {
            let (mut s, conn) = hyper::client::conn::http1::handshake(io)
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            s.send_request(req).await
        };
        resp.map(|r| r.status().as_u16()).map_err(|e| e.to_string())
    };
    tokio::time::timeout(PATIENCE, fut)
        .await
        .map_err(|_| "request timed out".to_owned())?
}

async fn assert_serves(w: &World, child: &mut ProxyChild, after: &str) {
    child.assert_alive(after);
    for h2 in [false, true] {
        let status = good_status(w, h2).await;
        assert_eq!(status, Ok(200), "good request (h2: {h2}) after {after}");
    }
}

/// Sends `bytes` over a good mTLS connection negotiating `alpn`, closes its write side, and reads
/// until the proxy closes. Returns the first bytes of the answer; panics on a hang.
async fn after_handshake(w: &World, alpn: &[u8], bytes: &[u8], what: &str) -> Vec<u8> {
    let mut tls = probe(w, alpn).connect(w.public()).await.unwrap();
    let fut = async {
        let _ = tls.write_all(bytes).await;
        let _ = tls.shutdown().await;
        let mut answer = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match tls.read(&mut buf).await {
                Ok(0) | Err(_) => return answer,
                Ok(n) if answer.len() < 256 => answer.extend_from_slice(&buf[..n]),
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(PATIENCE, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: the proxy neither answered nor closed"))
}

async fn l7_world() -> (World, ProxyChild) {
    let app = http_app().await;
    world(json!({"Config": {"protocol": "http2"}}), Some(app)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_http1_after_a_good_handshake() {
    let (w, mut child) = l7_world().await;
    assert_serves(&w, &mut child, "start").await;
    let (fds, rss) = (child.fds(), child.rss_kib());
    for (what, bytes) in h1_attacks() {
        let answer = after_handshake(&w, b"http/1.1", &bytes, what).await;
        let head = String::from_utf8_lossy(&answer[..answer.len().min(12)]).into_owned();
        assert!(
            !head.starts_with("HTTP/1.1 5"),
            "{what}: the caller's mistake answered with {head:?}"
        );
        assert_serves(&w, &mut child, what).await;
        println!("http/1.1 {what}: {head:?}");
    }
    child
        .settles(w.public_port, fds, "HTTP/1.1 attackers closed")
        .await;
    println!("http/1.1 attacks: RSS {rss} KiB -> {} KiB", child.rss_kib());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_http2_after_a_good_handshake() {
    let (w, mut child) = l7_world().await;
    assert_serves(&w, &mut child, "start").await;
    let (fds, rss) = (child.fds(), child.rss_kib());
    let mut peak = rss;
    for (what, bytes) in h2_attacks() {
        after_handshake(&w, b"h2", &bytes, what).await;
        peak = peak.max(child.rss_kib());
        assert_serves(&w, &mut child, what).await;
    }
    child
        .settles(w.public_port, fds, "HTTP/2 attackers closed")
        .await;
    println!("http/2 attacks: RSS {rss} KiB, peak {peak} KiB");
    assert!(
        peak < rss + 64 * 1024,
        "memory grew from {rss} KiB to {peak} KiB under the HTTP/2 attacks"
    );
}

#[test]
fn random_http2_frames_after_a_good_handshake() {
    let rt = runtime();
    let _in_rt = rt.enter();
    let (w, mut child) = rt.block_on(l7_world());
    let fds = child.fds();
    let mut runner = TestRunner::new(config());
    let result = runner.run(&random_frames(), |bytes| {
        rt.block_on(after_handshake(&w, b"h2", &bytes, "random frames"));
        let status = rt.block_on(good_status(&w, true));
        proptest::prop_assert_eq!(status, Ok(200));
        Ok(())
    });
    child.assert_alive("random frames");
    result.unwrap_or_else(|e| panic!("{e}"));
    rt.block_on(child.settles(w.public_port, fds, "random-frame attackers closed"));
}
