//! TLS for the tests, independent of the proxy's own code: PEM parsing, root stores,
//! certificate fields (x509-parser), a chain-only server verifier (SPIFFE leaves have no DNS
//! name) and mTLS probe clients.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use agent_sim::ca::ClientIdentity;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{Resumption, verify_server_cert_signed_by_trust_anchor};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::provider;

pub(crate) fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

pub(crate) fn root_store(root_pems: &[String]) -> Arc<RootCertStore> {
    let mut store = RootCertStore::empty();
    for pem in root_pems {
        store.add_parsable_certificates(certs(pem));
    }
    Arc::new(store)
}

/// URI SANs of a DER certificate.
pub(crate) fn uris(der: &[u8]) -> Vec<String> {
    let (_, cert) = X509Certificate::from_der(der).unwrap();
    cert.subject_alternative_name()
        .unwrap()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|g| match g {
                    GeneralName::URI(u) => Some((*u).to_owned()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Serial number (colon hex) of a DER certificate.
pub(crate) fn serial(der: &[u8]) -> String {
    X509Certificate::from_der(der)
        .unwrap()
        .1
        .raw_serial_as_string()
}

/// `notAfter` of a DER certificate, Unix seconds.
pub(crate) fn not_after(der: &[u8]) -> i64 {
    X509Certificate::from_der(der)
        .unwrap()
        .1
        .validity()
        .not_after
        .timestamp()
}

/// Whether `chain` (leaf first) verifies against `root_pems` now.
pub(crate) fn chains_to(chain: &[CertificateDer<'static>], root_pems: &[String]) -> bool {
    let Some((ee, rest)) = chain.split_first() else {
        return false;
    };
    let Ok(parsed) = ParsedCertificate::try_from(ee) else {
        return false;
    };
    verify_server_cert_signed_by_trust_anchor(
        &parsed,
        &root_store(root_pems),
        rest,
        UnixTime::now(),
        provider().signature_verification_algorithms.all,
    )
    .is_ok()
}

/// Verifies the server's chain against fixed roots and nothing else (SPIFFE leaves have no DNS
/// name); identities are read from the certificate afterwards.
#[derive(Debug)]
struct ChainOnly(Arc<RootCertStore>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let parsed = ParsedCertificate::try_from(end_entity)?;
        verify_server_cert_signed_by_trust_anchor(
            &parsed,
            &self.0,
            intermediates,
            now,
            provider().signature_verification_algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &provider().signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &provider().signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

// === probes ===

/// An mTLS client as a downstream (`web`, `api`, ...) or a forged one.
#[derive(Clone)]
pub(crate) struct Probe {
    pub(crate) config: Arc<ClientConfig>,
}

impl Probe {
    /// Presents `id` (chain + key), trusts `root_pems`, resumption off.
    pub(crate) fn new(id: &ClientIdentity, root_pems: &[String]) -> Self {
        let key = PrivateKeyDer::from_pem_slice(id.private_key_pem.as_bytes()).unwrap();
        let mut cfg = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(root_store(root_pems))))
            .with_client_auth_cert(certs(&id.cert_chain_pem), key)
            .unwrap();
        cfg.resumption = Resumption::disabled();
        Self {
            config: Arc::new(cfg),
        }
    }

    /// Presents no client certificate at all.
    pub(crate) fn anonymous(root_pems: &[String]) -> Self {
        let mut cfg = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(root_store(root_pems))))
            .with_no_client_auth();
        cfg.resumption = Resumption::disabled();
        Self {
            config: Arc::new(cfg),
        }
    }

    /// TCP + TLS handshake.
    pub(crate) async fn connect(&self, addr: SocketAddr) -> Result<TlsStream<TcpStream>, String> {
        let fut = async {
            let tcp = TcpStream::connect(addr)
                .await
                .map_err(|e| format!("connect: {e}"))?;
            let name = ServerName::try_from("db.default.dc1.internal.consul").unwrap();
            TlsConnector::from(self.config.clone())
                .connect(name, tcp)
                .await
                .map_err(|e| format!("handshake: {e}"))
        };
        tokio::time::timeout(Duration::from_secs(10), fut)
            .await
            .map_err(|_| "connect timed out".to_owned())?
    }

    /// One round trip through the proxy to the echo app. `Err` = refused somewhere.
    pub(crate) async fn echo(&self, addr: SocketAddr, msg: &[u8]) -> Result<(), String> {
        let mut s = self.connect(addr).await?;
        round_trip(&mut s, msg).await
    }

    /// Whether a fresh connection carries bytes both ways.
    pub(crate) async fn works(&self, addr: SocketAddr) -> bool {
        self.echo(addr, b"ping").await.is_ok()
    }

    /// The certificate chain the proxy serves (leaf first).
    pub(crate) async fn served_chain(&self, addr: SocketAddr) -> Vec<CertificateDer<'static>> {
        let s = self.connect(addr).await.unwrap();
        s.get_ref()
            .1
            .peer_certificates()
            .unwrap()
            .iter()
            .map(|c| c.clone().into_owned())
            .collect()
    }
}

/// Writes `msg` and expects the same bytes back within 5 s.
pub(crate) async fn round_trip<S>(s: &mut S, msg: &[u8]) -> Result<(), String>
where
    S: AsyncReadExt + AsyncWriteExt + Unpin,
{
    let fut = async {
        s.write_all(msg).await.map_err(|e| format!("write: {e}"))?;
        let mut buf = vec![0u8; msg.len()];
        s.read_exact(&mut buf)
            .await
            .map_err(|e| format!("read: {e}"))?;
        if buf == msg {
            Ok(())
        } else {
            Err(format!("echo mismatch: {buf:?}"))
        }
    };
    tokio::time::timeout(Duration::from_secs(5), fut)
        .await
        .map_err(|_| "round trip timed out".to_owned())?
}

/// Waits until the peer closes `s` (EOF or error); `false` if it stays open for `limit`.
pub(crate) async fn closed_within<S: AsyncReadExt + Unpin>(s: &mut S, limit: Duration) -> bool {
    let mut buf = [0u8; 64];
    tokio::time::timeout(limit, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}
