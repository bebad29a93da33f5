//! Thousands of idle connections on the public listener: [`RAW`] that connect and never send a
//! byte (a long handshake timeout keeps them open) and [`MTLS`] that complete the handshake and
//! reach the app, then sit silent. The proxy keeps serving, its resident memory stays bounded
//! (printed, and checked against [`MAX_KIB_PER_CONN`]), and when the attackers close, its
//! accepted connections, its app connections and its descriptors return to the baseline.

use serde_json::json;
use tokio::net::TcpStream;

use super::child::raise_fd_limit;
use super::raw::world;
use crate::e2e::support::*;

/// Idle connections that never send a byte.
const RAW: usize = 3000;
/// Idle connections after a completed mTLS handshake (each also holds a connection to the app).
const MTLS: usize = 500;
/// Memory bound per idle connection, averaged (KiB).
const MAX_KIB_PER_CONN: u64 = 64;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    missing_nofile,
    ignore = "needs a hard RLIMIT_NOFILE of at least 4256 (ulimit -Hn); CONFORMANCE_REQUIRE_NOFILE=1 makes it a failure"
)]
async fn thousands_of_idle_connections() {
    // This process holds the attackers' ends, the proxy (which inherits the limit) the other
    // ends plus one app connection per mTLS connection.
    let needed = (RAW + 2 * MTLS + 256) as u64;
    let limit = raise_fd_limit();
    assert!(
        limit >= needed,
        "RLIMIT_NOFILE is {limit}, the test needs {needed} (raise the hard limit: ulimit -Hn)"
    );
    let (w, mut child) = world(
        json!({"Config": {"handshake_timeout_ms": 600_000, "reauthorize_interval_ms": 0}}),
        None,
    )
    .await;
    let web = w.probe("web");
    assert!(web.works(w.public()).await);
    let (fds, rss) = (child.fds(), child.rss_kib());

    let mut raw = Vec::with_capacity(RAW);
    for _ in 0..RAW {
        raw.push(TcpStream::connect(w.public()).await.unwrap());
    }
    let mut tls = Vec::with_capacity(MTLS);
    for _ in 0..MTLS {
        let mut s = web.connect(w.public()).await.unwrap();
        round_trip(&mut s, b"hi").await.unwrap();
        tls.push(s);
    }
    let total = RAW + MTLS;
    let took = eventually("every idle connection accepted", PATIENCE, || async {
        child.accepted_on(w.public_port) >= total
    })
    .await;
    assert!(
        web.works(w.public()).await,
        "web with {total} idle connections open"
    );
    child.assert_alive("idle connections");
    let (fds_busy, rss_busy) = (child.fds(), child.rss_kib());
    let per_conn = rss_busy.saturating_sub(rss) / total as u64;
    println!(
        "idle: {RAW} raw + {MTLS} mTLS connections (accepted in {took:?}): fds {fds} -> \
         {fds_busy}, RSS {rss} KiB -> {rss_busy} KiB ({per_conn} KiB per connection)"
    );
    assert!(
        per_conn <= MAX_KIB_PER_CONN,
        "{per_conn} KiB per idle connection (bound {MAX_KIB_PER_CONN} KiB)"
    );

    drop(raw);
    drop(tls);
    let settle = child
        .settles(w.public_port, fds, "idle connections closed")
        .await;
    eventually("app connections closed", PATIENCE, || async {
        child.dialed_to(w.app.port()) == 0
    })
    .await;
    println!(
        "idle: closed; fds back to {} in {settle:?}, RSS {} KiB",
        child.fds(),
        child.rss_kib()
    );
    assert!(web.works(w.public()).await);
}
