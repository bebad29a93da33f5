//! Record layer tests: interop with buffered rustls (tokio-rustls) peers in both roles, every
//! version and suite, ALPN, the proxy's real verifiers ([`interop`]); faults on the wire:
//! tampering, oversized records, truncation, key updates, the confidentiality limit
//! ([`faults`]); the zero-copy relay with random chunking and half-close ([`relay`]).

mod faults;
mod interop;
mod relay;
mod shrink;

use std::sync::Arc;
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::{ClientConfig, ServerConfig, SupportedCipherSuite, SupportedProtocolVersion};
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream};

use super::TlsStream;
use crate::testutil::TD;
use crate::testutil::pki::{Ca, Key};
use crate::tls::verify::{FixedCert, SpiffeServerVerifier};
use crate::tls::{ExpectedServer, Leaf, TrustRoots};

/// Both sides' configs, restricted to one suite (or all with `None`).
pub(super) struct Pki {
    pub(super) server: Arc<ServerConfig>,
    pub(super) client: Arc<ClientConfig>,
    /// The client's server verifier (for other client configs).
    pub(super) verifier: Arc<SpiffeServerVerifier>,
}

pub(super) fn name() -> ServerName<'static> {
    ServerName::try_from("db.default.dc1.internal.consul").unwrap()
}

fn provider(suite: Option<SupportedCipherSuite>) -> Arc<CryptoProvider> {
    let mut p = (*crate::tls::provider()).clone();
    if let Some(s) = suite {
        p.cipher_suites = vec![s];
    }
    Arc::new(p)
}

/// Server `db` and client `web` under one root, with the proxy's verifiers (client certificate
/// required; SPIFFE server identity), the proxy's resumption settings, and `alpn` on the server.
pub(super) fn pki(suite: Option<SupportedCipherSuite>, alpn: &[&[u8]]) -> Pki {
    let root = Ca::root("root", Key::P256);
    let roots = TrustRoots::from_ders(vec![root.der()], TD).unwrap();
    let db: Leaf = root.leaf("db", Key::P256, &[]).leaf();
    let web: Leaf = root.leaf("web", Key::P256, &[]).leaf();
    let versions: Vec<&'static SupportedProtocolVersion> = match suite {
        Some(SupportedCipherSuite::Tls12(_)) => vec![&rustls::version::TLS12],
        Some(SupportedCipherSuite::Tls13(_)) => vec![&rustls::version::TLS13],
        None => vec![&rustls::version::TLS13, &rustls::version::TLS12],
    };
    let inbound = crate::tls::inbound(&db, &roots).unwrap();
    let mut server = ServerConfig::builder_with_provider(provider(suite))
        .with_protocol_versions(&versions)
        .unwrap()
        .with_client_cert_verifier(inbound.verifier.clone())
        .with_cert_resolver(Arc::new(FixedCert(db.certified.clone())));
    server.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    server.send_tls13_tickets = 0;
    server.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let expected = ExpectedServer {
        namespace: "default".into(),
        datacenter: "dc1".into(),
        service: "db".into(),
    };
    let verifier = Arc::new(SpiffeServerVerifier::new(roots.store.clone(), expected));
    let mut client = ClientConfig::builder_with_provider(provider(suite))
        .with_protocol_versions(&versions)
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_client_cert_resolver(Arc::new(FixedCert(web.certified.clone())));
    client.resumption = rustls::client::Resumption::disabled();
    Pki {
        server: Arc::new(server),
        client: Arc::new(client),
        verifier,
    }
}

/// Every suite of the process's provider our ECDSA leaves can use (TLS 1.3 and the TLS 1.2
/// ECDHE-ECDSA ones).
pub(super) fn suites() -> Vec<SupportedCipherSuite> {
    let mut v = crate::tls::provider().cipher_suites.clone();
    v.retain(|s| !format!("{:?}", s.suite()).contains("_RSA_"));
    assert_eq!(v.len(), 6);
    v
}

/// Ours as the server, a tokio-rustls client.
pub(super) async fn ours_serving(
    pki: &Pki,
) -> (
    TlsStream<DuplexStream>,
    tokio_rustls::client::TlsStream<DuplexStream>,
) {
    let (a, b) = tokio::io::duplex(256 * 1024);
    let connector = tokio_rustls::TlsConnector::from(pki.client.clone());
    let (ours, theirs) = tokio::join!(
        super::accept(pki.server.clone(), a),
        connector.connect(name(), b)
    );
    (ours.unwrap(), theirs.unwrap())
}

/// Ours as the client, a tokio-rustls server.
pub(super) async fn ours_dialing(
    pki: &Pki,
) -> (
    TlsStream<DuplexStream>,
    tokio_rustls::server::TlsStream<DuplexStream>,
) {
    let (a, b) = tokio::io::duplex(256 * 1024);
    let acceptor = tokio_rustls::TlsAcceptor::from(pki.server.clone());
    let (ours, theirs) = tokio::join!(
        super::connect(pki.client.clone(), name(), a),
        acceptor.accept(b)
    );
    (ours.unwrap(), theirs.unwrap())
}

/// Random bytes.
pub(super) fn random(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rand::fill(&mut v[..]);
    v
}

/// Writes `data` then shuts down, while reading the other side to EOF; what was read.
pub(super) async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    s: S,
    data: &[u8],
) -> std::io::Result<Vec<u8>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut r, mut w) = tokio::io::split(s);
    let write = async {
        w.write_all(data).await?;
        w.shutdown().await
    };
    let mut got = Vec::new();
    let read = r.read_to_end(&mut got);
    let (wr, rd) =
        tokio::time::timeout(Duration::from_secs(20), async { tokio::join!(write, read) })
            .await
            .expect("exchange timed out");
    wr?;
    rd?;
    Ok(got)
}
