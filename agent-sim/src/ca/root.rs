//! One CA root: its self-signed certificate and key, the CARoot JSON Consul serves for it, and
//! cross-signing a newer root with an older one.

use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyIdMethod,
    KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::CaError;
use super::encoding::{checked_add, colon_hex, fingerprint, pem_encode};
use super::keys::key_id;

/// CARoot `Name` for the built-in provider (`"<Pretty provider> CA Primary Cert"`).
pub(crate) const ROOT_NAME: &str = "Consul CA Primary Cert";
/// How long a cross-signed root stays valid (from now − 1 min), as in Consul's `CrossSignCA`.
const CROSS_SIGN_VALIDITY: time::Duration = time::Duration::days(7);

/// A CA key with the certificate parameters it signs as (subject, key usages, pre-specified
/// key id). Shared behind `Arc` so `Ca` stays cheap to clone; it never changes.
#[derive(Debug)]
pub(crate) struct Signer {
    pub(crate) key: KeyPair,
    pub(crate) params: CertificateParams,
}

impl Signer {
    /// The rcgen issuer view: issued certificates get this subject as issuer and this key id as
    /// AuthorityKeyId.
    pub(crate) fn issuer(&self) -> Issuer<'_, &KeyPair> {
        Issuer::from_params(&self.params, &self.key)
    }
}

/// One entry of the roots table.
#[derive(Debug, Clone)]
pub(crate) struct Root {
    /// SHA-1 fingerprint of the DER, colon hex.
    pub(crate) id: String,
    /// The base36 part of the subject CN (`pri-<uid>...`).
    pub(crate) uid: String,
    pub(crate) serial: u64,
    /// SubjectKeyId = SHA-256 of the public key (32 bytes).
    pub(crate) signing_key_id: Vec<u8>,
    pub(crate) not_before: OffsetDateTime,
    pub(crate) not_after: OffsetDateTime,
    pub(crate) cert_pem: String,
    /// PEMs attached to every leaf this root signs (the cross-signed copy after a rotation).
    pub(crate) intermediates: Vec<String>,
    pub(crate) active: bool,
    /// When it stopped being active; drives pruning. Not serialized (`json:"-"` in Consul).
    pub(crate) rotated_out_at: Option<OffsetDateTime>,
    pub(crate) create_index: u64,
    pub(crate) modify_index: u64,
    pub(crate) signer: Arc<Signer>,
}

/// What a new root is made of besides its key.
pub(crate) struct RootSpec<'a> {
    pub(crate) trust_domain: &'a str,
    pub(crate) cluster_id: &'a str,
    /// The 8 base36 characters after `pri-` in the subject CN.
    pub(crate) uid: &'a str,
    pub(crate) serial: u64,
    /// Already truncated to whole seconds (see `encoding::cert_time`).
    pub(crate) now: OffsetDateTime,
    pub(crate) ttl: Duration,
    pub(crate) index: u64,
}

/// A self-signed root as the consul provider's `generateCA` makes it: CN
/// `pri-<uid>.consul.ca.<cluster id[..8]>.consul`, URI SAN `spiffe://<td>`, CA:true, KeyUsage
/// CertSign+CRLSign+DigitalSignature, SKID = AKID = SHA-256(SPKI), valid from now (no backdate)
/// for `ttl`. The new root is active.
pub(crate) fn generate_root(key: KeyPair, spec: &RootSpec<'_>) -> Result<Root, CaError> {
    let not_after = checked_add(spec.now, spec.ttl)
        .ok_or_else(|| CaError::InvalidTtl(format!("root cert TTL {:?} is too large", spec.ttl)))?;
    let cluster_prefix = spec.cluster_id.get(..8).unwrap_or(spec.cluster_id);
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(
        DnType::CommonName,
        format!("pri-{}.consul.ca.{cluster_prefix}.consul", spec.uid),
    );
    params.distinguished_name = dn;
    params.subject_alt_names = vec![SanType::URI(
        format!("spiffe://{}", spec.trust_domain).try_into()?,
    )];
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let skid = key_id(&key);
    // rcgen's KeyIdMethod::Sha256 truncates to 20 bytes; Consul's ids are the full 32.
    params.key_identifier_method = KeyIdMethod::PreSpecified(skid.clone());
    params.use_authority_key_identifier_extension = true;
    params.serial_number = Some(SerialNumber::from(spec.serial));
    params.not_before = spec.now;
    params.not_after = not_after;
    let cert = params.self_signed(&key)?;
    let der = cert.der().to_vec();
    Ok(Root {
        id: fingerprint(&der),
        uid: spec.uid.to_owned(),
        serial: spec.serial,
        signing_key_id: skid,
        not_before: spec.now,
        not_after,
        cert_pem: pem_encode("CERTIFICATE", &der),
        intermediates: Vec::new(),
        active: true,
        rotated_out_at: None,
        create_index: spec.index,
        modify_index: spec.index,
        signer: Arc::new(Signer { key, params }),
    })
}

/// `new` re-issued by `old` (Consul's `CrossSignCA`): same subject, public key, SAN and SKID as
/// `new`, issuer and AKID from `old`, a fresh serial, valid from now − 1 min for 7 days. PEM.
pub(crate) fn cross_sign(
    new: &Root,
    old: &Root,
    serial: u64,
    now: OffsetDateTime,
) -> Result<String, CaError> {
    let mut params = new.signer.params.clone();
    params.serial_number = Some(SerialNumber::from(serial));
    params.not_before = now - time::Duration::minutes(1);
    params.not_after = params.not_before + CROSS_SIGN_VALIDITY;
    params.use_authority_key_identifier_extension = true;
    let cert = params.signed_by(&new.signer.key, &old.signer.issuer())?;
    Ok(pem_encode("CERTIFICATE", cert.der()))
}

impl Root {
    /// The CARoot object of the roots endpoints, keys in Consul's struct order. `SigningCert` and
    /// `SigningKey` are never served; `RotatedOutAt` is `json:"-"`.
    pub(crate) fn to_json(&self, cluster_id: &str) -> Value {
        let intermediates = if self.intermediates.is_empty() {
            Value::Null
        } else {
            json!(self.intermediates)
        };
        json!({
            "ID": self.id,
            "Name": ROOT_NAME,
            "SerialNumber": self.serial,
            "SigningKeyID": colon_hex(&self.signing_key_id),
            "ExternalTrustDomain": cluster_id,
            "NotBefore": super::encoding::rfc3339(self.not_before),
            "NotAfter": super::encoding::rfc3339(self.not_after),
            "RootCert": self.cert_pem,
            "IntermediateCerts": intermediates,
            "Active": self.active,
            "PrivateKeyType": "ec",
            "PrivateKeyBits": 256,
            "CreateIndex": self.create_index,
            "ModifyIndex": self.modify_index,
        })
    }
}
