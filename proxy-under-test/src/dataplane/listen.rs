//! Binding an upstream's local listener, TCP or unix socket, as the registration says
//! ([`Bind`]), and starting its accept loop.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::unix::{self, UnixUpstream};
use super::{DataPlaneError, Shared, outbound};
use crate::snapshot::Bind;

/// A bound upstream listener.
#[derive(Debug)]
pub(crate) enum UpstreamListener {
    Tcp(TcpListener),
    Unix(UnixUpstream),
}

impl UpstreamListener {
    /// Binds upstream `name`'s listener at `bind`.
    pub(crate) async fn bind(name: &str, bind: &Bind) -> Result<Self, DataPlaneError> {
        match bind {
            Bind::Tcp(addr) => TcpListener::bind(addr)
                .await
                .map(Self::Tcp)
                .map_err(|source| DataPlaneError::BindUpstream {
                    name: name.to_owned(),
                    addr: *addr,
                    source,
                }),
            Bind::Unix { path, mode } => {
                unix::bind(path, *mode).map(Self::Unix).map_err(|source| {
                    DataPlaneError::BindUpstreamSocket {
                        name: name.to_owned(),
                        path: path.clone(),
                        source,
                    }
                })
            }
            Bind::Implicit => Err(DataPlaneError::NoListener {
                name: name.to_owned(),
            }),
        }
    }

    /// Where it actually listens (the OS-chosen port for port 0).
    pub(crate) fn local(&self, bind: &Bind) -> Option<Bind> {
        match self {
            Self::Tcp(l) => l.local_addr().ok().map(Bind::Tcp),
            Self::Unix(_) => Some(bind.clone()),
        }
    }

    /// Starts the accept loop for upstream `name` configured at `bind`.
    pub(crate) fn spawn(self, name: String, bind: Bind, shared: Arc<Shared>) -> JoinHandle<()> {
        match self {
            Self::Tcp(l) => tokio::spawn(outbound::accept_loop(l, name, bind, shared)),
            Self::Unix(l) => tokio::spawn(unix::accept_loop(l, name, bind, shared)),
        }
    }
}
