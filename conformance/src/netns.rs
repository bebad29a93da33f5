//! Network namespaces for transparent-mode scenarios. Each such scenario runs on a thread of
//! its own that moved into a fresh *pod* namespace (the proxy, the app, the agent and the
//! redirect rules live there; `lo` up, the virtual-IP range routed to `lo`) joined by a veth
//! pair to a fresh *node* namespace (the "rest of the network": upstream instances and
//! downstream clients). A namespace belongs to a thread, not to the process, so parallel
//! scenarios never see each other's; both disappear when the scenario's thread, sockets and
//! processes are gone. Nothing is ever changed in the machine's own namespace.
//!
//! A socket stays in the namespace it was created in, so the pod thread's tokio runtime can
//! serve sockets created (on short-lived threads) in the node namespace.

mod setup;

use std::fs::File;
use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::error::Error;

pub(crate) use self::setup::support;

/// The pod's address on the veth link (where the proxy's public listener and the app are).
pub(crate) const POD_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// The node side of the link (other instances, downstream clients).
pub(crate) const NODE_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
/// A second address of the node side, for servers a scenario's redirect step excludes by CIDR
/// (`-exclude-outbound-cidr`) while `NODE_IP` stays captured.
pub(crate) const NODE_EXCLUDED_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 3);
/// Routed to `lo` in the pod, so the app's dials of virtual IPs reach the redirect rules.
pub(crate) const VIRTUAL_IP_RANGE: &str = "240.0.0.0/4";

/// The programs the namespaces need, found once per process.
#[derive(Debug, Clone)]
pub(crate) struct Tools {
    pub(crate) ip: PathBuf,
    pub(crate) iptables: PathBuf,
}

/// The scenario's node namespace, seen from its pod thread.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    ns: Arc<File>,
}

thread_local! {
    /// The node namespace of the pod this thread is in, if any: where inbound probes dial from.
    static OUTSIDE: OnceLock<Node> = const { OnceLock::new() };
}

/// Runs `body` on a new thread inside a fresh pod namespace (linked to a fresh node
/// namespace), on a current-thread runtime of its own, and returns what it returns.
pub(crate) async fn run_in_pod<F, Fut, T>(tools: Tools, body: F) -> Result<T, Error>
where
    F: FnOnce(Node) -> Fut + Send + 'static,
    Fut: Future<Output = T>,
    T: Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("pod".into())
        .spawn(move || {
            let outcome = setup::enter_pod(&tools).and_then(|node| {
                OUTSIDE.with(|o| o.set(node.clone()).ok());
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Error::io("start the pod's runtime", e))?;
                Ok(rt.block_on(body(node)))
            });
            let _ = tx.send(outcome);
        });
    if let Err(e) = spawned {
        return Err(Error::io("start the pod thread", e));
    }
    rx.await
        .map_err(|_| Error::Step("the pod thread ended without a result".into()))?
}

/// The node namespace of the pod the current thread runs in (`None` outside transparent
/// scenarios).
pub(crate) fn outside() -> Option<Node> {
    OUTSIDE.with(|o| o.get().cloned())
}

impl Node {
    /// A listener on `addr` in the node namespace, served by the calling thread's runtime.
    pub(crate) fn listen(&self, addr: SocketAddr) -> io::Result<tokio::net::TcpListener> {
        let l = self.run(move || std::net::TcpListener::bind(addr))??;
        l.set_nonblocking(true)?;
        tokio::net::TcpListener::from_std(l)
    }

    /// A connection to `addr` from the node namespace.
    pub(crate) async fn connect(&self, addr: SocketAddr) -> io::Result<tokio::net::TcpStream> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let ns = self.ns.clone();
        std::thread::Builder::new()
            .name("node-dial".into())
            .spawn(move || {
                let r = setup::enter(&ns).and_then(|()| {
                    std::net::TcpStream::connect_timeout(&addr, crate::probe::CONNECT_TIMEOUT)
                });
                let _ = tx.send(r);
            })?;
        let s = rx
            .await
            .map_err(|_| io::Error::other("the dialing thread ended without a result"))??;
        s.set_nonblocking(true)?;
        tokio::net::TcpStream::from_std(s)
    }

    /// Runs `f` on a short-lived thread inside the node namespace.
    fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> io::Result<T> {
        let ns = &self.ns;
        std::thread::scope(|s| {
            s.spawn(move || setup::enter(ns).map(|()| f()))
                .join()
                .map_err(|_| io::Error::other("a thread in the node namespace panicked"))?
        })
    }
}
