//! agent-sim's built-in Connect CA: a pure, synchronous state machine holding the roots table,
//! the CA configuration and the shared serial counter, and issuing leaves the way Consul's
//! built-in ("consul") provider does. Time, the raft index and randomness for names come from
//! the caller; keys come from ring.
//!
//! Wire shapes follow `consul-agent-api.md` §1, §2 and §12: `roots_json` is the roots endpoints'
//! body, `Leaf::to_json` the leaf endpoint's, `config_json` / `apply_config` the CA configuration
//! endpoint's.

mod config;
mod config_decode;
mod csr_limit;
mod encoding;
mod forge;
mod intermediate;
mod keys;
mod leaf;
mod root;
mod rotation;
#[cfg(test)]
mod tests;

use std::time::Duration;

use rand::Rng;
use serde_json::{Value, json};
use time::OffsetDateTime;

pub use self::config::ConfigOutcome;
pub use self::forge::{ClientIdentity, Forgery};
pub use self::keys::KeyKind;
pub use self::leaf::Leaf;

use self::config::{MIN_LEAF_TTL, Settings};
use self::encoding::{base36_uid, cert_time, checked_add, colon_hex, random_uuid, serial_hex};
use self::leaf::{LeafSpec, chain_pem, service_uri, sign_leaf};
use self::root::{Root, RootSpec, generate_root};

/// Bootstrap settings of the CA (what Consul reads from agent config at CA initialisation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaConfig {
    /// A UUID; the trust domain is `<cluster_id>.consul`, lowercase.
    pub cluster_id: String,
    /// The datacenter leaves are issued for (`dc1`).
    pub datacenter: String,
    /// Leaf lifetime; default 72h. Anything from 1s up is accepted (Consul: 1h..8760h).
    pub leaf_ttl: Duration,
    /// Root lifetime; default 87600h.
    pub root_ttl: Duration,
    /// Lifetime of the intermediate in chain mode (else reported in the configuration only, as
    /// the built-in provider signs leaves with the root); default 8760h.
    pub intermediate_ttl: Duration,
    /// The CA's key kind (`PrivateKeyType`/`PrivateKeyBits`), for roots and leaves; default EC
    /// P-256.
    pub key_kind: KeyKind,
    /// Simulator-only chain mode (as with Vault or in a secondary datacenter): leaves are
    /// signed by an intermediate CA, listed in the root's `IntermediateCerts`.
    pub intermediate: bool,
    /// Whether roots and intermediates carry the `spiffe://<trust domain>` URI SAN (Consul's
    /// providers always do). `false`: a CA that bends SPIFFE, as some external providers issue
    /// them (the integration guide: "CA certificates may not have the correct trust-domain
    /// SPIFFE URI SAN"); leaves still carry their SPIFFE ID.
    pub spiffe_ca_san: bool,
}

impl Default for CaConfig {
    /// `dc1`, a fresh random cluster id, and Consul's default TTLs.
    fn default() -> Self {
        Self {
            cluster_id: uuid::Uuid::new_v4().to_string(),
            datacenter: "dc1".into(),
            leaf_ttl: Duration::from_secs(72 * 3600),
            root_ttl: Duration::from_secs(87600 * 3600),
            intermediate_ttl: Duration::from_secs(8760 * 3600),
            key_kind: KeyKind::Ec256,
            intermediate: false,
            spiffe_ca_san: true,
        }
    }
}

/// Everything the CA can refuse. The `Display` text is the body Consul sends for the same
/// failure where there is one (see `http_status`); simulator-only limits say so.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaError {
    /// `CaConfig::cluster_id` is not a UUID.
    #[error("invalid cluster id {0:?}: must be a UUID")]
    InvalidClusterId(String),
    /// `CaConfig::datacenter` is empty or contains `/`.
    #[error("invalid datacenter {0:?}")]
    InvalidDatacenter(String),
    /// A TTL outside what the simulator can represent (below 1s, or past year 9999).
    #[error("invalid TTL: {0}")]
    InvalidTtl(String),
    /// Leaf requested for an empty service name.
    #[error("URI must be either service, agent, server, or kind")]
    EmptyService,
    /// The name cannot form a SPIFFE service ID (e.g. it contains `/`).
    #[error("SPIFFE ID is not in the expected format: {0}")]
    InvalidSpiffeId(String),
    /// Leaf requested for another datacenter.
    #[error("SPIFFE ID in CSR from a different datacenter: {requested}, we are {ours}")]
    WrongDatacenter { requested: String, ours: String },
    /// No active root (cannot happen after `Ca::new`; kept for a faithful error text).
    #[error("cluster has no CA bootstrapped yet")]
    NoActiveRoot,
    /// The configuration PUT body has the wrong JSON types (HTTP 400).
    #[error("Request decode failed: {0}")]
    Decode(String),
    /// A provider name Consul does not know.
    #[error("could not initialize provider: unknown CA provider {0:?}")]
    UnknownProvider(String),
    /// `vault` / `aws-pca`: real providers the simulator does not run.
    #[error(
        "could not initialize provider: the simulator only runs the \"consul\" CA provider, not {0:?}"
    )]
    UnsupportedProvider(String),
    /// An error Consul's CA manager returns without a prefix (e.g. `connect.ParseCert`'s
    /// `no PEM-encoded data found` for a bad `RootCert`).
    #[error("{0}")]
    Provider(String),
    /// The provider config failed decoding or validation (Consul's texts after the prefix).
    #[error("error configuring provider: {0}")]
    InvalidConfig(String),
    /// A CA key Consul accepts but the simulator cannot sign with (EC 224/521, other RSA sizes).
    #[error(
        "error configuring provider: the simulator supports EC 256/384 and RSA 2048/4096 CA keys, not {0}"
    )]
    UnsupportedKey(String),
    /// A non-empty `State` in the PUT body.
    #[error("CA Provider State is read-only")]
    StateReadOnly,
    /// Rotation while the current config has `DisableCrossSigning` and no
    /// `ForceWithoutCrossSigning`.
    #[error(
        "The current CA Provider does not support cross-signing. You can try again with ForceWithoutCrossSigningSet but this may cause disruption - see documentation for more."
    )]
    CrossSigningUnsupported,
    /// Certificate or key generation failed.
    #[error("certificate generation failed: {0}")]
    Crypto(String),
    /// `CSRMaxPerSecond` exceeded (`ErrRateLimited`; the HTTP layer answers 429).
    #[error("Rate limit reached, try again later")]
    RateLimited,
}

impl CaError {
    /// The HTTP status Consul answers with: 400 for body decode errors, 500 for everything else
    /// (server-side CA errors reach the client as plain-text 500s).
    pub fn http_status(&self) -> u16 {
        match self {
            Self::Decode(_) => 400,
            Self::RateLimited => 429,
            _ => 500,
        }
    }
}

impl From<rcgen::Error> for CaError {
    fn from(e: rcgen::Error) -> Self {
        Self::Crypto(e.to_string())
    }
}

/// The CA that signs `Forgery::UntrustedCa` leaves: never in the roots table.
#[derive(Debug, Clone)]
struct UntrustedCa {
    trust_domain: String,
    root: Root,
}

/// The built-in CA's state. Cloning is cheap (keys are shared) and gives an independent
/// snapshot.
#[derive(Debug, Clone)]
pub struct Ca {
    cluster_id: String,
    trust_domain: String,
    datacenter: String,
    settings: Settings,
    /// In creation order; `roots_json` lists them in ID order as Consul's table does.
    roots: Vec<Root>,
    roots_index: u64,
    /// The provider's serial counter, shared by roots, cross-signed certs and leaves.
    next_serial: u64,
    untrusted: UntrustedCa,
    foreign_trust_domain: String,
    /// Chain mode (simulator-only): every new root gets an intermediate that signs leaves.
    chain: bool,
    /// Roots and intermediates carry the trust domain's URI SAN (`CaConfig::spiffe_ca_san`).
    spiffe_ca_san: bool,
    /// `CSRMaxPerSecond` on leaf signing.
    csr_limiter: csr_limit::CsrLimiter,
}

impl Ca {
    /// Bootstraps the CA at raft index `index`: the configuration and the first root (serial 1)
    /// are written at `index`. `rng` picks the root's name and the forgery CAs' identities.
    pub fn new(
        cfg: CaConfig,
        now: OffsetDateTime,
        index: u64,
        rng: &mut impl Rng,
    ) -> Result<Self, CaError> {
        let cluster_id = uuid::Uuid::parse_str(&cfg.cluster_id)
            .map_err(|_| CaError::InvalidClusterId(cfg.cluster_id.clone()))?
            .hyphenated()
            .to_string();
        if cfg.datacenter.is_empty() || cfg.datacenter.contains('/') {
            return Err(CaError::InvalidDatacenter(cfg.datacenter));
        }
        if cfg.leaf_ttl < MIN_LEAF_TTL || cfg.root_ttl < Duration::from_secs(1) {
            return Err(CaError::InvalidTtl(
                "leaf and root TTLs must be at least 1s".into(),
            ));
        }
        let now = cert_time(now);
        let trust_domain = format!("{cluster_id}.consul");
        let root = generate_root(
            keys::generate_kind(cfg.key_kind)?,
            &RootSpec {
                trust_domain: cfg.spiffe_ca_san.then_some(trust_domain.as_str()),
                cluster_id: &cluster_id,
                uid: &base36_uid(rng),
                serial: 1,
                now,
                ttl: cfg.root_ttl,
                index,
            },
        )?;
        let untrusted_id = random_uuid(rng);
        let untrusted_td = format!("{untrusted_id}.consul");
        let untrusted_root = generate_root(
            keys::generate()?,
            &RootSpec {
                trust_domain: Some(&untrusted_td),
                cluster_id: &untrusted_id,
                uid: &base36_uid(rng),
                serial: 1,
                now,
                ttl: cfg.root_ttl,
                index,
            },
        )?;
        let mut ca = Self {
            settings: Settings::initial(&cfg, index),
            datacenter: cfg.datacenter,
            cluster_id,
            trust_domain,
            roots: vec![root],
            roots_index: index,
            next_serial: 2,
            untrusted: UntrustedCa {
                trust_domain: untrusted_td,
                root: untrusted_root,
            },
            foreign_trust_domain: format!("{}.consul", random_uuid(rng)),
            chain: cfg.intermediate,
            spiffe_ca_san: cfg.spiffe_ca_san,
            csr_limiter: csr_limit::CsrLimiter::default(),
        };
        if ca.chain {
            ca.attach_intermediate(0, now, rng)?;
        }
        Ok(ca)
    }

    /// `<cluster id>.consul`.
    pub fn trust_domain(&self) -> &str {
        &self.trust_domain
    }

    /// The trust domain new roots and intermediates name in their URI SAN; `None` when the CA
    /// bends SPIFFE (`CaConfig::spiffe_ca_san` off).
    pub(crate) fn ca_san_trust_domain(&self) -> Option<&str> {
        self.spiffe_ca_san.then_some(self.trust_domain.as_str())
    }

    /// The cluster id (lowercase, hyphenated UUID).
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// The datacenter leaves are issued for.
    pub fn datacenter(&self) -> &str {
        &self.datacenter
    }

    /// The TTL of newly issued leaves.
    pub fn leaf_ttl(&self) -> Duration {
        self.settings.leaf_ttl
    }

    /// Changes the leaf TTL (clamped to at least 1s) and the `LeafCertTTL` the configuration
    /// reports. The configuration's indexes are left alone: this is the operator's flag, not a
    /// PUT.
    pub fn set_leaf_ttl(&mut self, ttl: Duration) {
        self.settings.set_leaf_ttl(ttl);
    }

    /// Raft index at which the roots table last changed (creation, rotation, pruning).
    pub fn roots_index(&self) -> u64 {
        self.roots_index
    }

    /// The exact body of `GET /v1/agent/connect/ca/roots` (and `/v1/connect/ca/roots`):
    /// `{"ActiveRootID","TrustDomain","Roots":[CARoot...]}`, roots in ID order (the order of
    /// Consul's memdb table, not of creation).
    pub fn roots_json(&self) -> Value {
        let mut roots: Vec<&Root> = self.roots.iter().collect();
        roots.sort_by(|a, b| a.id.cmp(&b.id));
        let active_id = self.active_root().map(|r| r.id.clone()).unwrap_or_default();
        let list: Vec<Value> = roots.iter().map(|r| r.to_json(&self.cluster_id)).collect();
        json!({
            "ActiveRootID": active_id,
            "TrustDomain": self.trust_domain,
            "Roots": list,
        })
    }

    /// Colon-hex SubjectKeyId of the active root (a leaf whose AKID differs is stale).
    pub fn active_signing_key_id(&self) -> String {
        self.active_root()
            .map(|r| colon_hex(&r.signing_key_id))
            .unwrap_or_default()
    }

    /// Every root certificate PEM currently in the roots table (a trust bundle).
    pub fn root_certs_pem(&self) -> Vec<String> {
        self.roots.iter().map(|r| r.cert_pem.clone()).collect()
    }

    /// The certificate of the CA behind `Forgery::UntrustedCa` (never in the roots table), for
    /// harness peers that should be untrusted as servers too.
    pub fn untrusted_root_pem(&self) -> &str {
        &self.untrusted.root.cert_pem
    }

    /// How far a leaf's NotBefore is backdated. Consul backdates by 1 min; for the sim's short
    /// TTLs that would leave a leaf born nearly expired, so the backdate is capped at a tenth of
    /// the TTL in whole seconds (identical to Consul for TTL >= 10 min). Forged leaves use it too,
    /// so only their forged property differs from a real leaf.
    pub(crate) fn leaf_backdate(&self) -> time::Duration {
        let tenth = i64::try_from(self.settings.leaf_ttl.as_secs() / 10).unwrap_or(60);
        time::Duration::minutes(1).min(time::Duration::seconds(tenth))
    }

    /// Issues a fresh leaf for `service` in `dc` (empty = this CA's datacenter): a new key of the
    /// configured `PrivateKeyType`/`PrivateKeyBits` (Consul's agent generates the leaf key from
    /// the CA config), signed by the active root (or its intermediate in chain mode), serial from the shared counter, valid from now minus
    /// `leaf_backdate()` for the leaf TTL. `index` is the raft index of this issuance.
    pub fn issue_leaf(
        &mut self,
        service: &str,
        dc: &str,
        now: OffsetDateTime,
        index: u64,
    ) -> Result<Leaf, CaError> {
        if !dc.is_empty() && dc != self.datacenter {
            return Err(CaError::WrongDatacenter {
                requested: dc.to_owned(),
                ours: self.datacenter.clone(),
            });
        }
        let uri = service_uri(&self.trust_domain, &self.datacenter, service)?;
        let not_before = cert_time(now) - self.leaf_backdate();
        let not_after = checked_add(not_before, self.settings.leaf_ttl)
            .ok_or_else(|| CaError::InvalidTtl("leaf TTL is too large".into()))?;
        let serial = self.next_serial;
        let root = self.active_root()?;
        let spec = LeafSpec {
            uri: Some(&uri),
            common_name: None,
            serial,
            not_before,
            not_after,
        };
        let signed = sign_leaf(&spec, Some(root.leaf_signer()), self.settings.leaf_kind())?;
        let leaf = Leaf {
            serial_number: serial_hex(serial),
            cert_pem: chain_pem(&signed.pem, &root.intermediates),
            private_key_pem: signed.private_key_pem()?,
            service: service.to_owned(),
            service_uri: uri,
            valid_after: not_before,
            valid_before: not_after,
            authority_key_id: colon_hex(&root.signing_key_id),
            create_index: index,
            modify_index: index,
        };
        self.next_serial += 1;
        Ok(leaf)
    }

    fn active_root(&self) -> Result<&Root, CaError> {
        self.roots
            .iter()
            .find(|r| r.active)
            .ok_or(CaError::NoActiveRoot)
    }
}
