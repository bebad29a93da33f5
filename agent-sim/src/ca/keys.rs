//! EC P-256 keys: generation (ring, through rcgen), the SEC1 `EC PRIVATE KEY` PEM Consul serves,
//! import of an operator-supplied key (SEC1 or PKCS#8 PEM), and Consul's key ids.
//!
//! rcgen and ring only speak PKCS#8, so SEC1 is converted by hand with the tiny DER reader and
//! writer below (the structures are fixed and small).

use rcgen::{KeyPair, PKCS_ECDSA_P256_SHA256, PublicKeyData};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use super::CaError;
use super::encoding::{pem_encode, sha256};

/// 1.2.840.10045.2.1 (id-ecPublicKey), DER content bytes.
const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// 1.2.840.10045.3.1.7 (prime256v1 / P-256), DER content bytes.
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const OCTET_STRING: u8 = 0x04;
const BIT_STRING: u8 = 0x03;
const OID: u8 = 0x06;
const CONTEXT_0: u8 = 0xa0;
const CONTEXT_1: u8 = 0xa1;

/// A fresh EC P-256 key.
pub(crate) fn generate() -> Result<KeyPair, CaError> {
    Ok(KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?)
}

/// Consul's key id: SHA-256 of the DER SubjectPublicKeyInfo (all 32 bytes, not RFC 7093's 20).
pub(crate) fn key_id(key: &impl PublicKeyData) -> Vec<u8> {
    sha256(&key.subject_public_key_info())
}

/// The key as Go's `x509.MarshalECPrivateKey` + `pem.Encode` write it:
/// `SEQUENCE { 1, privateKey, [0] prime256v1, [1] publicKey }` in an `EC PRIVATE KEY` block.
pub(crate) fn sec1_pem(key: &KeyPair) -> Result<String, CaError> {
    let private = pkcs8_private_scalar(key.serialized_der())
        .ok_or_else(|| CaError::Crypto("unexpected PKCS#8 layout from the key generator".into()))?;
    let sec1 = tlv(
        SEQUENCE,
        &[
            tlv(INTEGER, &[1]),
            tlv(OCTET_STRING, private),
            tlv(CONTEXT_0, &tlv(OID, OID_P256)),
            tlv(CONTEXT_1, &bit_string(key.public_key_raw())),
        ]
        .concat(),
    );
    Ok(pem_encode("EC PRIVATE KEY", &sec1))
}

/// Parses an operator-supplied CA key (`PrivateKey` in the CA config): an EC P-256 key as SEC1
/// (`EC PRIVATE KEY`) or PKCS#8 (`PRIVATE KEY`) PEM. Anything else is an error, never a panic.
pub(crate) fn import_pem(pem: &str) -> Result<KeyPair, CaError> {
    let parsed = PrivateKeyDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| CaError::InvalidConfig(format!("error parsing private key: {e}")))?;
    let pkcs8 = match parsed {
        PrivateKeyDer::Pkcs8(der) => {
            if !pkcs8_is_p256(der.secret_pkcs8_der()) {
                return Err(CaError::UnsupportedKey("a non-P-256 PKCS#8 key".into()));
            }
            der.secret_pkcs8_der().to_vec()
        }
        PrivateKeyDer::Sec1(der) => sec1_to_pkcs8(der.secret_sec1_der())?,
        PrivateKeyDer::Pkcs1(_) => return Err(CaError::UnsupportedKey("an RSA key".into())),
        _ => return Err(CaError::UnsupportedKey("an unknown key format".into())),
    };
    KeyPair::from_pkcs8_der_and_sign_algo(&PrivatePkcs8KeyDer::from(pkcs8), &PKCS_ECDSA_P256_SHA256)
        .map_err(|e| CaError::InvalidConfig(format!("error parsing private key: {e}")))
}

// === PKCS#8 / SEC1 conversion ===

/// The 32-byte private scalar inside a PKCS#8 EC key.
fn pkcs8_private_scalar(pkcs8: &[u8]) -> Option<&[u8]> {
    let mut outer = Der::new(pkcs8).expect_tag(SEQUENCE)?;
    outer.expect_tag(INTEGER)?;
    outer.expect_tag(SEQUENCE)?;
    let ec_private_key = outer.expect_tag(OCTET_STRING)?.rest;
    let mut inner = Der::new(ec_private_key).expect_tag(SEQUENCE)?;
    inner.expect_tag(INTEGER)?;
    Some(inner.expect_tag(OCTET_STRING)?.rest)
}

fn pkcs8_is_p256(pkcs8: &[u8]) -> bool {
    let check = || -> Option<bool> {
        let mut outer = Der::new(pkcs8).expect_tag(SEQUENCE)?;
        outer.expect_tag(INTEGER)?;
        let mut alg = outer.expect_tag(SEQUENCE)?;
        let alg_oid = alg.expect_tag(OID)?.rest;
        let curve = alg.expect_tag(OID)?.rest;
        Some(alg_oid == OID_EC_PUBLIC_KEY && curve == OID_P256)
    };
    check().unwrap_or(false)
}

/// Wraps a SEC1 key in the PKCS#8 envelope ring accepts (curve in the algorithm identifier,
/// public key kept inside).
fn sec1_to_pkcs8(sec1: &[u8]) -> Result<Vec<u8>, CaError> {
    let bad =
        || CaError::InvalidConfig("error parsing private key: malformed EC PRIVATE KEY".into());
    let mut seq = Der::new(sec1).expect_tag(SEQUENCE).ok_or_else(bad)?;
    let version = seq.expect_tag(INTEGER).ok_or_else(bad)?.rest;
    if version != [1] {
        return Err(bad());
    }
    let private = seq.expect_tag(OCTET_STRING).ok_or_else(bad)?.rest;
    let mut public = None;
    while let Some((tag, content)) = seq.next() {
        match tag {
            CONTEXT_0 => {
                let curve = Der::new(content).expect_tag(OID).ok_or_else(bad)?.rest;
                if curve != OID_P256 {
                    return Err(CaError::UnsupportedKey("an EC key on another curve".into()));
                }
            }
            CONTEXT_1 => public = Some(content),
            _ => return Err(bad()),
        }
    }
    let public = public.ok_or_else(|| {
        CaError::InvalidConfig("error parsing private key: EC PRIVATE KEY has no public key".into())
    })?;
    let ec_private_key = tlv(
        SEQUENCE,
        &[
            tlv(INTEGER, &[1]),
            tlv(OCTET_STRING, private),
            tlv(CONTEXT_1, public),
        ]
        .concat(),
    );
    let algorithm = tlv(
        SEQUENCE,
        &[tlv(OID, OID_EC_PUBLIC_KEY), tlv(OID, OID_P256)].concat(),
    );
    Ok(tlv(
        SEQUENCE,
        &[
            tlv(INTEGER, &[0]),
            algorithm,
            tlv(OCTET_STRING, &ec_private_key),
        ]
        .concat(),
    ))
}

// === minimal DER ===

/// A cursor over concatenated DER TLVs (definite lengths only, which is all DER allows).
struct Der<'a> {
    rest: &'a [u8],
}

impl<'a> Der<'a> {
    fn new(rest: &'a [u8]) -> Self {
        Self { rest }
    }

    /// The next TLV as (tag, contents), or `None` at the end or on malformed input.
    fn next(&mut self) -> Option<(u8, &'a [u8])> {
        let (&tag, rest) = self.rest.split_first()?;
        let (&first, rest) = rest.split_first()?;
        let (len, rest) = if first < 0x80 {
            (usize::from(first), rest)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || rest.len() < n {
                return None;
            }
            let len = rest[..n]
                .iter()
                .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
            (len, &rest[n..])
        };
        if rest.len() < len {
            return None;
        }
        let (content, rest) = rest.split_at(len);
        self.rest = rest;
        Some((tag, content))
    }

    /// The next TLV's contents as a new cursor, if its tag is `tag`.
    fn expect_tag(&mut self, tag: u8) -> Option<Self> {
        match self.next()? {
            (t, content) if t == tag => Some(Self::new(content)),
            _ => None,
        }
    }
}

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
    out.extend_from_slice(content);
    out
}

/// A BIT STRING with no unused bits.
fn bit_string(bytes: &[u8]) -> Vec<u8> {
    tlv(BIT_STRING, &[&[0u8][..], bytes].concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sec1_round_trips_through_import() {
        let key = generate().unwrap();
        let pem = sec1_pem(&key).unwrap();
        assert!(pem.starts_with("-----BEGIN EC PRIVATE KEY-----\n"));
        assert!(pem.ends_with("-----END EC PRIVATE KEY-----\n"));
        let back = import_pem(&pem).unwrap();
        assert_eq!(back.public_key_raw(), key.public_key_raw());
    }

    #[test]
    fn sec1_layout_matches_go_marshal_ec_private_key() {
        let key = generate().unwrap();
        let pem = sec1_pem(&key).unwrap();
        let der = PrivateKeyDer::from_pem_slice(pem.as_bytes()).unwrap();
        let PrivateKeyDer::Sec1(sec1) = der else {
            panic!("not SEC1")
        };
        let mut seq = Der::new(sec1.secret_sec1_der())
            .expect_tag(SEQUENCE)
            .unwrap();
        assert_eq!(seq.expect_tag(INTEGER).unwrap().rest, [1]);
        assert_eq!(seq.expect_tag(OCTET_STRING).unwrap().rest.len(), 32);
        let mut params = seq.expect_tag(CONTEXT_0).unwrap();
        assert_eq!(params.expect_tag(OID).unwrap().rest, OID_P256);
        let mut public = seq.expect_tag(CONTEXT_1).unwrap();
        let bits = public.expect_tag(BIT_STRING).unwrap().rest;
        assert_eq!(&bits[1..], key.public_key_raw());
        assert!(seq.next().is_none());
    }

    #[test]
    fn pkcs8_pem_is_accepted_too() {
        let key = generate().unwrap();
        let back = import_pem(&key.serialize_pem()).unwrap();
        assert_eq!(back.public_key_raw(), key.public_key_raw());
    }

    #[test]
    fn bad_keys_are_errors_not_panics() {
        assert!(matches!(
            import_pem("not a pem"),
            Err(CaError::InvalidConfig(_))
        ));
        let rsa = pem_encode("RSA PRIVATE KEY", &[0x30, 0x00]);
        assert!(matches!(import_pem(&rsa), Err(CaError::UnsupportedKey(_))));
        let garbage = pem_encode("EC PRIVATE KEY", &[0x30, 0x03, 0x02, 0x01]);
        assert!(matches!(
            import_pem(&garbage),
            Err(CaError::InvalidConfig(_))
        ));
        let bad_pkcs8 = pem_encode("PRIVATE KEY", &[0x30, 0x00]);
        assert!(matches!(
            import_pem(&bad_pkcs8),
            Err(CaError::UnsupportedKey(_))
        ));
    }

    #[test]
    fn key_id_is_sha256_of_spki() {
        let key = generate().unwrap();
        let id = key_id(&key);
        assert_eq!(id.len(), 32);
        assert_eq!(id, sha256(&key.subject_public_key_info()));
    }

    #[test]
    fn long_lengths_encode_and_decode() {
        let content = vec![9u8; 300];
        let encoded = tlv(OCTET_STRING, &content);
        assert_eq!(&encoded[..4], &[OCTET_STRING, 0x82, 0x01, 0x2c]);
        let (tag, back) = Der::new(&encoded).next().unwrap();
        assert_eq!((tag, back), (OCTET_STRING, &content[..]));
        assert!(Der::new(&encoded[..10]).next().is_none(), "truncated input");
    }
}
