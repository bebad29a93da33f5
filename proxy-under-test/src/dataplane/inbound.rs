//! Inbound: accept, mTLS handshake (client certificate required, verified against the roots),
//! identify the peer by its SPIFFE URI SAN, authorize from the snapshot, then copy bytes to the
//! local application (L4) or hand the stream to the HTTP server (L7). Open connections are
//! re-authorized on every snapshot change and on an interval, and capped by a lifetime. With
//! `max_inbound_connections`, a connection over the limit is closed right after accept.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustls_pki_types::{CertificateDer, UnixTime};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, timeout};

use super::local::{self, AppConn};
use super::{Shared, conn_idle, flag_set, l7};
use crate::knobs::{Knobs, Protocol};
use crate::metrics::RefuseReason;
use crate::seam::OpenConnection;
use crate::snapshot::Snapshot;
use crate::spiffe::{ServiceId, service_id_of_cert};
use crate::tls::session::{self, TlsStream};

/// Copy buffer per direction for plain L4 copies (permissive, passthrough). tokio's default is
/// 8 KiB; 64 KiB gave about 1.5x the throughput in the benchmark (`examples/bench.rs`).
pub(crate) const COPY_BUF: usize = 64 * 1024;

/// The socket under a TLS stream: our record layer ([`session`]) reads it in big chunks itself.
pub(crate) type Wire = TcpStream;

/// An authenticated inbound peer.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    pub(crate) id: ServiceId,
    pub(crate) chain: Vec<CertificateDer<'static>>,
    /// When the chain was verified; re-verification uses this time so a peer leaf expiring
    /// mid-connection does not cut it, but a root removal does.
    pub(crate) verified_at: UnixTime,
    pub(crate) addr: SocketAddr,
}

/// How an open connection ended.
#[derive(Debug)]
pub(crate) enum End {
    Done,
    Revoked(String),
    Lifetime,
    Killed,
}

pub(crate) async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    lookup: super::transparent::OriginalDstFn,
) {
    let accept = || listener.accept();
    super::accept::until_stop(&shared, "inbound", accept, |(tcp, addr): (TcpStream, _)| {
        let Some(slot) = InboundSlot::take(&shared) else {
            // Envoy's `connection_limit` filter: closed at once, before the TLS handshake.
            shared.metrics.refused(RefuseReason::ConnectionLimit);
            tracing::info!(peer = %addr, "inbound refused: max_inbound_connections already open");
            drop(tcp);
            return;
        };
        let _ = tcp.set_nodelay(true);
        let conn_shared = shared.clone();
        super::workers::spawn_tcp(&shared, tcp, move |tcp| async move {
            handle(tcp, addr, conn_shared, lookup).await;
            drop(slot);
        });
    })
    .await;
    tracing::info!("public listener closed");
}

/// One counted open inbound connection (`max_inbound_connections`); released on drop.
pub(crate) struct InboundSlot(Arc<AtomicUsize>);

impl InboundSlot {
    /// A slot, unless the newest snapshot's limit is already reached (no snapshot or no limit:
    /// always one). The limit applies to connections opened after a change; open ones stay.
    pub(crate) fn take(shared: &Shared) -> Option<Self> {
        let limit = shared
            .current()
            .and_then(|s| s.knobs.max_inbound_connections)
            .map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX));
        let open = &shared.inbound_open;
        open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < limit).then_some(n + 1)
        })
        .ok()?;
        Some(Self(open.clone()))
    }
}

impl Drop for InboundSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Checks the peer's certificate against the snapshot's identity rules.
pub(crate) fn identify(chain: &[CertificateDer<'_>], snap: &Snapshot) -> Result<ServiceId, String> {
    if let Some(id) = snap.hooks.identify(chain, snap) {
        return id;
    }
    let leaf = chain.first().ok_or("no client certificate")?;
    let id = service_id_of_cert(leaf, snap.knobs.verify_spiffe_uri).map_err(|e| e.to_string())?;
    if snap.knobs.verify_trust_domain
        && !snap.roots.trust_domain.is_empty()
        && id.trust_domain != snap.roots.trust_domain
    {
        return Err(format!(
            "trust domain {:?} is not the cluster's {:?}",
            id.trust_domain, snap.roots.trust_domain
        ));
    }
    Ok(id)
}

/// Re-checks an open connection against the newest snapshot: chain still reaches a current root,
/// identity rules, and (for L4) intentions and the default policy.
pub(crate) fn reauthorize(shared: &Shared, peer: &Peer, l4: bool) -> Result<(), String> {
    let Some(snap) = shared.current() else {
        return Ok(());
    };
    let tls = shared.inbound_tls(&snap).map_err(|e| e.to_string())?;
    let (ee, rest) = peer.chain.split_first().ok_or("no client certificate")?;
    tls.verifier
        .verify_client_cert(ee, rest, peer.verified_at)
        .map_err(|e| format!("certificate no longer trusted: {e}"))?;
    identify(&peer.chain, &snap)?;
    if l4 {
        let d = snap.intentions.authorize_l4(&peer.id, snap.default_policy);
        if !d.allowed {
            return Err(d.reason);
        }
    }
    Ok(())
}

/// Runs `fut` (the connection's work) until it ends, re-authorizing on snapshot changes and every
/// `reauthorize_interval`, and closing at the lifetime or on a forced shutdown.
pub(crate) async fn supervise<F: Future>(
    shared: &Shared,
    peer: &Peer,
    knobs: &Knobs,
    l4: bool,
    fut: F,
) -> End {
    let hooks = OpenConnection::start(&shared.snapshots);
    if let Some(unsupervised) = hooks.unsupervised(&shared.kill) {
        let done = unsupervised.run(fut).await;
        return if done { End::Done } else { End::Killed };
    }
    tokio::pin!(fut);
    let mut snaps = shared.snapshots.clone();
    snaps.mark_unchanged();
    let mut snaps_alive = true;
    let mut kill = shared.kill.clone();
    let every = knobs.reauthorize_interval;
    let mut tick = tokio::time::interval_at(
        Instant::now() + every,
        every.max(std::time::Duration::from_millis(1)),
    );
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let deadline = knobs.max_connection_lifetime.map(|l| Instant::now() + l);
    loop {
        let recheck = tokio::select! {
            _ = &mut fut => return End::Done,
            changed = snaps.changed(), if snaps_alive => {
                snaps_alive = changed.is_ok();
                snaps_alive
            }
            _ = tick.tick(), if !every.is_zero() => true,
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                return End::Lifetime;
            }
            _ = flag_set(&mut kill) => return End::Killed,
        };
        if let Some(why) = hooks.revoked(&snaps) {
            return End::Revoked(why);
        }
        if recheck && let Err(reason) = reauthorize(shared, peer, l4) {
            return End::Revoked(reason);
        }
    }
}

/// Logs and counts how a connection ended.
pub(crate) fn log_end(shared: &Shared, peer: &Peer, end: &End) {
    match end {
        End::Done => {
            tracing::debug!(peer = %peer.addr, source = %peer.id, "inbound connection finished");
        }
        End::Revoked(reason) => {
            shared.metrics.refused(RefuseReason::Reauthorization);
            shared.metrics.decision(false);
            tracing::info!(peer = %peer.addr, source = %peer.id, %reason, "open inbound connection closed: no longer authorized");
        }
        End::Lifetime => {
            shared.metrics.refused(RefuseReason::Lifetime);
            tracing::info!(peer = %peer.addr, source = %peer.id, "inbound connection closed: maximum lifetime reached");
        }
        End::Killed => {
            tracing::info!(peer = %peer.addr, source = %peer.id, "inbound connection closed by shutdown");
        }
    }
}

async fn handle(
    tcp: TcpStream,
    addr: SocketAddr,
    shared: Arc<Shared>,
    lookup: super::transparent::OriginalDstFn,
) {
    let _guard = shared.track();
    shared.metrics.accepted(true);
    let Some(snap) = shared.current() else {
        return;
    };
    if super::permissive::applies(&snap, &tcp, lookup) {
        return super::permissive::serve(tcp, &snap, &shared).await;
    }
    let tls = match shared.inbound_tls(&snap) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(error = %e, "inbound TLS configuration unusable");
            return;
        }
    };
    let mut stream = match timeout(
        snap.knobs.handshake_timeout,
        super::alpn::accept(tls.config.clone(), tcp),
    )
    .await
    {
        Err(_) => {
            shared.metrics.refused(RefuseReason::HandshakeTimeout);
            tracing::info!(peer = %addr, "inbound refused: TLS handshake timed out");
            return;
        }
        Ok(Err(e)) => {
            shared.metrics.refused(RefuseReason::Handshake);
            tracing::info!(peer = %addr, error = %e, "inbound refused: TLS handshake failed");
            return;
        }
        Ok(Ok(s)) => s,
    };
    tracing::debug!(
        peer = %addr,
        version = ?stream.protocol_version(),
        suite = ?stream.negotiated_cipher_suite().suite(),
        alpn = ?stream.alpn_protocol().map(String::from_utf8_lossy),
        "inbound TLS session established"
    );
    let chain: Vec<CertificateDer<'static>> = stream
        .peer_certificates()
        .map(<[_]>::to_vec)
        .unwrap_or_default();
    let id = match identify(&chain, &snap) {
        Ok(id) => id,
        Err(reason) => {
            shared.metrics.refused(RefuseReason::Identity);
            tracing::info!(peer = %addr, %reason, "inbound refused: peer identity");
            let _ = stream.shutdown().await;
            return;
        }
    };
    let peer = Peer {
        id,
        chain,
        verified_at: UnixTime::now(),
        addr,
    };
    match snap.knobs.protocol {
        Protocol::Tcp => {
            let d = snap.intentions.authorize_l4(&peer.id, snap.default_policy);
            let d = snap
                .hooks
                .l4_decision(&snap, &peer.chain, &peer.id, d)
                .await;
            shared.metrics.decision(d.allowed);
            if !d.allowed {
                shared.metrics.refused(RefuseReason::Denied);
                tracing::info!(peer = %addr, source = %peer.id, reason = %d.reason, "inbound connection denied");
                let _ = stream.shutdown().await;
                return;
            }
            // Per connection: debug, not info (a line per connection on the hot path).
            tracing::debug!(peer = %addr, source = %peer.id, reason = %d.reason, "inbound connection allowed");
            l4(stream, peer, snap, shared).await;
        }
        Protocol::Http | Protocol::Http2 | Protocol::Grpc => {
            tracing::debug!(peer = %addr, source = %peer.id, "inbound HTTP connection");
            l7::serve(stream, peer, snap, shared).await;
        }
    }
}

async fn l4(mut tls: TlsStream<Wire>, peer: Peer, snap: Arc<Snapshot>, shared: Arc<Shared>) {
    let app = match local::connect(&snap.local_app, snap.knobs.local_connect_timeout).await {
        Ok(app) => app,
        Err(e) => {
            shared.metrics.refused(RefuseReason::LocalConnect);
            tracing::warn!(app = %snap.local_app, error = %e, "local application unreachable");
            let _ = tls.shutdown().await;
            return;
        }
    };
    match app {
        AppConn::Tcp(app) => splice(tls, app, &peer, &snap, &shared).await,
        AppConn::Unix(app) => splice(tls, app, &peer, &snap, &shared).await,
    }
}

/// Relays bytes between the peer and the local application (whatever its stream type) under
/// supervision, records opened and sealed in place ([`session::relay`]), until both directions
/// end or no byte has moved for `tcp_idle_timeout_ms`.
async fn splice<A>(mut tls: TlsStream<Wire>, app: A, peer: &Peer, snap: &Snapshot, shared: &Shared)
where
    A: session::SlotRead + Send,
{
    let (mut app, activity) = conn_idle::track(app);
    let idle = snap.knobs.tcp_idle_timeout;
    let copy = async {
        tokio::select! {
            _ = session::relay(&mut tls, &mut app) => {}
            () = activity.idle_for(idle) => {
                tracing::info!(peer = %peer.addr, source = %peer.id, idle = ?idle.unwrap_or_default(), "inbound connection closed: idle (tcp_idle_timeout_ms)");
            }
        }
    };
    let end = supervise(shared, peer, &snap.knobs, true, copy).await;
    log_end(shared, peer, &end);
}
