//! The xDS transport. SKELETON: owned by the protocol work.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::control::Control;
use crate::faults::FaultSet;

/// Binds the gRPC port.
pub(crate) fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    crate::server::bind(addr)
}

/// Serves delta ADS until `shutdown` turns true.
pub(crate) async fn run(
    listener: TcpListener,
    control: Control,
    faults: watch::Receiver<Arc<FaultSet>>,
    shutdown: watch::Receiver<bool>,
) {
    let _ = (listener, control, faults, shutdown);
}
