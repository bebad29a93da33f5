//! TLS material and configs: the leaf (with its intermediates) as a rustls `CertifiedKey`, the
//! trusted roots and the roots' extra intermediates, the inbound `ServerConfig` (client cert
//! required, resumption off) and outbound `ClientConfig`s that check the upstream's SPIFFE
//! identity. Ring provider only; every key type Consul issues (EC P-256/P-384, RSA 2048/4096 in
//! SEC1, PKCS#1 or PKCS#8) loads.

mod bounds;
mod chain_cache;
mod keys;
mod kx_ahead;

pub use kx_ahead::DEPTH as KEY_SHARES_AHEAD;
pub(crate) mod session;
pub(crate) mod verify;

#[cfg(test)]
mod tests;

use std::sync::{Arc, OnceLock};

use rustls::client::Resumption;
use rustls::crypto::CryptoProvider;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{NoServerSessionStorage, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::mesh::TlsBounds;

pub use self::chain_cache::ChainCache;
pub use self::keys::KeyKind;
pub use self::verify::ExpectedServer;
use self::verify::{Cached, FixedCert, SpiffeServerVerifier, WithIntermediates};

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

/// X25519 with key pairs made ahead ([`kx_ahead`]): the process's first key-exchange group.
static X25519_AHEAD: OnceLock<kx_ahead::Ahead> = OnceLock::new();

fn x25519_ahead() -> &'static kx_ahead::Ahead {
    X25519_AHEAD.get_or_init(|| kx_ahead::Ahead::new(rustls::crypto::ring::kx_group::X25519))
}

/// Makes one X25519 key pair ahead if fewer than a few are ready: for a runtime's
/// `on_thread_park`, so the next handshakes' key shares are made while the thread would sleep.
pub fn make_key_share_ahead() {
    x25519_ahead().top_up();
}

/// X25519 key shares made ahead and not taken yet (at most a few).
pub fn key_shares_ready() -> usize {
    x25519_ahead().ready()
}

/// The process's crypto provider: ring, with its cipher suites in [`prefer_aes128`] order and
/// its X25519 key shares taken from those made ahead ([`make_key_share_ahead`]).
pub fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| {
            let mut p = rustls::crypto::ring::default_provider();
            prefer_aes128(&mut p.cipher_suites);
            for g in &mut p.kx_groups {
                if g.name() == rustls::NamedGroup::X25519 {
                    *g = x25519_ahead();
                }
            }
            Arc::new(p)
        })
        .clone()
}

/// Puts the AES-128-GCM suites first (TLS 1.3, then 1.2), keeping every other suite (AES-256-GCM,
/// ChaCha20-Poly1305) available in its order: what the field's proxies negotiate (BoringSSL
/// offers and prefers AES-128-GCM), and about a third cheaper per byte than AES-256 (10 AES
/// rounds, not 14). ring's default order starts with AES-256. The order is both what we offer
/// as a client and what we prefer as a server (rustls honours the client's order by default).
pub(crate) fn prefer_aes128(suites: &mut [rustls::SupportedCipherSuite]) {
    use rustls::CipherSuite as C;
    let rank = |s: &rustls::SupportedCipherSuite| match s.suite() {
        C::TLS13_AES_128_GCM_SHA256 => 0,
        C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 | C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 1,
        _ => 2,
    };
    // Stable: the rest keep ring's order.
    suites.sort_by_key(rank);
}

/// The proxied service's leaf certificate and key.
#[derive(Debug, Clone)]
pub struct Leaf {
    /// Leaf + intermediates and the signing key.
    pub certified: Arc<CertifiedKey>,
    /// The leaf's `notAfter` (Unix seconds), for renewal logging and metrics.
    pub not_after_unix: i64,
    /// The leaf's key type, for logs.
    pub key_kind: KeyKind,
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
        let key_kind = KeyKind::of_cert(first);
        Ok(Self {
            certified: Arc::new(CertifiedKey::new(chain, signing)),
            not_after_unix,
            key_kind,
        })
    }

    /// How many certificates the leaf presents (itself plus its intermediates).
    pub fn chain_len(&self) -> usize {
        self.certified.cert.len()
    }
}

/// A root store of every certificate in `pem`, strictly: a block that does not parse or a
/// certificate webpki cannot use is an error (its text), and so is a PEM with none. For CAs a
/// user names in configuration (the agent's CA file, a JWKS server's `TrustedCA`).
pub(crate) fn roots_from_pem(pem: &[u8]) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for der in CertificateDer::pem_slice_iter(pem) {
        roots
            .add(der.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    if roots.is_empty() {
        return Err("no certificate in it".to_owned());
    }
    Ok(roots)
}

/// The trusted CA roots (every `Roots[].RootCert`) and the roots' intermediates (every
/// `Roots[].IntermediateCerts`, used to build chains, never trusted by themselves).
#[derive(Debug, Clone)]
pub struct TrustRoots {
    /// The store webpki verifies against.
    pub store: Arc<RootCertStore>,
    /// Extra intermediates offered to chain building after the ones a peer presents.
    pub intermediates: Arc<Vec<CertificateDer<'static>>>,
    /// The cluster's trust domain (`<cluster id>.consul`), if known.
    pub trust_domain: String,
    /// Chains already verified against these roots and intermediates (shared by clones; new
    /// roots or intermediates start empty).
    pub(crate) verified: Arc<ChainCache>,
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
            intermediates: Arc::default(),
            trust_domain: trust_domain.to_ascii_lowercase(),
            verified: Arc::default(),
        })
    }

    /// The same roots with `pems` (the roots' `IntermediateCerts`) as extra intermediates;
    /// unparsable ones are skipped with a warning.
    pub fn with_intermediate_pems<'a>(self, pems: impl IntoIterator<Item = &'a str>) -> Self {
        let mut ders = Vec::new();
        for pem in pems {
            for der in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                match der {
                    Ok(d) => ders.push(d),
                    Err(e) => tracing::warn!(error = %e, "skipping unparsable intermediate PEM"),
                }
            }
        }
        self.with_intermediates(ders)
    }

    /// The same roots with `ders` as extra intermediates.
    pub fn with_intermediates(mut self, ders: Vec<CertificateDer<'static>>) -> Self {
        self.intermediates = Arc::new(ders);
        self.verified = Arc::default();
        self
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
/// `roots` (intermediates sent by the client are used, then the roots' `IntermediateCerts`, so
/// cross-signed chains and leaves of an intermediate CA work), our leaf and its intermediates
/// served, session resumption off (no session cache, no TLS 1.3 tickets).
pub fn inbound(leaf: &Leaf, roots: &TrustRoots) -> Result<InboundTls, TlsError> {
    inbound_bounded(leaf, roots, &TlsBounds::default())
}

/// [`inbound`] within the `mesh` entry's `TLS.Incoming` bounds.
pub fn inbound_bounded(
    leaf: &Leaf,
    roots: &TrustRoots,
    bounds: &TlsBounds,
) -> Result<InboundTls, TlsError> {
    let webpki =
        WebPkiClientVerifier::builder_with_provider(roots.store.clone(), provider()).build()?;
    let verifier: Arc<dyn ClientCertVerifier> = if roots.intermediates.is_empty() {
        webpki
    } else {
        Arc::new(WithIntermediates::new(webpki, roots.intermediates.clone()))
    };
    let verifier: Arc<dyn ClientCertVerifier> = Arc::new(Cached::new(verifier, roots));
    let (bounded_provider, versions) = bounds::bounded(provider(), bounds);
    let mut config = ServerConfig::builder_with_provider(bounded_provider)
        .with_protocol_versions(&versions)?
        .with_client_cert_verifier(verifier.clone())
        .with_cert_resolver(Arc::new(FixedCert(leaf.certified.clone())));
    config.session_storage = Arc::new(NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    // Our record layer takes the traffic secrets after the handshake (`session`).
    config.enable_secret_extraction = true;
    Ok(InboundTls {
        config: Arc::new(config),
        verifier,
    })
}

/// Builds an outbound config presenting `leaf` (and its intermediates) and accepting only a
/// server whose chain reaches `roots` (through the intermediates it presents or the roots'
/// `IntermediateCerts`) and whose URI SAN names `expected` (trust domain ignored,
/// case-insensitive).
pub fn outbound(
    leaf: &Leaf,
    roots: &TrustRoots,
    expected: ExpectedServer,
) -> Result<Arc<ClientConfig>, TlsError> {
    outbound_bounded(leaf, roots, expected, &TlsBounds::default())
}

/// [`outbound`] within the `mesh` entry's `TLS.Outgoing` bounds.
pub fn outbound_bounded(
    leaf: &Leaf,
    roots: &TrustRoots,
    expected: ExpectedServer,
    bounds: &TlsBounds,
) -> Result<Arc<ClientConfig>, TlsError> {
    let verifier = SpiffeServerVerifier::new(roots.store.clone(), expected)
        .with_intermediates(roots.intermediates.clone())
        .with_cache(roots.verified.clone());
    let (bounded_provider, versions) = bounds::bounded(provider(), bounds);
    let mut config = ClientConfig::builder_with_provider(bounded_provider)
        .with_protocol_versions(&versions)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_client_cert_resolver(Arc::new(FixedCert(leaf.certified.clone())));
    config.resumption = Resumption::disabled();
    config.enable_secret_extraction = true;
    Ok(Arc::new(config))
}
