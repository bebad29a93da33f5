//! Client identities for the conformance harness: real leaves as ready-to-use TLS material, and
//! deliberately wrong certificates (`Forgery`) that a correct proxy must reject, or must accept
//! but authorize by the right name.

use time::OffsetDateTime;

use super::encoding::{cert_time, go_path_escape, sha256};
use super::leaf::{LeafSpec, chain_pem, service_uri, sign_leaf};
use super::root::Root;
use super::{Ca, CaError};

/// TLS client material: the chain to present and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The URI SAN the leaf carries, if any.
    pub uri: Option<String>,
    /// Leaf PEM first, then the active root's intermediates (the cross-signed root after a
    /// rotation; the leaf-signing intermediate(s) in chain mode).
    pub cert_chain_pem: String,
    /// `EC PRIVATE KEY` (SEC1) or `RSA PRIVATE KEY` (PKCS#1) PEM, of the configured key kind.
    pub private_key_pem: String,
}

/// A certificate built to probe a proxy's verification. In JSON (control API):
/// `{"Kind":"expired","Service":"web"}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(
    tag = "Kind",
    rename_all = "kebab-case",
    rename_all_fields = "PascalCase",
    deny_unknown_fields
)]
pub enum Forgery {
    /// Leaf for `service` from a completely separate CA (another cluster id / trust domain) that
    /// is not in Roots. Presented without its CA.
    UntrustedCa { service: String },
    /// Leaf signed by the trusted active root but naming a foreign trust domain
    /// (`spiffe://<other-uuid>.consul/ns/default/dc/<dc>/svc/<service>`).
    ForeignTrustDomain { service: String },
    /// Leaf signed by the trusted active root whose validity ended in the past (valid from
    /// now − 1 h − 1 min to now − 1 min).
    Expired { service: String },
    /// Signed by the trusted root, no URI SAN at all, Subject CN = `common_name`.
    NoSpiffe { common_name: String },
    /// Signed by the trusted root, SPIFFE *agent* ID `spiffe://<td>/agent/client/dc/<dc>/id/<node>`.
    AgentId { node: String },
    /// Signed by the trusted root: Subject CN = `common_name` but the URI SAN names `service`
    /// (catches proxies that authorize by CN instead of the URI SAN).
    CommonNameMismatch {
        common_name: String,
        service: String,
    },
    /// A self-signed leaf (no CA) naming `service` in the trusted trust domain.
    SelfSigned { service: String },
}

impl Ca {
    /// A real leaf for `service` as client material; counts as an issuance (serial counter).
    pub fn issue_identity(
        &mut self,
        service: &str,
        dc: &str,
        now: OffsetDateTime,
        index: u64,
    ) -> Result<ClientIdentity, CaError> {
        let leaf = self.issue_leaf(service, dc, now, index)?;
        Ok(ClientIdentity {
            uri: Some(leaf.service_uri),
            cert_chain_pem: leaf.cert_pem,
            private_key_pem: leaf.private_key_pem,
        })
    }

    /// Builds the forged identity `what`. Leaves signed by the trusted root carry the active
    /// root's intermediates like a real leaf, so only the forged property differs. Forgeries do
    /// not use the shared serial counter (their serials are derived from the request).
    pub fn forge(&self, what: &Forgery, now: OffsetDateTime) -> Result<ClientIdentity, CaError> {
        let now = cert_time(now);
        let active = self.active_root()?;
        let dc = self.datacenter.as_str();
        let minute = time::Duration::minutes(1);
        // Valid like a real leaf issued now (same backdate and TTL), except for `Expired`.
        let valid_from = now - self.leaf_backdate();
        let valid_to = super::encoding::checked_add(valid_from, self.settings.leaf_ttl)
            .ok_or_else(|| CaError::InvalidTtl("leaf TTL is too large".into()))?;
        let (uri, common_name, signer, not_before, not_after): (_, Option<&str>, _, _, _) =
            match what {
                Forgery::UntrustedCa { service } => (
                    Some(service_uri(&self.untrusted.trust_domain, dc, service)?),
                    None,
                    Some(&self.untrusted.root),
                    valid_from,
                    valid_to,
                ),
                Forgery::ForeignTrustDomain { service } => (
                    Some(service_uri(&self.foreign_trust_domain, dc, service)?),
                    None,
                    Some(active),
                    valid_from,
                    valid_to,
                ),
                Forgery::Expired { service } => (
                    Some(service_uri(&self.trust_domain, dc, service)?),
                    None,
                    Some(active),
                    now - time::Duration::hours(1) - minute,
                    now - minute,
                ),
                Forgery::NoSpiffe { common_name } => (
                    None,
                    Some(common_name.as_str()),
                    Some(active),
                    valid_from,
                    valid_to,
                ),
                Forgery::AgentId { node } => (
                    Some(format!(
                        "spiffe://{}/agent/client/dc/{}/id/{}",
                        self.trust_domain,
                        go_path_escape(dc),
                        go_path_escape(node)
                    )),
                    None,
                    Some(active),
                    valid_from,
                    valid_to,
                ),
                Forgery::CommonNameMismatch {
                    common_name,
                    service,
                } => (
                    Some(service_uri(&self.trust_domain, dc, service)?),
                    Some(common_name.as_str()),
                    Some(active),
                    valid_from,
                    valid_to,
                ),
                Forgery::SelfSigned { service } => (
                    Some(service_uri(&self.trust_domain, dc, service)?),
                    None,
                    None,
                    valid_from,
                    valid_to,
                ),
            };
        let spec = LeafSpec {
            uri: uri.as_deref(),
            common_name,
            serial: forged_serial(what, now),
            not_before,
            not_after,
        };
        let signed = sign_leaf(
            &spec,
            signer.map(|r: &Root| r.leaf_signer()),
            self.settings.leaf_kind(),
        )?;
        // Only leaves of the trusted active root get its intermediates.
        let intermediates: &[String] = match signer {
            Some(root) if std::ptr::eq(root, active) => &root.intermediates,
            _ => &[],
        };
        Ok(ClientIdentity {
            uri,
            cert_chain_pem: chain_pem(&signed.pem, intermediates),
            private_key_pem: signed.private_key_pem()?,
        })
    }
}

/// A deterministic serial for a forgery (not from the shared counter): the first 8 bytes of
/// SHA-256 over the request, top bit cleared, never zero.
fn forged_serial(what: &Forgery, now: OffsetDateTime) -> u64 {
    let digest = sha256(format!("{what:?}@{}", now.unix_timestamp()).as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(bytes) & 0x7fff_ffff_ffff_ffff).max(1)
}
