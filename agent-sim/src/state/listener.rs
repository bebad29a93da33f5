//! The accept loop: serves the router over HTTP/1.1 (and, through [`accept_loop`], any
//! per-connection service such as the gRPC xDS port) and plays the connection-level faults. While
//! the agent is "down" the port stays reserved by a bound, non-listening socket, so connections
//! are refused (RST) and no other process can take the port; open connections are cut. With the
//! agent's TLS on ([`crate::state::agent_tls`]) each accepted connection is a TLS handshake first,
//! with the server configuration the switch holds at that moment; a switch cuts open connections.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::state::agent_tls::TlsRx;
use crate::state::faults::FaultSet;

const BACKLOG: u32 = 4096;

/// How long a client may take to complete the TLS handshake.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A served connection's byte stream: plain TCP or TLS over it.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

/// An accepted connection, after the TLS handshake if there is one.
pub(crate) type BoxIo = Box<dyn Io>;

fn socket_for(addr: SocketAddr) -> io::Result<TcpSocket> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_nodelay(true)?;
    socket.bind(addr)?;
    Ok(socket)
}

/// Binds and listens on `addr` (port 0 picks one).
pub(crate) fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    socket_for(addr)?.listen(BACKLOG)
}

/// Serves `app` until `shutdown` turns true (over TLS when `tls` holds a configuration).
pub(crate) async fn run(
    listener: TcpListener,
    app: Router,
    faults: watch::Receiver<Arc<FaultSet>>,
    shutdown: watch::Receiver<bool>,
    tls: TlsRx,
) {
    accept_loop(
        listener,
        faults,
        shutdown,
        tls,
        move |stream: BoxIo, _peer| {
            let svc = TowerToHyperService::new(app.clone());
            async move {
                let conn = hyper::server::conn::http1::Builder::new()
                    .keep_alive(true)
                    // A client may shut down its sending side after its request and wait for the
                    // answer (Go's server, hence Consul, answers it); without this hyper drops it.
                    .half_close(true)
                    .serve_connection(TokioIo::new(stream), svc);
                if let Err(e) = conn.await {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            }
        },
    )
    .await;
}

/// Accepts on `listener` until `shutdown` turns true, running `serve` for every connection (after
/// the TLS handshake when `tls` holds a configuration), and plays the agent-down fault: the
/// listener is closed (the port reserved) and every open connection is cut; it listens again
/// when the fault ends. A change of `tls` cuts every open connection too.
pub(crate) async fn accept_loop<F, Fut>(
    listener: TcpListener,
    mut faults: watch::Receiver<Arc<FaultSet>>,
    mut shutdown: watch::Receiver<bool>,
    tls: TlsRx,
    serve: F,
) where
    F: Fn(BoxIo, SocketAddr) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let serve = Arc::new(serve);
    let TlsRx {
        config: mut tls,
        open,
    } = tls;
    let mut tls_open = true;
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(error = %e, "listener has no local address");
            return;
        }
    };
    let mut listener = Some(listener);
    let mut reserved: Option<TcpSocket> = None;
    let mut conns = JoinSet::new();
    let mut faults_open = true;
    loop {
        let down = faults.borrow_and_update().down;
        if down && listener.is_some() {
            listener = None;
            conns.abort_all();
            reserved = socket_for(addr)
                .map_err(|e| tracing::warn!(error = %e, "could not reserve port"))
                .ok();
            tracing::info!(%addr, "agent down: refusing connections");
        } else if !down && listener.is_none() {
            let relisten = match reserved.take() {
                Some(s) => s.listen(BACKLOG),
                None => bind(addr),
            };
            match relisten {
                Ok(l) => {
                    tracing::info!(%addr, "agent up: listening again");
                    listener = Some(l);
                }
                Err(e) => tracing::error!(%addr, error = %e, "could not listen again"),
            }
        }
        tokio::select! {
            _ = shutdown.changed() => {
                if *shutdown.borrow() { break; }
            }
            changed = faults.changed(), if faults_open => {
                // A closed fault channel means "no more faults", not "stop serving".
                faults_open = changed.is_ok();
            }
            changed = tls.changed(), if tls_open => {
                tls_open = changed.is_ok();
                if tls_open {
                    conns.abort_all();
                }
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = accept(listener.as_ref()) => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let config = tls.borrow().clone();
                    let serve = serve.clone();
                    let handle = conns.spawn(async move {
                        if let Some(io) = handshake(stream, config).await {
                            serve(io, peer).await;
                        }
                    });
                    let mut open = open.lock();
                    open.retain(|h| !h.is_finished());
                    open.push(handle);
                }
                Err(e) => {
                    // EMFILE and friends: back off briefly instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
        }
    }
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

/// The connection as `serve` gets it: plain, or once the TLS handshake succeeded (`None`: it
/// failed or timed out, logged at debug).
async fn handshake(
    stream: tokio::net::TcpStream,
    config: Option<Arc<rustls::ServerConfig>>,
) -> Option<BoxIo> {
    let Some(config) = config else {
        return Some(Box::new(stream));
    };
    let accept = tokio_rustls::TlsAcceptor::from(config).accept(stream);
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, accept).await {
        Ok(Ok(tls)) => Some(Box::new(tls)),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!("TLS handshake timed out");
            None
        }
    }
}

async fn accept(listener: Option<&TcpListener>) -> io::Result<(tokio::net::TcpStream, SocketAddr)> {
    match listener {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}
