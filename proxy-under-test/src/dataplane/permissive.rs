//! Permissive mTLS on the public listener (transparent mode with `MutualTLSMode = "permissive"`):
//! a connection the redirect rules brought there whose original destination is the application's
//! own port is copied to the application in plaintext, unauthenticated and unauthorized, as
//! Consul's extra filter chain does (`makePermissiveFilterChain` in `agent/xds/listeners.go`:
//! `destination_port` = the service port, `tcp_proxy` to `local_app`, no RBAC filter). Every
//! other connection on the public listener is mTLS as usual; mesh clients dial the public port.

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::transparent::OriginalDstFn;
use super::{Shared, outbound};
use crate::metrics::RefuseReason;
use crate::snapshot::{LocalApp, Snapshot};

/// Whether `tcp`, accepted on the public listener, takes the plaintext path: the snapshot is in
/// transparent mode and permissive, and the connection was headed for the application's port.
pub(crate) fn applies(snap: &Snapshot, tcp: &TcpStream, lookup: OriginalDstFn) -> bool {
    let Some(t) = snap.transparent else {
        return false;
    };
    if !snap.hooks.permissive(t.permissive) {
        return false;
    }
    // Consul: no chain without a service port (`LocalServicePort`); a unix-socket app has none.
    let LocalApp::Tcp(app) = &snap.local_app else {
        return false;
    };
    match lookup(tcp) {
        Ok(dst) => dst.port() == app.port() && dst.port() != snap.public_listener.port(),
        Err(_) => false,
    }
}

/// Copies the plaintext connection to the local application until either side ends.
pub(crate) async fn serve(mut tcp: TcpStream, snap: &Snapshot, shared: &Shared) {
    let LocalApp::Tcp(app) = &snap.local_app else {
        return;
    };
    let limit = snap.knobs.local_connect_timeout;
    match tokio::time::timeout(limit, TcpStream::connect(app)).await {
        Ok(Ok(mut remote)) => {
            let _ = remote.set_nodelay(true);
            tracing::debug!(%app, "permissive mTLS: plaintext connection to the application");
            outbound::splice(shared, &mut tcp, &mut remote, snap.knobs.tcp_idle_timeout).await;
        }
        Ok(Err(e)) => {
            shared.metrics.refused(RefuseReason::LocalConnect);
            tracing::warn!(%app, error = %e, "local application unreachable");
            let _ = tcp.shutdown().await;
        }
        Err(_) => {
            shared.metrics.refused(RefuseReason::LocalConnect);
            tracing::warn!(%app, "local application connect timed out");
            let _ = tcp.shutdown().await;
        }
    }
}
