//! What kind of key a certificate carries (`ec-p256`, `ec-p384`, `rsa-2048`, …), read from its
//! SubjectPublicKeyInfo, for logs, metrics and the `p256-only` sabotage. Nothing in the proxy
//! depends on the kind: rustls (ring) signs and verifies every type Consul issues.

use std::fmt;

use rustls_pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::public_key::PublicKey;

/// The key type of a certificate's public key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// ECDSA on NIST P-256 (Consul's default, `PrivateKeyType = "ec"`, `PrivateKeyBits = 256`).
    EcP256,
    /// ECDSA on NIST P-384.
    EcP384,
    /// ECDSA on another curve.
    EcOther,
    /// RSA with a modulus of this many bits.
    Rsa(usize),
    /// Anything else (or unparsable).
    Other,
}

/// OID of `secp256r1` (`prime256v1`).
const P256: &str = "1.2.840.10045.3.1.7";
/// OID of `secp384r1`.
const P384: &str = "1.3.132.0.34";

impl KeyKind {
    /// The kind of `cert`'s public key.
    pub fn of_cert(cert: &CertificateDer<'_>) -> Self {
        let Ok((_, cert)) = X509Certificate::from_der(cert) else {
            return Self::Other;
        };
        let spki = cert.public_key();
        match spki.parsed() {
            Ok(PublicKey::EC(_)) => {
                let curve = spki
                    .algorithm
                    .parameters
                    .as_ref()
                    .and_then(|p| p.as_oid().ok())
                    .map(|oid| oid.to_id_string());
                match curve.as_deref() {
                    Some(P256) => Self::EcP256,
                    Some(P384) => Self::EcP384,
                    _ => Self::EcOther,
                }
            }
            Ok(PublicKey::RSA(rsa)) => Self::Rsa(modulus_bits(rsa.modulus)),
            _ => Self::Other,
        }
    }
}

/// Bits of a big-endian unsigned integer (leading zero bytes, as DER adds, ignored).
fn modulus_bits(modulus: &[u8]) -> usize {
    let trimmed: &[u8] = match modulus.iter().position(|b| *b != 0) {
        Some(i) => &modulus[i..],
        None => &[],
    };
    match trimmed.first() {
        Some(first) => trimmed.len() * 8 - first.leading_zeros() as usize,
        None => 0,
    }
}

impl fmt::Display for KeyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EcP256 => f.write_str("ec-p256"),
            Self::EcP384 => f.write_str("ec-p384"),
            Self::EcOther => f.write_str("ec-other"),
            Self::Rsa(bits) => write!(f, "rsa-{bits}"),
            Self::Other => f.write_str("other"),
        }
    }
}
