//! The data plane: binds the inbound, upstream and (transparent mode) outbound listeners once the
//! first complete snapshot arrives (never before: fail closed), follows later snapshots (new
//! upstream listeners, new certificates, roots and intentions) and drains on shutdown. It never
//! calls the agent.

mod accept;
mod alpn;
pub(crate) mod conn_idle;
mod inbound;
pub(crate) mod l7;
mod listen;
mod local;
mod outbound;
mod permissive;
mod resolve;
pub(crate) mod transparent;
mod unix;
mod workers;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use self::listen::UpstreamListener;
pub use self::unix::UnixBindError;
pub use self::workers::Workers;
use crate::metrics::Metrics;
use crate::seam::Hooks;
use crate::snapshot::{Bind, Snapshot};
use crate::tls::{self, InboundTls, TlsError};

/// Snapshots as the control plane publishes them (`None` until the first complete one).
pub type SnapshotRx = watch::Receiver<Option<Arc<Snapshot>>>;

/// Errors starting the data plane.
#[derive(Debug, thiserror::Error)]
pub enum DataPlaneError {
    /// The snapshot source went away before a first complete snapshot.
    #[error("the control plane stopped before producing a complete configuration")]
    NoSnapshot,
    /// The inbound public listener could not be bound.
    #[error("cannot bind the public listener on {addr}: {source}")]
    BindInbound {
        /// The address from the registration.
        addr: SocketAddr,
        /// The OS error (e.g. address in use).
        source: std::io::Error,
    },
    /// An upstream listener could not be bound.
    #[error("cannot bind the listener of upstream {name:?} on {addr}: {source}")]
    BindUpstream {
        /// Upstream destination name.
        name: String,
        /// `LocalBindAddress:LocalBindPort`.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The transparent outbound listener could not be bound.
    #[error("cannot bind the transparent outbound listener on {addr}: {source}")]
    BindTransparent {
        /// `127.0.0.1:<OutboundListenerPort>`.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// An upstream's unix-socket listener could not be created.
    #[error("cannot listen on the unix socket of upstream {name:?}: {source}")]
    BindUpstreamSocket {
        /// Upstream destination name.
        name: String,
        /// `LocalBindSocketPath`.
        path: PathBuf,
        /// What went wrong (a non-socket in the way, missing directory, OS error).
        source: UnixBindError,
    },
    /// An implicit upstream (transparent mode) has no local listener to bind.
    #[error("upstream {name:?} is implicit: it has no local listener (only the outbound one)")]
    NoListener {
        /// Upstream destination name.
        name: String,
    },
    /// The leaf or roots in the snapshot are unusable.
    #[error("TLS configuration: {0}")]
    Tls(#[from] TlsError),
}

/// Builder for the data plane.
#[derive(Debug)]
pub struct DataPlane {
    snapshots: SnapshotRx,
    metrics: Arc<Metrics>,
    original_dst: transparent::OriginalDstFn,
    workers: Option<Arc<Workers>>,
}

/// State shared by every listener and connection task.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) snapshots: SnapshotRx,
    pub(crate) metrics: Arc<Metrics>,
    /// `true` = stop accepting.
    pub(crate) stop: watch::Receiver<bool>,
    /// `true` = close every open connection now.
    pub(crate) kill: watch::Receiver<bool>,
    pub(crate) conns: watch::Sender<usize>,
    /// Open inbound (public listener) connections, for `max_inbound_connections`.
    pub(crate) inbound_open: Arc<AtomicUsize>,
    pub(crate) round_robin: AtomicUsize,
    /// Pooled connections of the L7 outbound path.
    pub(crate) l7_pool: outbound::l7::pool::Pool,
    /// Per upstream counters of the L7 outbound path.
    l7_states: Mutex<std::collections::HashMap<String, Arc<outbound::l7::state::UpstreamState>>>,
    inbound_tls: Mutex<Option<(Arc<Snapshot>, InboundTls)>>,
    /// Where accepted TCP connections run ([`workers`]); `None`: on the starting runtime.
    pub(crate) workers: Option<Arc<Workers>>,
}

/// Resolves once the flag is `true` (or its sender is gone).
pub(crate) async fn flag_set(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}

async fn all_closed(rx: &mut watch::Receiver<usize>) {
    let _ = rx.wait_for(|c| *c == 0).await;
}

/// Counts one open connection for draining; decrements on drop.
pub(crate) struct ConnGuard(watch::Sender<usize>);

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.0.send_modify(|c| *c = c.saturating_sub(1));
    }
}

impl Shared {
    /// The snapshot to serve from: the newest one (always present once listeners run), as its
    /// hooks see it.
    pub(crate) fn current(&self) -> Option<Arc<Snapshot>> {
        let newest = self.snapshots.borrow().clone()?;
        Hooks::serving(newest)
    }

    /// The L7 counters of upstream `name`.
    pub(crate) fn l7_state(&self, name: &str) -> Arc<outbound::l7::state::UpstreamState> {
        self.l7_states
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(name.to_owned())
            .or_default()
            .clone()
    }

    pub(crate) fn track(&self) -> ConnGuard {
        self.conns.send_modify(|c| *c += 1);
        ConnGuard(self.conns.clone())
    }

    /// Inbound TLS for `snap`, rebuilt only when the leaf or roots changed.
    pub(crate) fn inbound_tls(&self, snap: &Arc<Snapshot>) -> Result<InboundTls, TlsError> {
        let mut cache = self
            .inbound_tls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((old, tls)) = cache.as_ref()
            && Arc::ptr_eq(&old.leaf.certified, &snap.leaf.certified)
            && Arc::ptr_eq(&old.roots.store, &snap.roots.store)
            && old.knobs.protocol == snap.knobs.protocol
            && old.mesh.tls_incoming == snap.mesh.tls_incoming
        {
            return Ok(tls.clone());
        }
        let tls = tls::inbound_bounded(&snap.leaf, &snap.roots, &snap.mesh.tls_incoming)?;
        let tls = snap.hooks.inbound_tls(tls, snap)?;
        let tls = with_alpn(tls, snap.knobs.protocol);
        *cache = Some((snap.clone(), tls.clone()));
        Ok(tls)
    }
}

/// `tls` offering the ALPN protocols Consul's Envoy offers for `protocol`.
fn with_alpn(tls: InboundTls, protocol: crate::knobs::Protocol) -> InboundTls {
    let alpn = protocol.alpn();
    if alpn.is_empty() {
        return tls;
    }
    let mut config = (*tls.config).clone();
    config.alpn_protocols = alpn;
    InboundTls {
        config: Arc::new(config),
        verifier: tls.verifier,
    }
}

/// A running data plane: its bound addresses and its shutdown.
#[derive(Debug)]
pub struct RunningDataPlane {
    inbound_addr: SocketAddr,
    transparent_addr: Option<SocketAddr>,
    upstream_addrs: Arc<Mutex<BTreeMap<(String, Bind), Bind>>>,
    stop_tx: watch::Sender<bool>,
    kill_tx: watch::Sender<bool>,
    conns: watch::Receiver<usize>,
    tasks: Vec<JoinHandle<()>>,
}

impl DataPlane {
    /// A data plane fed by `snapshots`.
    pub fn new(snapshots: SnapshotRx) -> Self {
        Self {
            snapshots,
            metrics: Metrics::new(),
            original_dst: transparent::original_dst::lookup,
            workers: None,
        }
    }

    /// Runs accepted TCP connections on `workers` (see [`Workers`]) instead of the runtime that
    /// starts the data plane.
    pub fn with_workers(mut self, workers: Arc<Workers>) -> Self {
        self.workers = Some(workers);
        self
    }

    /// Test seam: reads the original destination of transparent connections with `lookup`
    /// instead of `getsockopt(SO_ORIGINAL_DST)`, so tests can exercise the transparent listener
    /// without iptables. Not reachable from the command line or `Proxy.Config`.
    #[doc(hidden)]
    pub fn with_original_dst(
        mut self,
        lookup: fn(&tokio::net::TcpStream) -> std::io::Result<SocketAddr>,
    ) -> Self {
        self.original_dst = lookup;
        self
    }

    /// Records into `metrics` instead of a private set.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Waits for the first complete snapshot, binds every listener and starts serving.
    pub async fn start(mut self) -> Result<RunningDataPlane, DataPlaneError> {
        let first = self
            .snapshots
            .wait_for(Option::is_some)
            .await
            .map_err(|_| DataPlaneError::NoSnapshot)?
            .clone()
            .ok_or(DataPlaneError::NoSnapshot)?;
        // Fail early on unusable TLS material rather than on the first connection.
        tls::inbound_bounded(&first.leaf, &first.roots, &first.mesh.tls_incoming)?;
        let inbound = TcpListener::bind(first.public_listener)
            .await
            .map_err(|source| DataPlaneError::BindInbound {
                addr: first.public_listener,
                source,
            })?;
        let inbound_addr = inbound
            .local_addr()
            .map_err(|source| DataPlaneError::BindInbound {
                addr: first.public_listener,
                source,
            })?;
        let mut upstream_listeners = Vec::new();
        for up in first.upstreams.iter().filter(|u| u.bind.has_listener()) {
            let l = UpstreamListener::bind(&up.name, &up.bind).await?;
            upstream_listeners.push((up.name.clone(), up.bind.clone(), l));
        }
        let transparent_listeners = match &first.transparent {
            Some(t) => transparent::bind(t).await?,
            None => Vec::new(),
        };
        let (stop_tx, stop) = watch::channel(false);
        let (kill_tx, kill) = watch::channel(false);
        let (conns_tx, conns) = watch::channel(0usize);
        let shared = Arc::new(Shared {
            snapshots: self.snapshots.clone(),
            metrics: self.metrics.clone(),
            stop,
            kill,
            conns: conns_tx,
            inbound_open: Arc::default(),
            round_robin: AtomicUsize::new(0),
            l7_pool: outbound::l7::pool::Pool::default(),
            l7_states: Mutex::default(),
            inbound_tls: Mutex::new(None),
            workers: self.workers.clone(),
        });
        tracing::info!(%inbound_addr, service = %first.service, "public listener bound");
        let mut tasks = vec![tokio::spawn(inbound::accept_loop(
            inbound,
            shared.clone(),
            self.original_dst,
        ))];
        let upstream_addrs = Arc::new(Mutex::new(BTreeMap::new()));
        let mut running = BTreeMap::new();
        for (name, bind, l) in upstream_listeners {
            let handle =
                outbound::spawn_listener(l, name.clone(), bind.clone(), &shared, &upstream_addrs);
            running.insert((name, bind), handle);
        }
        let (transparent_tasks, transparent_addr) =
            transparent::spawn(transparent_listeners, &shared, self.original_dst);
        tasks.extend(transparent_tasks);
        tasks.push(tokio::spawn(outbound::reconcile(
            shared.clone(),
            running,
            upstream_addrs.clone(),
        )));
        Ok(RunningDataPlane {
            inbound_addr,
            transparent_addr,
            upstream_addrs,
            stop_tx,
            kill_tx,
            conns,
            tasks,
        })
    }
}

impl RunningDataPlane {
    /// The bound inbound public listener address.
    pub fn inbound_addr(&self) -> SocketAddr {
        self.inbound_addr
    }

    /// The bound IPv4 transparent outbound listener (transparent mode only).
    pub fn transparent_addr(&self) -> Option<SocketAddr> {
        self.transparent_addr
    }

    /// The bound address of the (first) TCP listener of upstream `name`.
    pub fn upstream_addr(&self, name: &str) -> Option<SocketAddr> {
        self.upstream_addrs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|((n, _), _)| n == name)
            .find_map(|(_, a)| a.tcp())
    }

    /// The socket path of the (first) unix-socket listener of upstream `name`.
    pub fn upstream_socket(&self, name: &str) -> Option<PathBuf> {
        self.upstream_addrs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|((n, _), _)| n == name)
            .find_map(|(_, a)| match a {
                Bind::Unix { path, .. } => Some(path.clone()),
                Bind::Tcp(_) | Bind::Implicit => None,
            })
    }

    /// Open connections (inbound + outbound).
    pub fn open_connections(&self) -> usize {
        *self.conns.borrow()
    }

    /// Stops accepting, waits up to `drain` for open connections to finish, then closes the rest.
    pub async fn shutdown(mut self, drain: Duration) {
        let _ = self.stop_tx.send(true);
        let drained = tokio::time::timeout(drain, all_closed(&mut self.conns)).await;
        if drained.is_err() {
            tracing::warn!(
                open = *self.conns.borrow(),
                "drain timeout reached; closing open connections"
            );
        }
        let _ = self.kill_tx.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(1), all_closed(&mut self.conns)).await;
        // Every task ends by itself on `stop` (the upstream one after closing its listeners and
        // removing their socket files); only stragglers are aborted.
        for t in self.tasks.drain(..) {
            let abort = t.abort_handle();
            if tokio::time::timeout(Duration::from_secs(1), t)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }
}

impl Drop for RunningDataPlane {
    fn drop(&mut self) {
        let _ = self.stop_tx.send(true);
        let _ = self.kill_tx.send(true);
        for t in &self.tasks {
            t.abort();
        }
    }
}

#[cfg(test)]
mod tests;
