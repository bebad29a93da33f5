//! Broken handling of real-world CAs: a proxy that can only load P-256 keys, its leaf's and its
//! roots' (`p256-only`), one
//! that serves its leaf without the intermediates of `CertPEM` (`leaf-without-chain`), and
//! verifiers that chain peers to the roots alone, ignoring the intermediates the peer presents
//! and the roots' `IntermediateCerts` (`roots-only-verification`).

use std::sync::Arc;

use rustls::Error;
use rustls::client::danger::{ServerCertVerified, ServerCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::sign::CertifiedKey;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use super::{Sabotage, Sabotages};
use crate::tls::verify::SpiffeServerVerifier;
use crate::tls::{ExpectedServer, KeyKind, Leaf, TlsError, TrustRoots, provider};

/// The leaf as the control plane installs it: `None` under `p256-only` when its key, or the key
/// of a certificate in its chain (a cross-signed RSA root, say), is not P-256 (the previous leaf
/// stays), only its first certificate under `leaf-without-chain`.
pub(crate) fn leaf(leaf: Leaf, set: Sabotages) -> Option<Leaf> {
    let p256_chain = || {
        leaf.certified
            .cert
            .iter()
            .all(|c| KeyKind::of_cert(c) == KeyKind::EcP256)
    };
    if set.contains(Sabotage::P256Only) && (leaf.key_kind != KeyKind::EcP256 || !p256_chain()) {
        tracing::error!(key = %leaf.key_kind, "unsupported key type in the leaf or its chain (sabotage p256-only); keeping the previous leaf");
        return None;
    }
    if set.contains(Sabotage::LeafWithoutChain) && leaf.certified.cert.len() > 1 {
        let first = leaf.certified.cert[..1].to_vec();
        let certified = CertifiedKey::new(first, leaf.certified.key.clone());
        return Some(Leaf {
            certified: Arc::new(certified),
            ..leaf
        });
    }
    Some(leaf)
}

/// `p256-only`: whether a root PEM survives (its key is P-256). Consul's agent issues P-256 leaf
/// keys whatever the CA's key type, so a proxy that hard-codes P-256 breaks on the roots: an RSA
/// or P-384 root is dropped as unusable, and peers whose leaves chain to it are refused.
pub(crate) fn root_usable(pem: &str, set: Sabotages) -> bool {
    use rustls_pki_types::pem::PemObject;
    if !set.contains(Sabotage::P256Only) {
        return true;
    }
    let usable = CertificateDer::from_pem_slice(pem.as_bytes())
        .is_ok_and(|der| KeyKind::of_cert(&der) == KeyKind::EcP256);
    if !usable {
        tracing::error!("unsupported root key type (sabotage p256-only); dropping the root");
    }
    usable
}

/// `require-ca-spiffe-san`: a peer whose chain holds a CA certificate (the intermediates it
/// presents) without a `spiffe://` URI SAN is refused, as by a proxy that takes the trust domain
/// from the signing CA and has no opt-out for providers that bend SPIFFE.
pub(crate) fn ca_san_problem(chain: &[CertificateDer<'_>], set: Sabotages) -> Option<String> {
    if !set.contains(Sabotage::RequireCaSpiffeSan) {
        return None;
    }
    chain.iter().skip(1).any(|c| !has_spiffe_uri(c)).then(|| {
        "a CA certificate in the chain has no SPIFFE trust-domain URI SAN (sabotage require-ca-spiffe-san)"
            .to_owned()
    })
}

/// Whether a certificate carries a `spiffe://` URI SAN.
fn has_spiffe_uri(der: &CertificateDer<'_>) -> bool {
    use x509_parser::extensions::GeneralName;
    use x509_parser::prelude::{FromDer, X509Certificate};
    let Ok((_, cert)) = X509Certificate::from_der(der) else {
        return false;
    };
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return false;
    };
    san.value
        .general_names
        .iter()
        .any(|n| matches!(n, GeneralName::URI(u) if u.starts_with("spiffe://")))
}

/// `roots-only-verification`: a client verifier over the roots alone.
pub(crate) fn roots_only_client(
    roots: &TrustRoots,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let webpki =
        WebPkiClientVerifier::builder_with_provider(roots.store.clone(), provider()).build()?;
    Ok(Arc::new(RootsOnlyClient(webpki)))
}

/// `roots-only-verification`: the upstream verifier over the roots alone (identity still checked).
pub(crate) fn roots_only_server(
    roots: &TrustRoots,
    expected: ExpectedServer,
) -> Arc<dyn ServerCertVerifier> {
    Arc::new(RootsOnlyServer(SpiffeServerVerifier::new(
        roots.store.clone(),
        expected,
    )))
}

/// Verifies client chains with no intermediates at all.
#[derive(Debug)]
struct RootsOnlyClient(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for RootsOnlyClient {
    crate::tls::verify::delegate_client_auth!(0);

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        self.0.verify_client_cert(end_entity, &[], now)
    }

    crate::tls::verify::verify_signatures!(0);
}

/// Verifies upstream chains with no intermediates at all.
#[derive(Debug)]
struct RootsOnlyServer(SpiffeServerVerifier);

impl ServerCertVerifier for RootsOnlyServer {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        self.0
            .verify_server_cert(end_entity, &[], server_name, ocsp, now)
    }

    crate::tls::verify::verify_signatures!(0);
}
