//! Where the proxy under test listens: a TCP address or a unix socket, and whether it accepts
//! connections there (dialed from outside the pod in transparent scenarios).

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

/// One listener of the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    /// A TCP listener.
    Tcp(SocketAddr),
    /// A unix socket.
    Unix(PathBuf),
}

impl ListenAddr {
    /// Whether a connection is accepted now.
    pub async fn accepts(&self) -> io::Result<()> {
        match self {
            Self::Tcp(addr) => crate::probe::dial(*addr).await.map(drop),
            Self::Unix(path) => tokio::net::UnixStream::connect(path).await.map(drop),
        }
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tcp(a) => write!(f, "{a}"),
            Self::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}
