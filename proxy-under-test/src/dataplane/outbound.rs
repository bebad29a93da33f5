//! Outbound: one local listener per upstream (TCP here, unix sockets in [`super::unix`], both
//! handled by [`handle`]). Each accepted connection goes to a healthy
//! endpoint of the first target that has one (primary, then failover targets), round-robin,
//! over mTLS with our leaf, verifying the endpoint chains to the roots and presents the target's
//! SPIFFE identity; on failure the next candidate is tried (bounded), then the connection closes.
//! The transparent listener ([`super::transparent`]) serves its mesh destinations through the
//! same [`serve`] (candidates, dial, handshake, copy loop).
//! Host-name endpoints are resolved at each attempt ([`super::resolve`]).
//! Upstreams whose protocol is `http`, `http2` or `grpc` are served per request instead
//! ([`l7`]: the chain's routes, splits, retries, timeouts, limits, load balancing).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::inbound::{COPY_BUF, Wire};
use super::listen::UpstreamListener;
use super::{Shared, conn_idle, flag_set, resolve};
use crate::metrics::RefuseReason;
use crate::snapshot::{Bind, Endpoint, Snapshot, Target, Upstream};
use crate::tls::session::{self, TlsStream};
use crate::tls::{self, ExpectedServer};
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// At most this many endpoints are tried per accepted connection.
pub(crate) const MAX_ATTEMPTS: usize = 3;

type Addrs = Arc<Mutex<BTreeMap<(String, Bind), Bind>>>;

pub(crate) fn spawn_listener(
    listener: UpstreamListener,
    name: String,
    bind: Bind,
    shared: &Arc<Shared>,
    addrs: &Addrs,
) -> JoinHandle<()> {
    if let Some(actual) = listener.local(&bind) {
        tracing::info!(upstream = %name, addr = %actual, "upstream listener bound");
        addrs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert((name.clone(), bind.clone()), actual);
    }
    listener.spawn(name, bind, shared.clone())
}

/// Follows snapshot changes: binds listeners for new upstreams, closes removed ones.
pub(crate) async fn reconcile(
    shared: Arc<Shared>,
    mut running: BTreeMap<(String, Bind), JoinHandle<()>>,
    addrs: Addrs,
) {
    let mut snaps = shared.snapshots.clone();
    let mut stop = shared.stop.clone();
    loop {
        tokio::select! {
            _ = flag_set(&mut stop) => break,
            changed = snaps.changed() => if changed.is_err() { break },
        }
        let Some(snap) = shared.current() else {
            continue;
        };
        let wanted: BTreeSet<(String, Bind)> = snap
            .upstreams
            .iter()
            .filter(|u| u.bind.has_listener())
            .map(|u| (u.name.clone(), u.bind.clone()))
            .collect();
        running.retain(|key, handle| {
            let keep = wanted.contains(key);
            if !keep {
                tracing::info!(upstream = %key.0, bind = %key.1, "upstream removed; closing its listener");
                handle.abort();
                addrs
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(key);
            }
            keep
        });
        for key in wanted {
            if running.contains_key(&key) {
                continue;
            }
            match UpstreamListener::bind(&key.0, &key.1).await {
                Ok(l) => {
                    let h = spawn_listener(l, key.0.clone(), key.1.clone(), &shared, &addrs);
                    running.insert(key, h);
                }
                Err(e) => {
                    tracing::error!(upstream = %key.0, bind = %key.1, error = %e, "cannot bind upstream listener");
                }
            }
        }
    }
    // Wait for the listeners to be gone (unix socket files removed) before returning.
    for (_, h) in running {
        h.abort();
        let _ = h.await;
    }
}

pub(crate) async fn accept_loop(
    listener: TcpListener,
    name: String,
    bind: Bind,
    shared: Arc<Shared>,
) {
    let what = format!("upstream {name}");
    let accept = || listener.accept();
    super::accept::until_stop(
        &shared,
        &what,
        accept,
        |(tcp, peer): (TcpStream, SocketAddr)| {
            let _ = tcp.set_nodelay(true);
            let (name, bind, conn_shared) = (name.clone(), bind.clone(), shared.clone());
            super::workers::spawn_tcp(&shared, tcp, move |tcp| {
                handle(tcp, name, bind, conn_shared, Some(peer))
            });
        },
    )
    .await;
}

/// Candidate (target, endpoint) pairs: the first target with endpoints, rotated round-robin,
/// then the later targets' endpoints, at most `MAX_ATTEMPTS`.
pub(crate) fn candidates(up: &Upstream, start: usize) -> Vec<(&Target, &Endpoint)> {
    let mut out = Vec::new();
    for t in up.targets.iter().filter(|t| !t.endpoints.is_empty()) {
        let n = t.endpoints.len();
        for i in 0..n {
            out.push((t, &t.endpoints[(start + i) % n]));
        }
    }
    out.truncate(MAX_ATTEMPTS);
    out
}

/// Serves one connection accepted by upstream `name`'s listener at `bind`, whatever the client
/// stream's type (TCP or unix socket); `source` is the application's address, when known.
pub(crate) async fn handle<S>(
    mut tcp: S,
    name: String,
    bind: Bind,
    shared: Arc<Shared>,
    source: Option<SocketAddr>,
) where
    S: session::SlotRead + Send + 'static,
{
    let _guard = shared.track();
    shared.metrics.accepted(false);
    let Some(snap) = shared.current() else {
        return;
    };
    let Some(up) = snap.upstream_at(&name, &bind) else {
        let _ = tcp.shutdown().await;
        return;
    };
    if up.protocol.is_http() {
        l7::serve(tcp, name, bind, shared.clone(), source).await;
        return;
    }
    let start = shared.round_robin.fetch_add(1, Ordering::Relaxed);
    serve(tcp, &shared, &snap, up, &candidates(up, start)).await;
}

/// Serves one accepted local connection for upstream `up` (from an upstream listener or the
/// transparent listener): tries `cands` in order over mTLS, each attempt bounded by the
/// upstream's connect timeout, then splices bytes; closes the connection when none answers.
pub(crate) async fn serve<C>(
    mut tcp: C,
    shared: &Shared,
    snap: &Snapshot,
    up: &Upstream,
    cands: &[(&Target, &Endpoint)],
) where
    C: session::SlotRead + Send,
{
    let name = &up.name;
    let timeout = snap
        .knobs
        .upstream_connect_timeout
        .unwrap_or(up.connect_timeout);
    let mut remote = None;
    for &(target, ep) in cands {
        match tokio::time::timeout(timeout, dial(snap, target, ep, false)).await {
            Ok(Ok(s)) => {
                tracing::debug!(upstream = %name, target = %target.id, endpoint = %ep.label, "upstream connected");
                remote = Some(s);
                break;
            }
            Ok(Err(e)) => {
                tracing::warn!(upstream = %name, target = %target.id, endpoint = %ep.label, error = %e, "upstream endpoint refused");
            }
            Err(_) => {
                tracing::warn!(upstream = %name, target = %target.id, endpoint = %ep.label, "upstream endpoint timed out");
            }
        }
    }
    let Some(mut remote) = remote else {
        shared.metrics.refused(RefuseReason::NoEndpoint);
        tracing::warn!(upstream = %name, "no healthy upstream endpoint could be reached; closing");
        let _ = tcp.shutdown().await;
        return;
    };
    splice_tls(shared, &mut tcp, &mut remote, snap.knobs.tcp_idle_timeout).await;
}

/// Relays bytes between the application's connection and the upstream's TLS session (records
/// opened and sealed in place, [`session::relay`]) until both directions end, an error, no
/// byte has moved for `idle` (`tcp_idle_timeout_ms`), or the data plane is killed.
pub(crate) async fn splice_tls<C>(
    shared: &Shared,
    tcp: &mut C,
    remote: &mut TlsStream<Wire>,
    idle: Option<Duration>,
) where
    C: session::SlotRead,
{
    let (mut tcp, activity) = conn_idle::track(tcp);
    let mut kill = shared.kill.clone();
    tokio::select! {
        _ = session::relay(remote, &mut tcp) => {}
        _ = flag_set(&mut kill) => {}
        () = activity.idle_for(idle) => idle_closed(idle),
    }
}

/// Copies bytes both ways between plain streams until either side ends, no byte has moved for
/// `idle` (`tcp_idle_timeout_ms`), or the data plane is killed.
pub(crate) async fn splice<C, S>(
    shared: &Shared,
    tcp: &mut C,
    remote: &mut S,
    idle: Option<Duration>,
) where
    C: AsyncRead + AsyncWrite + Unpin,
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut tcp, activity) = conn_idle::track(tcp);
    let mut kill = shared.kill.clone();
    tokio::select! {
        _ = tokio::io::copy_bidirectional_with_sizes(&mut tcp, remote, COPY_BUF, COPY_BUF) => {}
        _ = flag_set(&mut kill) => {}
        () = activity.idle_for(idle) => idle_closed(idle),
    }
}

fn idle_closed(idle: Option<Duration>) {
    tracing::info!(idle = ?idle.unwrap_or_default(), "L4 connection closed: idle (tcp_idle_timeout_ms)");
}

/// mTLS to `ep` of `target`, offering ALPN `h2` when `h2`, with our record layer
/// ([`session`]).
pub(crate) async fn dial(
    snap: &Snapshot,
    target: &Target,
    ep: &Endpoint,
    h2: bool,
) -> Result<TlsStream<Wire>, String> {
    let expected = ExpectedServer {
        namespace: target.namespace.clone(),
        datacenter: if ep.datacenter.is_empty() {
            target.datacenter.clone()
        } else {
            ep.datacenter.clone()
        },
        service: target.service.clone(),
    };
    let config = tls::outbound_bounded(
        &snap.leaf,
        &snap.roots,
        expected.clone(),
        snap.hooks.tls_outgoing(&snap.mesh.tls_outgoing),
    )
    .map_err(|e| e.to_string())?;
    let config = snap.hooks.outbound_tls(config, &snap.roots, &expected);
    let config = if h2 {
        let mut c = (*config).clone();
        c.alpn_protocols = vec![b"h2".to_vec()];
        Arc::new(c)
    } else {
        config
    };
    let tcp = connect(ep).await?;
    let sni = format!(
        "{}.{}.{}.internal.{}",
        target.service, target.namespace, target.datacenter, snap.roots.trust_domain
    );
    let name = ServerName::try_from(sni.trim_end_matches('.').to_owned())
        .or_else(|_| ServerName::try_from("upstream.consul".to_owned()))
        .map_err(|e| e.to_string())?;
    session::connect(config, name, tcp)
        .await
        .map_err(|e| format!("TLS: {e}"))
}

/// TCP to the endpoint: its host resolved now (IP literals as is), each address tried in order.
async fn connect(ep: &Endpoint) -> Result<TcpStream, String> {
    let addrs = resolve::resolve(&ep.host, ep.port)
        .await
        .map_err(|e| e.to_string())?;
    let mut errors = Vec::new();
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(tcp) => {
                let _ = tcp.set_nodelay(true);
                return Ok(tcp);
            }
            Err(e) => errors.push(format!("{addr}: {e}")),
        }
    }
    Err(format!(
        "connect {}:{}: {}",
        ep.host,
        ep.port,
        errors.join("; ")
    ))
}

pub(crate) mod l7;
#[cfg(test)]
mod tests;
