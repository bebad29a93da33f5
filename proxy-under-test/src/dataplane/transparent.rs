//! Transparent mode: the outbound listener (`127.0.0.1:<OutboundListenerPort>`, and `[::1]` on
//! the same port when IPv6 is available) that iptables `REDIRECT`s all of the application's
//! outbound TCP to. Per connection: read the original destination, map it (`route`), then serve
//! it through the same outbound path as the explicit upstream listeners
//! ([`outbound::serve`](super::outbound::serve)), dial it in plain TCP (passthrough knob), or
//! refuse it.

pub(crate) mod original_dst;
mod route;

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

#[cfg(test)]
pub(crate) use self::route::Refusal;
pub(crate) use self::route::{Route, route};
use super::outbound::{self, MAX_ATTEMPTS, candidates};
use super::{DataPlaneError, Shared};
use crate::metrics::RefuseReason;
use crate::snapshot::{Endpoint, Snapshot, Target, Transparent};

/// How the original destination of an accepted connection is read: `SO_ORIGINAL_DST` in
/// production ([`original_dst::lookup`]); tests inject their own.
pub(crate) type OriginalDstFn = fn(&TcpStream) -> std::io::Result<SocketAddr>;

/// Passthrough dial timeout unless `upstream_connect_timeout_ms` is set (Consul's default
/// connect timeout).
const PASSTHROUGH_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Binds the outbound listener(s): IPv4 loopback is required (a failure stops the data plane),
/// IPv6 loopback on the same port is best effort.
pub(crate) async fn bind(t: &Transparent) -> Result<Vec<TcpListener>, DataPlaneError> {
    let bind_err = |source| DataPlaneError::BindTransparent {
        addr: t.outbound,
        source,
    };
    let v4 = TcpListener::bind(t.outbound).await.map_err(bind_err)?;
    let port = v4.local_addr().map_err(bind_err)?.port();
    let mut out = vec![v4];
    let v6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port);
    match TcpListener::bind(v6).await {
        Ok(l) => out.push(l),
        Err(e) => tracing::debug!(addr = %v6, error = %e, "no IPv6 transparent outbound listener"),
    }
    Ok(out)
}

/// Starts accepting on `listeners`; returns the tasks and the first (IPv4) bound address.
pub(crate) fn spawn(
    listeners: Vec<TcpListener>,
    shared: &Arc<Shared>,
    lookup: OriginalDstFn,
) -> (Vec<JoinHandle<()>>, Option<SocketAddr>) {
    let mut first = None;
    let mut tasks = Vec::new();
    for l in listeners {
        let Ok(addr) = l.local_addr() else {
            continue;
        };
        tracing::info!(%addr, "transparent outbound listener bound");
        first.get_or_insert(addr);
        tasks.push(tokio::spawn(accept_loop(l, addr, shared.clone(), lookup)));
    }
    (tasks, first)
}

async fn accept_loop(
    listener: TcpListener,
    addr: SocketAddr,
    shared: Arc<Shared>,
    lookup: OriginalDstFn,
) {
    let accept = || listener.accept();
    super::accept::until_stop(
        &shared,
        "transparent",
        accept,
        |(tcp, _): (TcpStream, _)| {
            let _ = tcp.set_nodelay(true);
            tokio::spawn(handle(tcp, addr, shared.clone(), lookup));
        },
    )
    .await;
    tracing::info!(%addr, "transparent outbound listener closed");
}

async fn refuse(mut tcp: TcpStream, shared: &Shared) {
    shared.metrics.refused(RefuseReason::UnknownDestination);
    let _ = tcp.shutdown().await;
}

async fn handle(tcp: TcpStream, listener: SocketAddr, shared: Arc<Shared>, lookup: OriginalDstFn) {
    let _guard = shared.track();
    shared.metrics.accepted(false);
    let Some(snap) = shared.current() else {
        return;
    };
    if snap.transparent.is_none() {
        tracing::debug!("transparent mode is off in the newest configuration; closing");
        return refuse(tcp, &shared).await;
    }
    let dst = match lookup(&tcp) {
        Ok(dst) => dst,
        Err(e) => {
            tracing::debug!(error = %e, "original destination unavailable; closing");
            return refuse(tcp, &shared).await;
        }
    };
    let mut own = vec![listener];
    own.extend(tcp.local_addr().ok());
    match route(&snap, &own, dst) {
        Route::Upstream { upstream, first } => {
            tracing::debug!(original_dst = %dst, upstream = %upstream.name, "transparent connection to a mesh upstream");
            let start = shared.round_robin.fetch_add(1, Ordering::Relaxed);
            let cands = first_then(first, candidates(upstream, start));
            outbound::serve(tcp, &shared, &snap, upstream, &cands).await;
        }
        Route::Direct {
            upstream,
            target,
            endpoint,
        } => {
            tracing::debug!(original_dst = %dst, upstream = %upstream.name, service = %target.service, "transparent connection dialed directly");
            outbound::serve(tcp, &shared, &snap, upstream, &[(target, &endpoint)]).await;
        }
        Route::Passthrough => passthrough(tcp, &shared, &snap, dst).await,
        Route::Refuse(why) => {
            tracing::debug!(original_dst = %dst, reason = why.as_str(), "transparent destination refused");
            refuse(tcp, &shared).await;
        }
    }
}

/// `first` (when given), then `rest` without it, at most `MAX_ATTEMPTS`.
fn first_then<'a>(
    first: Option<(&'a Target, &'a Endpoint)>,
    rest: Vec<(&'a Target, &'a Endpoint)>,
) -> Vec<(&'a Target, &'a Endpoint)> {
    let Some(first) = first else {
        return rest;
    };
    let mut out = vec![first];
    out.extend(
        rest.into_iter()
            .filter(|(t, e)| !(t.id == first.0.id && *e == first.1)),
    );
    out.truncate(MAX_ATTEMPTS);
    out
}

/// Plain TCP to a destination outside the mesh (the `mesh` entry without `MeshDestinationsOnly`).
async fn passthrough(mut tcp: TcpStream, shared: &Shared, snap: &Snapshot, dst: SocketAddr) {
    let limit = snap
        .knobs
        .upstream_connect_timeout
        .unwrap_or(PASSTHROUGH_CONNECT_TIMEOUT);
    match tokio::time::timeout(limit, TcpStream::connect(dst)).await {
        Ok(Ok(mut remote)) => {
            let _ = remote.set_nodelay(true);
            tracing::debug!(original_dst = %dst, "transparent passthrough");
            outbound::splice(shared, &mut tcp, &mut remote, snap.knobs.tcp_idle_timeout).await;
        }
        Ok(Err(e)) => {
            shared.metrics.refused(RefuseReason::NoEndpoint);
            tracing::warn!(original_dst = %dst, error = %e, "passthrough destination refused");
            let _ = tcp.shutdown().await;
        }
        Err(_) => {
            shared.metrics.refused(RefuseReason::NoEndpoint);
            tracing::warn!(original_dst = %dst, "passthrough destination timed out");
            let _ = tcp.shutdown().await;
        }
    }
}

#[cfg(test)]
mod tests;
