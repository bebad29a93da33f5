//! TLS material and configs: the leaf as a rustls `CertifiedKey`, the trusted roots, the inbound
//! `ServerConfig` (client cert required, resumption off) and outbound `ClientConfig`s that check
//! the upstream's SPIFFE identity. Ring provider only.

pub(crate) mod verify;

use std::sync::{Arc, OnceLock};

use rustls::client::Resumption;
use rustls::crypto::CryptoProvider;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{NoServerSessionStorage, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

pub use self::verify::ExpectedServer;
use self::verify::{FixedCert, SpiffeServerVerifier};

/// Errors building TLS material.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM block could not be read.
    #[error("bad PEM: {0}")]
    Pem(String),
    /// The leaf PEM held no certificate.
    #[error("leaf PEM holds no certificate")]
    NoCertificate,
    /// The private key is not usable with the ring provider.
    #[error("unusable private key: {0}")]
    Key(rustls::Error),
    /// No usable root certificate.
    #[error("no usable root certificate")]
    NoRoots,
    /// Building the client verifier failed.
    #[error("client verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    /// rustls refused the configuration.
    #[error("rustls: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The process's crypto provider: ring.
pub fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// The proxied service's leaf certificate and key.
#[derive(Debug, Clone)]
pub struct Leaf {
    /// Leaf + intermediates and the signing key.
    pub certified: Arc<CertifiedKey>,
    /// The leaf's `notAfter` (Unix seconds), for renewal logging and metrics.
    pub not_after_unix: i64,
}

impl Leaf {
    /// Builds from the leaf endpoint's `CertPEM` (leaf first, then intermediates) and
    /// `PrivateKeyPEM` (SEC1, PKCS#8 or PKCS#1).
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, TlsError> {
        let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::Pem(e.to_string()))?;
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|e| TlsError::Pem(e.to_string()))?;
        Self::from_der(chain, key)
    }

    /// Builds from DER parts.
    pub fn from_der(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Self, TlsError> {
        let first = chain.first().ok_or(TlsError::NoCertificate)?;
        let not_after_unix =
            crate::spiffe::not_after_unix(first).map_err(|e| TlsError::Pem(e.to_string()))?;
        let signing = provider()
            .key_provider
            .load_private_key(key)
            .map_err(TlsError::Key)?;
        Ok(Self {
            certified: Arc::new(CertifiedKey::new(chain, signing)),
            not_after_unix,
        })
    }
}

/// The trusted CA roots (every `Roots[].RootCert`).
#[derive(Debug, Clone)]
pub struct TrustRoots {
    /// The store webpki verifies against.
    pub store: Arc<RootCertStore>,
    /// The cluster's trust domain (`<cluster id>.consul`), if known.
    pub trust_domain: String,
}

impl TrustRoots {
    /// Builds from root PEMs; unparsable ones are skipped with a warning, none usable is an error.
    pub fn from_pems<'a>(
        pems: impl IntoIterator<Item = &'a str>,
        trust_domain: &str,
    ) -> Result<Self, TlsError> {
        let mut ders = Vec::new();
        for pem in pems {
            for der in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                match der {
                    Ok(d) => ders.push(d),
                    Err(e) => tracing::warn!(error = %e, "skipping unparsable root PEM"),
                }
            }
        }
        Self::from_ders(ders, trust_domain)
    }

    /// Builds from root DERs.
    pub fn from_ders(
        ders: Vec<CertificateDer<'static>>,
        trust_domain: &str,
    ) -> Result<Self, TlsError> {
        let mut store = RootCertStore::empty();
        let (added, ignored) = store.add_parsable_certificates(ders);
        if ignored > 0 {
            tracing::warn!(ignored, "some root certificates were not usable");
        }
        if added == 0 {
            return Err(TlsError::NoRoots);
        }
        Ok(Self {
            store: Arc::new(store),
            trust_domain: trust_domain.to_ascii_lowercase(),
        })
    }
}

/// Inbound TLS: the server config plus the client verifier (kept to re-check open connections
/// against new roots).
#[derive(Debug, Clone)]
pub struct InboundTls {
    /// Per-connection acceptor config.
    pub config: Arc<ServerConfig>,
    /// Verifies client chains against the current roots.
    pub verifier: Arc<dyn ClientCertVerifier>,
}

/// Builds the inbound config: TLS 1.2+, client certificate required and verified against
/// `roots` (intermediates sent by the client are used, so cross-signed chains work), our leaf
/// served, session resumption off (no session cache, no TLS 1.3 tickets).
pub fn inbound(leaf: &Leaf, roots: &TrustRoots) -> Result<InboundTls, TlsError> {
    let verifier =
        WebPkiClientVerifier::builder_with_provider(roots.store.clone(), provider()).build()?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_client_cert_verifier(verifier.clone())
        .with_cert_resolver(Arc::new(FixedCert(leaf.certified.clone())));
    config.session_storage = Arc::new(NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    Ok(InboundTls {
        config: Arc::new(config),
        verifier,
    })
}

/// Builds an outbound config presenting `leaf` and accepting only a server whose chain reaches
/// `roots` and whose URI SAN names `expected` (trust domain ignored, case-insensitive).
pub fn outbound(
    leaf: &Leaf,
    roots: &TrustRoots,
    expected: ExpectedServer,
) -> Result<Arc<ClientConfig>, TlsError> {
    let verifier = SpiffeServerVerifier::new(roots.store.clone(), expected);
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_client_cert_resolver(Arc::new(FixedCert(leaf.certified.clone())));
    config.resumption = Resumption::disabled();
    Ok(Arc::new(config))
}
