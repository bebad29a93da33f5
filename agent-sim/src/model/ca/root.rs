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
use super::keys::{self, key_id};

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
    /// Chain mode: the intermediate CA that signs leaves (its certificate is the last entry of
    /// `intermediates`). `None`: the root signs leaves itself, as Consul's built-in provider does.
    pub(crate) issuing: Option<Arc<Signer>>,
}

/// What a new root is made of besides its key.
pub(crate) struct RootSpec<'a> {
    /// The trust domain of the `spiffe://<td>` URI SAN; `None`: no URI SAN (a CA that bends
    /// SPIFFE, as some external providers issue them).
    pub(crate) trust_domain: Option<&'a str>,
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
/// `pri-<uid>.consul.ca.<cluster id[..8]>.consul`, URI SAN `spiffe://<td>` (none without a trust
/// domain in the spec), CA:true, KeyUsage
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
    if let Some(td) = spec.trust_domain {
        params.subject_alt_names = vec![SanType::URI(format!("spiffe://{td}").try_into()?)];
    }
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
        issuing: None,
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
    /// The key leaves are signed with: the intermediate's in chain mode, else the root's.
    pub(crate) fn leaf_signer(&self) -> &Signer {
        self.issuing.as_deref().unwrap_or(&self.signer)
    }

    /// The CARoot object of the roots endpoints, keys in Consul's struct order. `SigningCert` and
    /// `SigningKey` are never served; `RotatedOutAt` is `json:"-"`.
    pub(crate) fn to_json(&self, cluster_id: &str) -> Value {
        // Consul reads these from the root certificate's key (`KeyInfoFromCert`).
        let kind = keys::kind_of(&self.signer.key);
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
            "PrivateKeyType": kind.key_type(),
            "PrivateKeyBits": kind.bits(),
            "CreateIndex": self.create_index,
            "ModifyIndex": self.modify_index,
        })
    }
}

/// An operator-supplied root (`RootCert` + `PrivateKey` in the CA config), adopted as it is:
/// the certificate must parse, be a CA, and carry the public key of `key`. Consul's consul
/// provider checks only that the certificate parses (`newCARoot`); the key match and CA checks
/// (and their texts) are the simulator's, refusing a root Consul would adopt and then fail to
/// sign valid leaves with. The `Root`'s ID,
/// validity and SigningKeyID come from the certificate (SigningKeyID from its SubjectKeyId, as
/// Consul's `newCARoot` reads it; SHA-256 of the key when the cert has none).
pub(crate) fn import_root(
    key: KeyPair,
    cert_pem: &str,
    serial_hint: u64,
    index: u64,
) -> Result<Root, CaError> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    use x509_parser::prelude::{FromDer, X509Certificate};

    let invalid = |msg: String| CaError::InvalidConfig(msg);
    // `connect.ParseCert`'s texts (Go's `x509.ParseCertificate` says `x509: malformed
    // certificate` for DER it cannot read; the detail after it is the simulator's).
    let der = CertificateDer::from_pem_slice(cert_pem.as_bytes())
        .map_err(|_| CaError::Provider("no PEM-encoded data found".into()))?;
    let (_, cert) = X509Certificate::from_der(der.as_ref())
        .map_err(|e| CaError::Provider(format!("x509: malformed certificate ({e})")))?;
    if cert.public_key().raw != rcgen::PublicKeyData::subject_public_key_info(&key).as_slice() {
        return Err(invalid(
            "root cert's public key does not match the private key".into(),
        ));
    }
    if !cert.is_ca() {
        return Err(invalid("root cert is not a CA certificate".into()));
    }
    let skid = cert
        .extensions()
        .iter()
        .find_map(|ext| match ext.parsed_extension() {
            x509_parser::extensions::ParsedExtension::SubjectKeyIdentifier(id) => {
                Some(id.0.to_vec())
            }
            _ => None,
        })
        .unwrap_or_else(|| key_id(&key));
    let not_before = cert.validity().not_before.to_datetime();
    let not_after = cert.validity().not_after.to_datetime();
    let serial = u64::try_from(cert.serial.clone()).unwrap_or(serial_hint);
    let params = imported_params(&cert, &skid)?;
    let der_bytes = der.as_ref().to_vec();
    Ok(Root {
        id: fingerprint(&der_bytes),
        uid: String::new(),
        serial,
        signing_key_id: skid,
        not_before,
        not_after,
        cert_pem: pem_encode("CERTIFICATE", &der_bytes),
        intermediates: Vec::new(),
        active: true,
        rotated_out_at: None,
        create_index: index,
        modify_index: index,
        signer: Arc::new(Signer { key, params }),
        issuing: None,
    })
}

/// Certificate parameters that re-issue (cross-sign) or sign as an imported root: its subject,
/// URI SANs, CA flag, key usages and key id; validity is set by whoever signs.
fn imported_params(
    cert: &x509_parser::certificate::X509Certificate<'_>,
    skid: &[u8],
) -> Result<CertificateParams, CaError> {
    use x509_parser::extensions::GeneralName;
    let mut dn = DistinguishedName::new();
    for attr in cert.subject().iter_attributes() {
        let Ok(value) = attr.as_str() else { continue };
        let oid: Vec<u64> = attr
            .attr_type()
            .iter()
            .map(|arcs| arcs.collect())
            .unwrap_or_default();
        let ty = match oid.as_slice() {
            [2, 5, 4, 3] => DnType::CommonName,
            [2, 5, 4, 6] => DnType::CountryName,
            [2, 5, 4, 7] => DnType::LocalityName,
            [2, 5, 4, 8] => DnType::StateOrProvinceName,
            [2, 5, 4, 10] => DnType::OrganizationName,
            [2, 5, 4, 11] => DnType::OrganizationalUnitName,
            _ => DnType::CustomDnType(oid),
        };
        // Keep the string type so issuer names in signed certs match the root's subject bytes.
        if attr.attr_value().tag() == x509_parser::der_parser::asn1_rs::Tag::PrintableString
            && let Ok(printable) = rcgen::string::PrintableString::try_from(value)
        {
            dn.push(ty, rcgen::DnValue::PrintableString(printable));
            continue;
        }
        dn.push(ty, value);
    }
    let mut params = CertificateParams::default();
    params.distinguished_name = dn;
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            if let GeneralName::URI(uri) = name {
                params
                    .subject_alt_names
                    .push(SanType::URI((*uri).try_into()?));
            }
        }
    }
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.key_identifier_method = KeyIdMethod::PreSpecified(skid.to_vec());
    params.use_authority_key_identifier_extension = true;
    params.not_before = cert.validity().not_before.to_datetime();
    params.not_after = cert.validity().not_after.to_datetime();
    Ok(params)
}
