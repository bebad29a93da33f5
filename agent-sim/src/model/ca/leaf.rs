//! Leaf certificates: the `Leaf` the leaf endpoint serves (and its JSON), SPIFFE service IDs, and
//! the one signing routine shared by real issuance and the harness's forgeries.

use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyIdMethod,
    KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::CaError;
use super::encoding::{go_path_escape, pem_encode, rfc3339};
use super::keys::{self, key_id};
use super::root::Signer;

/// A leaf certificate as `GET /v1/agent/connect/ca/leaf/:service` serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    /// Lowercase colon hex of the big-endian serial bytes (`"08"`, `"1a:2b"`).
    pub serial_number: String,
    /// The leaf PEM followed by every PEM in the signing root's `IntermediateCerts`.
    pub cert_pem: String,
    /// The leaf's fresh key (of the CA config's `PrivateKeyType`/`PrivateKeyBits`), as
    /// `EC PRIVATE KEY` (SEC1) or `RSA PRIVATE KEY` (PKCS#1) PEM.
    pub private_key_pem: String,
    pub service: String,
    pub service_uri: String,
    pub valid_after: OffsetDateTime,
    pub valid_before: OffsetDateTime,
    /// Colon hex AuthorityKeyId, equal to the signing root's `SigningKeyID`: a leaf whose value
    /// differs from the active root's must be re-issued (rotation).
    pub authority_key_id: String,
    pub create_index: u64,
    pub modify_index: u64,
}

impl Leaf {
    /// The endpoint's JSON, keys in Consul's `IssuedCert` order. CE omits `Namespace`/`Partition`,
    /// and `Agent`/`AgentURI`/`Kind`/`KindURI`/`ServerURI` are empty (omitted) for services.
    pub fn to_json(&self) -> Value {
        json!({
            "SerialNumber": self.serial_number,
            "CertPEM": self.cert_pem,
            "PrivateKeyPEM": self.private_key_pem,
            "Service": self.service,
            "ServiceURI": self.service_uri,
            "ValidAfter": rfc3339(self.valid_after),
            "ValidBefore": rfc3339(self.valid_before),
            "CreateIndex": self.create_index,
            "ModifyIndex": self.modify_index,
        })
    }
}

/// `spiffe://<td>/ns/default/dc/<dc>/svc/<service>`, escaped as Go's `url.URL.String()` would.
/// An empty name or one with `/` cannot form a service ID and is rejected with Consul's texts.
pub(crate) fn service_uri(trust_domain: &str, dc: &str, service: &str) -> Result<String, CaError> {
    if service.is_empty() {
        return Err(CaError::EmptyService);
    }
    let uri = format!(
        "spiffe://{trust_domain}/ns/default/dc/{}/svc/{}",
        go_path_escape(dc),
        go_path_escape(service)
    );
    if service.contains('/') || dc.contains('/') || dc.is_empty() {
        return Err(CaError::InvalidSpiffeId(uri));
    }
    Ok(uri)
}

/// What to put in a leaf. Real leaves have `uri: Some`, `common_name: None`; forgeries vary it.
pub(crate) struct LeafSpec<'a> {
    pub(crate) uri: Option<&'a str>,
    pub(crate) common_name: Option<&'a str>,
    pub(crate) serial: u64,
    pub(crate) not_before: OffsetDateTime,
    pub(crate) not_after: OffsetDateTime,
}

/// A freshly signed leaf: its new key and its PEM (leaf only, no intermediates).
pub(crate) struct SignedLeaf {
    pub(crate) key: KeyPair,
    pub(crate) pem: String,
}

impl SignedLeaf {
    pub(crate) fn private_key_pem(&self) -> Result<String, CaError> {
        keys::private_key_pem(&self.key)
    }
}

/// Signs a leaf as the consul provider's `Sign` does: subject empty unless `common_name` is
/// given; the URI SAN; KeyUsage DigitalSignature, KeyEncipherment, DataEncipherment,
/// KeyAgreement; EKU ClientAuth + ServerAuth; BasicConstraints CA:false; SKID = SHA-256 of the
/// new key (a fresh key of `kind`); AKID = the issuer's key id. `issuer: None` makes it
/// self-signed.
///
/// rcgen marks the SAN extension critical exactly when the subject is empty, which is Consul's
/// (and RFC 5280's) rule, so real leaves get the critical SAN Consul emits.
pub(crate) fn sign_leaf(
    spec: &LeafSpec<'_>,
    issuer: Option<&Signer>,
    kind: keys::KeyKind,
) -> Result<SignedLeaf, CaError> {
    let key = keys::generate_kind(kind)?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    if let Some(cn) = spec.common_name {
        dn.push(DnType::CommonName, cn);
    }
    params.distinguished_name = dn;
    if let Some(uri) = spec.uri {
        params.subject_alt_names = vec![SanType::URI(uri.try_into()?)];
    }
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::DataEncipherment,
        KeyUsagePurpose::KeyAgreement,
    ];
    // Go writes them in the template's order: ClientAuth, then ServerAuth.
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ClientAuth,
        ExtendedKeyUsagePurpose::ServerAuth,
    ];
    params.key_identifier_method = KeyIdMethod::PreSpecified(key_id(&key));
    params.use_authority_key_identifier_extension = true;
    params.serial_number = Some(SerialNumber::from(spec.serial));
    params.not_before = spec.not_before;
    params.not_after = spec.not_after;
    let cert = match issuer {
        Some(signer) => params.signed_by(&key, &signer.issuer())?,
        None => params.self_signed(&key)?,
    };
    let pem = pem_encode("CERTIFICATE", cert.der());
    Ok(SignedLeaf { key, pem })
}

/// The leaf PEM followed by each intermediate, every block newline-terminated.
pub(crate) fn chain_pem(leaf_pem: &str, intermediates: &[String]) -> String {
    let mut out = leaf_pem.to_owned();
    for pem in intermediates {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(pem);
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_uri_follows_consul_form() {
        let uri = service_uri("abc.consul", "dc1", "web").unwrap();
        assert_eq!(uri, "spiffe://abc.consul/ns/default/dc/dc1/svc/web");
        let escaped = service_uri("abc.consul", "dc1", "my svc").unwrap();
        assert_eq!(
            escaped,
            "spiffe://abc.consul/ns/default/dc/dc1/svc/my%20svc"
        );
    }

    #[test]
    fn service_uri_rejects_what_consul_rejects() {
        assert_eq!(service_uri("td", "dc1", ""), Err(CaError::EmptyService));
        assert_eq!(
            service_uri("td", "dc1", "a/b"),
            Err(CaError::InvalidSpiffeId(
                "spiffe://td/ns/default/dc/dc1/svc/a/b".into()
            ))
        );
        assert!(service_uri("td", "", "web").is_err());
    }

    #[test]
    fn chain_pem_keeps_every_block_newline_terminated() {
        let chain = chain_pem("A\n", &["B\n".to_owned(), "C".to_owned()]);
        assert_eq!(chain, "A\nB\nC\n");
        assert_eq!(chain_pem("A", &[]), "A\n");
    }
}
