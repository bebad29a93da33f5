//! Shared fixtures for the CA tests: a deterministic CA, PEM/x509 helpers, and chain
//! verification through rustls' `WebPkiClientVerifier` (what a proxy's inbound listener runs).

use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rustls::RootCertStore;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use sha2::Digest as _;
use time::OffsetDateTime;
use time::macros::datetime;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::model::ca::{Ca, CaConfig};

pub(super) const CLUSTER: &str = "7e567ac2-551d-463f-8497-f78972856fc1";
pub(super) const TD: &str = "7e567ac2-551d-463f-8497-f78972856fc1.consul";
pub(super) const T0: OffsetDateTime = datetime!(2025-05-21 16:33:28 UTC);

pub(super) fn rng() -> StdRng {
    StdRng::seed_from_u64(7)
}

/// A CA bootstrapped at `T0`, raft index 8, default TTLs.
pub(super) fn new_ca() -> Ca {
    let cfg = CaConfig {
        cluster_id: CLUSTER.into(),
        ..CaConfig::default()
    };
    Ca::new(cfg, T0, 8, &mut rng()).unwrap()
}

pub(super) fn hours(h: u64) -> Duration {
    Duration::from_secs(h * 3600)
}

/// Every certificate in a PEM bundle, in order.
pub(super) fn ders(pem: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The one certificate in `pem` (panics if there are more).
pub(super) fn single_der(pem: &str) -> CertificateDer<'static> {
    let mut all = ders(pem);
    assert_eq!(all.len(), 1, "expected one certificate");
    all.remove(0)
}

pub(super) fn parse<'a>(der: &'a CertificateDer<'_>) -> X509Certificate<'a> {
    X509Certificate::from_der(der.as_ref()).unwrap().1
}

/// URI SANs of a certificate.
pub(super) fn uris(cert: &X509Certificate<'_>) -> Vec<String> {
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

pub(super) fn skid(cert: &X509Certificate<'_>) -> Vec<u8> {
    cert.extensions()
        .iter()
        .find_map(|e| match e.parsed_extension() {
            ParsedExtension::SubjectKeyIdentifier(k) => Some(k.0.to_vec()),
            _ => None,
        })
        .expect("no SKID")
}

pub(super) fn akid(cert: &X509Certificate<'_>) -> Vec<u8> {
    cert.extensions()
        .iter()
        .find_map(|e| match e.parsed_extension() {
            ParsedExtension::AuthorityKeyIdentifier(a) => {
                a.key_identifier.as_ref().map(|k| k.0.to_vec())
            }
            _ => None,
        })
        .expect("no AKID")
}

/// SHA-256 of the certificate's DER SubjectPublicKeyInfo, computed independently of the CA.
pub(super) fn spki_sha256(cert: &X509Certificate<'_>) -> Vec<u8> {
    sha2::Sha256::digest(cert.public_key().raw).to_vec()
}

/// Lowercase colon hex, written independently of the CA's helper.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Verifies `chain_pem` (leaf first) as a TLS client chain against `trusted` root PEMs at `at`.
pub(super) fn verify_client(
    chain_pem: &str,
    trusted: &[&str],
    at: OffsetDateTime,
) -> Result<(), rustls::Error> {
    let mut roots = RootCertStore::empty();
    for pem in trusted {
        for der in ders(pem) {
            roots.add(der).unwrap();
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .unwrap();
    let chain = ders(chain_pem);
    let (leaf, rest) = chain.split_first().unwrap();
    let secs = u64::try_from(at.unix_timestamp()).unwrap();
    let now = UnixTime::since_unix_epoch(Duration::from_secs(secs));
    verifier.verify_client_cert(leaf, rest, now).map(|_| ())
}

/// Whether `key_pem` is the private key of the first certificate in `chain_pem` (rustls checks
/// the public halves match).
pub(super) fn key_matches(chain_pem: &str, key_pem: &str) -> bool {
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
    let provider = rustls::crypto::ring::default_provider();
    rustls::sign::CertifiedKey::from_der(ders(chain_pem), key, &provider).is_ok()
}

/// `Err(UnknownIssuer)` as rustls reports it.
pub(super) fn is_unknown_issuer(r: &Result<(), rustls::Error>) -> bool {
    matches!(
        r,
        Err(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer
        ))
    )
}

/// `Err(Expired..)` as rustls reports it.
pub(super) fn is_expired(r: &Result<(), rustls::Error>) -> bool {
    matches!(
        r,
        Err(rustls::Error::InvalidCertificate(
            rustls::CertificateError::Expired | rustls::CertificateError::ExpiredContext { .. }
        ))
    )
}
