//! Simulator-only chain mode (as with Vault, or the consul provider in a secondary datacenter):
//! each root gets an intermediate CA that signs the leaves. The intermediate's certificate is
//! appended to the root's `IntermediateCerts`, the root's `SigningKeyID` becomes the
//! intermediate's key id (Consul reports the leaf-signing key), and leaves' `CertPEM` carry
//! leaf then every `IntermediateCerts` entry. Rotating the intermediate alone appends the new
//! one (older leaves still chain through the old one, as Consul's intermediate renewal keeps it).

use std::sync::Arc;

use rand::Rng;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, KeyIdMethod,
    KeyUsagePurpose, SanType, SerialNumber,
};
use time::OffsetDateTime;

use super::encoding::{base36_uid, cert_time, checked_add, pem_encode};
use super::keys::{self, key_id};
use super::root::{Root, Signer};
use super::{Ca, CaError};

/// An intermediate signed by `root`: CN `int-<uid>.consul.ca.<cluster id[..8]>.consul`, URI SAN
/// `spiffe://<td>` (none without a trust domain in the spec), CA:true with path length 0 (as Consul's `SignIntermediate`), KeyUsage
/// CertSign+CRLSign+DigitalSignature, SKID = SHA-256(SPKI), AKID = the root's; valid from now −
/// 1 min for the configured `IntermediateCertTTL`. Returns its signer and PEM.
pub(crate) struct IntermediateSpec<'a> {
    /// `None`: no URI SAN (see `RootSpec::trust_domain`).
    pub(crate) trust_domain: Option<&'a str>,
    pub(crate) cluster_id: &'a str,
    pub(crate) uid: &'a str,
    pub(crate) serial: u64,
    pub(crate) now: OffsetDateTime,
    pub(crate) ttl: std::time::Duration,
    pub(crate) kind: keys::KeyKind,
}

pub(crate) fn sign_intermediate(
    root: &Root,
    spec: &IntermediateSpec<'_>,
) -> Result<(Arc<Signer>, String), CaError> {
    let key = keys::generate_kind(spec.kind)?;
    let not_before = spec.now - time::Duration::minutes(1);
    let not_after = checked_add(not_before, spec.ttl)
        .ok_or_else(|| CaError::InvalidTtl("intermediate cert TTL is too large".into()))?;
    let cluster_prefix = spec.cluster_id.get(..8).unwrap_or(spec.cluster_id);
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(
        DnType::CommonName,
        format!("int-{}.consul.ca.{cluster_prefix}.consul", spec.uid),
    );
    params.distinguished_name = dn;
    if let Some(td) = spec.trust_domain {
        params.subject_alt_names = vec![SanType::URI(format!("spiffe://{td}").try_into()?)];
    }
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.key_identifier_method = KeyIdMethod::PreSpecified(key_id(&key));
    params.use_authority_key_identifier_extension = true;
    params.serial_number = Some(SerialNumber::from(spec.serial));
    params.not_before = not_before;
    params.not_after = not_after;
    let cert = params.signed_by(&key, &root.signer.issuer())?;
    let pem = pem_encode("CERTIFICATE", cert.der());
    Ok((Arc::new(Signer { key, params }), pem))
}

impl Ca {
    /// Whether leaves are signed by an intermediate (chain mode).
    pub fn intermediate_mode(&self) -> bool {
        self.chain
    }

    /// Gives the root at `pos` a fresh intermediate (appended to its `IntermediateCerts`) that
    /// signs its leaves from now on; the root's SigningKeyID becomes the intermediate's.
    pub(crate) fn attach_intermediate(
        &mut self,
        pos: usize,
        now: OffsetDateTime,
        rng: &mut impl Rng,
    ) -> Result<(), CaError> {
        let uid = base36_uid(rng);
        let spec = IntermediateSpec {
            trust_domain: self.ca_san_trust_domain(),
            cluster_id: &self.cluster_id,
            uid: &uid,
            serial: self.next_serial,
            now: cert_time(now),
            ttl: self.settings.intermediate_ttl,
            kind: self.settings.ca_kind(),
        };
        let root = self.roots.get(pos).ok_or(CaError::NoActiveRoot)?;
        let (signer, pem) = sign_intermediate(root, &spec)?;
        let skid = key_id(&signer.key);
        self.next_serial += 1;
        let root = self.roots.get_mut(pos).ok_or(CaError::NoActiveRoot)?;
        root.intermediates.push(pem);
        root.issuing = Some(signer);
        root.signing_key_id = skid;
        Ok(())
    }

    /// Rotates the active root's intermediate alone (chain mode; as Vault's or a secondary
    /// datacenter's intermediate renewal): a new intermediate key and certificate are appended
    /// to the active root's `IntermediateCerts`, its SigningKeyID changes (so leaves are
    /// re-issued), the root itself stays. Every root is rewritten at `index`, which becomes
    /// the roots index. Outside chain mode this switches chain mode on for the active root.
    pub fn rotate_intermediate(
        &mut self,
        now: OffsetDateTime,
        index: u64,
        rng: &mut impl Rng,
    ) -> Result<(), CaError> {
        let pos = self
            .roots
            .iter()
            .position(|r| r.active)
            .ok_or(CaError::NoActiveRoot)?;
        self.attach_intermediate(pos, now, rng)?;
        self.chain = true;
        for r in &mut self.roots {
            r.modify_index = index;
        }
        self.roots_index = index;
        Ok(())
    }
}
