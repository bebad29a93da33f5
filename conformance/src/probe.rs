//! mTLS probes of the proxy: one-shot inbound connections (bytes through to the echo app and
//! back, or refused), HTTP requests, long-lived connections opened by `open` steps, the chain
//! the proxy serves, and connections through its upstream listeners to harness-run instances.
//! Every probe has a deadline; none can hang a scenario.

mod conn;
mod h2;
mod http;
mod inbound;
mod l7;
mod tls_offer;
mod upstream;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agent_sim::ca::ClientIdentity;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

pub(crate) use self::conn::Conn;
pub(crate) use self::h2::describe as describe_streams;
pub(crate) use self::h2::{GrpcCall, connect_plain as h2_plain, connect_tls as h2_tls};
pub(crate) use self::http::{HttpProbe, one_shot as http_one_shot};
pub(crate) use self::inbound::{Inbound, inbound, inbound_plain};
pub(crate) use self::l7::{L7Conn, L7Request, Reply};
pub(crate) use self::tls_offer::tls_handshake;
pub(crate) use self::upstream::{listener_open, upstream_once};
use crate::tls::{self, Captured};

// Deadlines are generous so a busy machine does not turn a slow answer into a refusal; a
// correct proxy answers in milliseconds, and refusals are quick.

/// TCP connect deadline.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// TLS handshake deadline.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Deadline for an answer (echo, HTTP response, instance id).
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// A unique token for one probe (what "no byte reached the app" searches for).
pub(crate) fn token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("conformance-probe-{:08x}-{n}", rand::random::<u32>())
}

/// Connects and handshakes as `identity` (no client certificate when `None`); the server's
/// chain is captured even when the handshake then fails.
pub(crate) async fn tls_connect(
    addr: SocketAddr,
    identity: Option<&ClientIdentity>,
) -> (Result<TlsStream<TcpStream>, String>, Arc<Captured>) {
    tls_connect_alpn(addr, identity, &[]).await
}

/// [`tls_connect`] offering the ALPN protocols `alpn`.
pub(crate) async fn tls_connect_alpn(
    addr: SocketAddr,
    identity: Option<&ClientIdentity>,
    alpn: &[&[u8]],
) -> (Result<TlsStream<TcpStream>, String>, Arc<Captured>) {
    let captured = Arc::new(Captured::default());
    let result = async {
        let mut cfg = tls::client_config(identity, captured.clone()).map_err(|e| e.to_string())?;
        if !alpn.is_empty() {
            let mut c = (*cfg).clone();
            c.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
            cfg = Arc::new(c);
        }
        let tcp = dial(addr)
            .await
            .map_err(|e| format!("TCP connect failed: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let name = ServerName::try_from("db.conformance.invalid")
            .map_err(|e| e.to_string())?
            .to_owned();
        tokio::time::timeout(
            HANDSHAKE_TIMEOUT,
            TlsConnector::from(cfg).connect(name, tcp),
        )
        .await
        .map_err(|_| "TLS handshake timed out".to_owned())?
        .map_err(|e| format!("TLS handshake failed: {e}"))
    }
    .await;
    (result, captured)
}

/// Connects to `addr` as a downstream client would: in a transparent scenario, from outside
/// the pod (the node namespace) unless `addr` is a loopback address; else from here. Bounded
/// by [`CONNECT_TIMEOUT`].
pub(crate) async fn dial(addr: SocketAddr) -> io::Result<TcpStream> {
    match crate::netns::outside() {
        Some(node) if !addr.ip().is_loopback() => node.connect(addr).await,
        _ => tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TCP connect timed out"))?,
    }
}

/// The chain the proxy serves on `addr` (leaf first), seen by a client presenting `identity`.
pub(crate) async fn served_chain(
    addr: SocketAddr,
    identity: Option<&ClientIdentity>,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let (result, captured) = tls_connect(addr, identity).await;
    match (captured.take(), result) {
        (Some(chain), _) => Ok(chain),
        (None, Err(e)) => Err(e),
        (None, Ok(_)) => Err("the handshake completed without a server certificate".into()),
    }
}
