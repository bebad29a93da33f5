//! The public listener's TLS handshake with ALPN as Envoy (BoringSSL) negotiates it: a caller
//! that offers protocols of which none is ours completes the handshake with no protocol selected
//! (rustls alone would refuse it with `no_application_protocol`), and the HTTP server then tells
//! HTTP/1.1 from HTTP/2 by the first bytes, as the connection manager's codec `AUTO` does.

use std::io;
use std::sync::Arc;

use rustls::server::Acceptor;
use tokio_rustls::server::TlsStream;
use tokio_rustls::{LazyConfigAcceptor, TlsAcceptor};

use super::inbound::Wire;

/// Completes the server handshake on `wire` with `config`, or, when the caller's ALPN offer
/// shares nothing with `config`'s, with a copy of it that offers none.
pub(crate) async fn accept(
    config: Arc<rustls::ServerConfig>,
    wire: Wire,
) -> io::Result<TlsStream<Wire>> {
    if config.alpn_protocols.is_empty() {
        return TlsAcceptor::from(config).accept(wire).await;
    }
    let start = LazyConfigAcceptor::new(Acceptor::default(), wire).await?;
    let overlap = start.client_hello().alpn().is_none_or(|mut offered| {
        offered.any(|p| config.alpn_protocols.iter().any(|ours| ours == p))
    });
    let config = if overlap {
        config
    } else {
        tracing::debug!("caller's ALPN offer shares nothing with ours; selecting none");
        let mut none = (*config).clone();
        none.alpn_protocols.clear();
        Arc::new(none)
    };
    start.into_stream(config).await
}
