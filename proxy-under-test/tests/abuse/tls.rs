//! The public mTLS listener (L4): proptest garbage, a real ClientHello truncated at every byte,
//! stalled handshakes (nothing, half a record, a whole ClientHello, then silence) closed by the
//! handshake timeout, and half-open connections after a good handshake. After every attack the
//! proxy still serves `web`; afterwards its accepted connections and its descriptors return to
//! the baseline.

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinSet;

use super::raw::*;
use crate::e2e::support::*;

/// Garbage that looks more and more like TLS: anything, a handshake record header with random
/// contents, and a real ClientHello with bytes flipped.
fn garbage(hello: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let len = hello.len();
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..2048),
        prop::collection::vec(any::<u8>(), 0..512).prop_map(|tail| {
            let mut v = vec![0x16, 0x03, 0x01];
            v.extend(tail);
            v
        }),
        prop::collection::vec((0..len, any::<u8>()), 1..8).prop_map(move |flips| {
            let mut v = hello.clone();
            for (i, b) in flips {
                v[i] = b;
            }
            v
        }),
    ]
}

#[test]
fn garbage_on_the_public_listener() {
    let rt = runtime();
    let _in_rt = rt.enter();
    let (w, mut child) = rt.block_on(world(json!({}), None));
    let web = w.probe("web");
    let baseline = child.fds();
    let hello = client_hello(&web);
    let mut runner = TestRunner::new(config());
    let cases = runner.config().cases;
    let started = std::time::Instant::now();
    // proptest runs the cases synchronously; each one is driven on the runtime.
    let result = runner.run(&(garbage(hello), prop::bool::ANY), |(bytes, vanish)| {
        let then = if vanish {
            Then::Vanish
        } else {
            Then::HalfClose
        };
        let closed = rt.block_on(attack(w.public(), &bytes, then, PATIENCE));
        prop_assert!(
            closed.is_some(),
            "still open {PATIENCE:?} after {} bytes",
            bytes.len()
        );
        prop_assert!(
            rt.block_on(web.works(w.public())),
            "web refused after {} garbage bytes",
            bytes.len()
        );
        Ok(())
    });
    child.assert_alive("garbage");
    result.unwrap_or_else(|e| panic!("{e}"));
    let settle = rt.block_on(child.settles(w.public_port, baseline, "garbage connections closed"));
    println!(
        "garbage: {cases} cases in {:?}; fds {baseline} -> {} (settled in {settle:?})",
        started.elapsed(),
        child.fds()
    );
}

/// Every prefix of a real ClientHello, then a half-close: the proxy sees EOF mid-handshake and
/// closes at once, long before its (here 60 s) handshake timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_client_hellos() {
    let (w, mut child) = world(json!({"Config": {"handshake_timeout_ms": 60_000}}), None).await;
    let web = w.probe("web");
    let baseline = child.fds();
    let hello = client_hello(&web);
    for chunk in (0..hello.len()).collect::<Vec<_>>().chunks(32) {
        let mut set = JoinSet::new();
        for &cut in chunk {
            let (addr, bytes) = (w.public(), hello[..cut].to_vec());
            set.spawn(async move {
                let closed = attack(addr, &bytes, Then::HalfClose, PATIENCE).await;
                (cut, closed)
            });
        }
        while let Some(r) = set.join_next().await {
            let (cut, closed) = r.unwrap();
            assert!(
                closed.is_some(),
                "cut at {cut}: still open {PATIENCE:?} after EOF"
            );
        }
        child.assert_alive("truncated ClientHellos");
    }
    assert!(
        web.works(w.public()).await,
        "web after truncated ClientHellos"
    );
    child
        .settles(w.public_port, baseline, "truncated handshakes closed")
        .await;
}

/// Stalls at the interesting points: nothing, 1 byte, half a record header, a whole header, the
/// handshake header, half the hello, all but one byte, the whole hello (the proxy answers and
/// waits for our certificate). All closed by the handshake timeout, not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_client_hellos() {
    let (w, mut child) = world(json!({}), None).await;
    let web = w.probe("web");
    let baseline = child.fds();
    let hello = client_hello(&web);
    let n = hello.len();
    let mut set = JoinSet::new();
    for cut in [0, 1, 3, 5, 9, n / 2, n - 1, n] {
        let (addr, bytes) = (w.public(), hello[..cut].to_vec());
        set.spawn(async move {
            let closed = attack(addr, &bytes, Then::Stall, PATIENCE).await;
            (cut, closed)
        });
    }
    while let Some(r) = set.join_next().await {
        let (cut, closed) = r.unwrap();
        let took = closed.unwrap_or_else(|| panic!("stall after {cut} bytes: never closed"));
        // The proxy's clock starts at accept, just before ours: allow a little under.
        assert!(
            took + Duration::from_millis(300) >= HANDSHAKE_TIMEOUT,
            "stall after {cut} bytes closed after {took:?}, before the {HANDSHAKE_TIMEOUT:?} \
             handshake timeout"
        );
        println!("stall after {cut} bytes: closed after {took:?}");
    }
    child.assert_alive("stalled handshakes");
    assert!(web.works(w.public()).await, "web after stalled handshakes");
    child
        .settles(w.public_port, baseline, "stalled handshakes closed")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_after_the_handshake() {
    let (w, mut child) = world(json!({}), None).await;
    let web = w.probe("web");
    let baseline = child.fds();
    let app_port = w.app.port();

    // The caller shuts down its write side (close_notify + FIN): the echo still comes back,
    // then the proxy closes towards the caller once the app has closed.
    for _ in 0..20 {
        let mut s = web.connect(w.public()).await.unwrap();
        s.write_all(b"last words").await.unwrap();
        s.shutdown().await.unwrap();
        let mut got = Vec::new();
        tokio::time::timeout(PATIENCE, s.read_to_end(&mut got))
            .await
            .expect("closed after the half-close")
            .ok();
        assert_eq!(got, b"last words");
    }
    // The caller vanishes mid-connection (no close_notify), with and without unread data.
    for i in 0..20 {
        let mut s = web.connect(w.public()).await.unwrap();
        if i % 2 == 0 {
            s.write_all(&[b'x'; 100_000]).await.unwrap();
        }
        drop(s);
    }
    // The TCP write side closed under a live TLS session (no close_notify).
    for _ in 0..20 {
        let s = web.connect(w.public()).await.unwrap();
        let (mut tcp, _) = s.into_inner();
        tcp.shutdown().await.unwrap();
        assert!(
            closed_by_peer(&mut tcp, PATIENCE).await,
            "closed after a bare FIN"
        );
    }
    child.assert_alive("half-open connections");
    assert!(web.works(w.public()).await);
    child
        .settles(w.public_port, baseline, "half-open connections closed")
        .await;
    eventually("app connections closed", PATIENCE, || async {
        child.dialed_to(app_port) == 0
    })
    .await;
}
