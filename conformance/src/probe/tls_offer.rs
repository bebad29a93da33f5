//! A TLS handshake with the proxy's public listener offering only some protocol versions and
//! TLS 1.2 cipher suites: what the mesh entry's TLS floor, ceiling and suites let through, and
//! which suite the proxy settles on.

use std::net::SocketAddr;
use std::sync::Arc;

use agent_sim::ca::ClientIdentity;
use rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;

use super::{HANDSHAKE_TIMEOUT, dial};
use crate::tls::{self, Captured};

/// Handshakes as `identity` offering `version` and `tls12_suites`; on success the negotiated
/// version and suite (`TLSv1_3 TLS13_AES_128_GCM_SHA256`), else why it failed.
pub(crate) async fn tls_handshake(
    addr: SocketAddr,
    identity: Option<&ClientIdentity>,
    version: Option<&str>,
    tls12_suites: &[String],
) -> Result<(String, String), String> {
    let captured = Arc::new(Captured::default());
    let cfg = tls::client_config_offering(identity, captured, version, tls12_suites)
        .map_err(|e| e.to_string())?;
    let tcp = dial(addr)
        .await
        .map_err(|e| format!("TCP connect failed: {e}"))?;
    let name = ServerName::try_from("db.conformance.invalid")
        .map_err(|e| e.to_string())?
        .to_owned();
    let stream = tokio::time::timeout(
        HANDSHAKE_TIMEOUT,
        TlsConnector::from(cfg).connect(name, tcp),
    )
    .await
    .map_err(|_| "TLS handshake timed out".to_owned())?
    .map_err(|e| format!("TLS handshake failed: {e}"))?;
    let (_, conn) = stream.get_ref();
    let version = conn
        .protocol_version()
        .map(|v| format!("{v:?}"))
        .unwrap_or_default();
    let suite = conn
        .negotiated_cipher_suite()
        .map(|s| format!("{:?}", s.suite()))
        .unwrap_or_default();
    Ok((version, suite))
}
