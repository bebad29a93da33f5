//! The public listener's TLS handshake with ALPN as Envoy (BoringSSL) negotiates it: a caller
//! that offers protocols of which none is ours completes the handshake with no protocol selected
//! (rustls alone would refuse it with `no_application_protocol`), and the HTTP server then tells
//! HTTP/1.1 from HTTP/2 by the first bytes, as the connection manager's codec `AUTO` does.

use std::io;
use std::sync::Arc;

use super::inbound::Wire;
use crate::tls::session::{self, TlsStream};

/// Completes the server handshake on `wire` with `config`, or, when the caller's ALPN offer
/// shares nothing with `config`'s, with a copy of it that offers none.
pub(crate) async fn accept(
    config: Arc<rustls::ServerConfig>,
    wire: Wire,
) -> io::Result<TlsStream<Wire>> {
    // The ClientHello is read with rustls's `Acceptor` on a copy; our record layer follows.
    session::accept_alpn_lenient(config, wire).await
}
