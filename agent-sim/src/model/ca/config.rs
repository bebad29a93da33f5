//! The CA configuration table: TTLs and key settings, the `GET /v1/connect/ca/configuration` body,
//! and `PUT` (`Ca::apply_config`) with Consul's decoding, validation and rotation rules.
//!
//! When a PUT rotates (mirrors the consul provider, whose identity is the hash of `PrivateKey`,
//! `RootCert`, `PrivateKeyType`, `PrivateKeyBits`):
//! - the key identity differs from the current one: a new or different `PrivateKey` (the root is
//!   then generated from that key, or adopted as given with `RootCert`), dropping a previously
//!   given one (fresh key), or another `PrivateKeyType`/`PrivateKeyBits` (a fresh root key of
//!   that kind; leaf keys stay EC P-256, as Consul's agent generates them);
//! - the simulator-only key `"RotateRoot": true` (weakly typed like the rest) rotates on every
//!   PUT that carries it and is not stored, so the same body can rotate again; real Consul
//!   ignores the key (it is not part of the provider's identity);
//! - otherwise only the stored config (and with it the TTLs) changes, and a PUT whose Config is
//!   identical to the stored one changes nothing at all (Consul's no-op check).
//!
//! Cross-signing happens unless `ForceWithoutCrossSigning` is set; if the current config has
//! `DisableCrossSigning` (Consul's test-only switch) a rotation without `ForceWithoutCrossSigning`
//! fails with Consul's error.
//!
//! Deviations from Consul, all deliberate: `LeafCertTTL` may be as short as 1s (Consul: 1h) so
//! the harness can watch renewals; `RootCertTTL` must be at least 1s; EC 224/521 keys (valid in
//! Consul) are refused (ring cannot sign with them); P-384 CAs sign with SHA-384 (Consul: SHA-256).

use std::time::Duration;

use rand::Rng;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;

use super::config_decode::{ProviderConfig, decode_request};
use super::keys::KeyKind;
use super::rotation::NewRoot;
use super::{Ca, CaConfig, CaError};
use crate::go::duration::GoDuration;

/// The shortest leaf TTL the simulator accepts (Consul: 1h).
pub(crate) const MIN_LEAF_TTL: Duration = Duration::from_secs(1);
/// Consul's `MaxLeafCertTTL` (365 days).
const MAX_LEAF_TTL: Duration = Duration::from_secs(365 * 24 * 3600);
/// Consul's `3 * IntermediateCertRenewInterval`.
const MIN_INTERMEDIATE_TTL: Duration = Duration::from_secs(3 * 3600);
/// The sim-only config key that forces a rotation.
const ROTATE_ROOT_KEY: &str = "RotateRoot";

/// What a successful `apply_config` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigOutcome {
    /// A new root became active (the roots table changed at the given index).
    pub rotated: bool,
    /// The config table changed at the given index (false for Consul's no-op PUT).
    pub changed: bool,
}

/// The consul provider's key identity: a change means a new root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyIdentity {
    pub(crate) private_key: String,
    pub(crate) root_cert: String,
    pub(crate) key_type: String,
    pub(crate) key_bits: i64,
}

/// The stored CA configuration.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) leaf_ttl: Duration,
    pub(crate) root_ttl: Duration,
    pub(crate) intermediate_ttl: Duration,
    pub(crate) identity: KeyIdentity,
    pub(crate) disable_cross_signing: bool,
    pub(crate) force_without_cross_signing: bool,
    /// `CSRMaxPerSecond` (0: unlimited; Consul's `GetCommonConfig` has no default for it).
    pub(crate) csr_max_per_second: f64,
    /// The `Config` map as last set; `GET` echoes it (Consul stores the map it was given).
    pub(crate) raw: Map<String, Value>,
    pub(crate) create_index: u64,
    pub(crate) modify_index: u64,
}

impl Settings {
    /// The bootstrap config, as `RuntimeConfig.ConnectCAConfiguration` seeds it: exactly the
    /// three TTLs (strings, `structs.DefaultLeafCertTTL` etc.) and `State` null (the consul
    /// provider's `State()` is nil). The key settings appear only when they differ from the
    /// provider's defaults (ec/256), as an operator's `connect.ca_config { private_key_type,
    /// private_key_bits }` would add them (a string and an int).
    pub(crate) fn initial(cfg: &CaConfig, index: u64) -> Self {
        let mut raw = Map::new();
        raw.insert(
            "IntermediateCertTTL".into(),
            json!(compact_duration(cfg.intermediate_ttl)),
        );
        raw.insert("LeafCertTTL".into(), json!(compact_duration(cfg.leaf_ttl)));
        if cfg.key_kind != KeyKind::default() {
            raw.insert("PrivateKeyBits".into(), json!(cfg.key_kind.bits()));
            raw.insert("PrivateKeyType".into(), json!(cfg.key_kind.key_type()));
        }
        raw.insert("RootCertTTL".into(), json!(compact_duration(cfg.root_ttl)));
        Self {
            leaf_ttl: cfg.leaf_ttl,
            root_ttl: cfg.root_ttl,
            intermediate_ttl: cfg.intermediate_ttl,
            identity: KeyIdentity {
                private_key: String::new(),
                root_cert: String::new(),
                key_type: cfg.key_kind.key_type().into(),
                key_bits: i64::from(cfg.key_kind.bits()),
            },
            disable_cross_signing: false,
            force_without_cross_signing: false,
            csr_max_per_second: 0.0,
            raw,
            create_index: index,
            modify_index: index,
        }
    }

    /// The kind of key roots and intermediates get: the configured
    /// `PrivateKeyType`/`PrivateKeyBits`.
    pub(crate) fn ca_kind(&self) -> KeyKind {
        KeyKind::from_config(&self.identity.key_type, self.identity.key_bits).unwrap_or_default()
    }

    /// The kind of key leaves get: always EC P-256, whatever the CA's kind. Consul's agent
    /// generates the leaf key itself (`agent/leafcert/generate.go` calls
    /// `connect.GeneratePrivateKey()`, "for now we always generate EC keys on clients regardless
    /// of the key type being used by the active CA") and the CA signs the CSR with its own key.
    pub(crate) fn leaf_kind(&self) -> KeyKind {
        KeyKind::Ec256
    }

    /// Records another key kind (`PrivateKeyType`/`PrivateKeyBits`), as a PUT of them would.
    pub(crate) fn set_key_kind(&mut self, kind: KeyKind) {
        self.identity.key_type = kind.key_type().into();
        self.identity.key_bits = i64::from(kind.bits());
        self.raw
            .insert("PrivateKeyType".into(), json!(kind.key_type()));
        self.raw.insert("PrivateKeyBits".into(), json!(kind.bits()));
    }

    /// Sets the leaf TTL (clamped to at least 1s) and the `LeafCertTTL` the config reports.
    pub(crate) fn set_leaf_ttl(&mut self, ttl: Duration) {
        self.leaf_ttl = ttl.max(MIN_LEAF_TTL);
        self.raw
            .insert("LeafCertTTL".into(), json!(compact_duration(self.leaf_ttl)));
    }
}

/// A duration as an operator would write it: `72h`, `90m`, `30s`, else Go's `String()`.
pub(crate) fn compact_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if d.subsec_nanos() != 0 || secs == 0 {
        return GoDuration::from_std(d).to_string();
    }
    if secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

// === impl Ca ===

impl Ca {
    /// The `GET /v1/connect/ca/configuration` body:
    /// `{"Provider","Config","State","ForceWithoutCrossSigning","CreateIndex","ModifyIndex"}`.
    /// `ClusterID` is `json:"-"`. `Config` keys come out sorted (Go marshals maps sorted) and a
    /// set `PrivateKey` reads `"hidden"`, as Consul's `fixupConfig` does.
    pub fn config_json(&self) -> Value {
        let mut keys: Vec<&String> = self.settings.raw.keys().collect();
        keys.sort();
        let mut config = Map::new();
        for key in keys {
            let value = &self.settings.raw[key.as_str()];
            let shown = match value {
                Value::String(s) if key.as_str() == "PrivateKey" && !s.is_empty() => {
                    json!("hidden")
                }
                other => other.clone(),
            };
            config.insert(key.clone(), shown);
        }
        json!({
            "Provider": "consul",
            "Config": config,
            "State": null,
            "ForceWithoutCrossSigning": self.settings.force_without_cross_signing,
            "CreateIndex": self.settings.create_index,
            "ModifyIndex": self.settings.modify_index,
        })
    }

    /// `PUT /v1/connect/ca/configuration` with body
    /// `{"Provider":"consul","Config":{..},"ForceWithoutCrossSigning":bool}`. See the module docs
    /// for when it rotates. Nothing changes when it fails. `CaError::Decode` maps to HTTP 400,
    /// every other error to 500 with the error's text (see `CaError::http_status`).
    pub fn apply_config(
        &mut self,
        body: &Value,
        now: OffsetDateTime,
        index: u64,
        rng: &mut impl Rng,
    ) -> Result<ConfigOutcome, CaError> {
        let request = decode_request(body)?;
        if request.state_given {
            return Err(CaError::StateReadOnly);
        }
        let mut config = request.config;
        let rotate_requested = match config.remove(ROTATE_ROOT_KEY) {
            Some(v) => super::config_decode::weak_bool(ROTATE_ROOT_KEY, &v)
                .map_err(|e| CaError::InvalidConfig(decoding_error(vec![e])))?,
            None => false,
        };
        if request.provider == "consul" && !rotate_requested && config == self.settings.raw {
            return Ok(ConfigOutcome {
                rotated: false,
                changed: false,
            });
        }
        match request.provider.as_str() {
            "consul" => {}
            "vault" | "aws-pca" => return Err(CaError::UnsupportedProvider(request.provider)),
            _ => return Err(CaError::UnknownProvider(request.provider)),
        }
        let parsed = ProviderConfig::decode(&config)
            .map_err(|errors| CaError::InvalidConfig(decoding_error(errors)))?;
        validate(&parsed)?;
        let identity = KeyIdentity {
            private_key: parsed.private_key.clone(),
            root_cert: parsed.root_cert.clone(),
            key_type: parsed.key_type.clone(),
            key_bits: parsed.key_bits,
        };
        let rotate = rotate_requested || identity != self.settings.identity;
        if rotate {
            let cross_sign = if request.force_without_cross_signing {
                false
            } else if self.settings.disable_cross_signing {
                return Err(CaError::CrossSigningUnsupported);
            } else {
                true
            };
            let kind = KeyKind::from_config(&parsed.key_type, parsed.key_bits).unwrap_or_default();
            let key = if parsed.private_key.is_empty() {
                super::keys::generate_kind(kind)?
            } else if parsed.root_cert.is_empty() {
                // Consul parses the key only to generate the root (`generateCA`).
                import_key_for_new_root(&parsed.private_key)?
            } else {
                // Consul checks the certificate's PEM first (`newCARoot`), and never parses
                // the key at this point: a bad key with a cert is a sim-only refusal.
                check_root_cert_pem(&parsed.root_cert)?;
                super::keys::import_pem(&parsed.private_key)?
            };
            let root_cert = (!parsed.root_cert.is_empty()).then_some(parsed.root_cert.as_str());
            self.rotate_to(
                NewRoot { key, root_cert },
                parsed.root_ttl,
                cross_sign,
                now,
                index,
                rng,
            )?;
        }
        let settings = &mut self.settings;
        settings.leaf_ttl = parsed.leaf_ttl;
        settings.root_ttl = parsed.root_ttl;
        settings.intermediate_ttl = parsed.intermediate_ttl;
        settings.identity = identity;
        settings.disable_cross_signing = parsed.disable_cross_signing;
        settings.csr_max_per_second = parsed.csr_max_per_second;
        settings.force_without_cross_signing = request.force_without_cross_signing;
        settings.raw = config;
        settings.modify_index = index;
        Ok(ConfigOutcome {
            rotated: rotate,
            changed: true,
        })
    }
}

impl Ca {
    /// Takes a `CSRMaxPerSecond` token for one leaf signing at `now` (see `csr_limit.rs`);
    /// `CaError::RateLimited` when none is available within Consul's 500 ms wait.
    pub(crate) fn take_csr_token(&mut self, now: OffsetDateTime) -> Result<(), CaError> {
        if self.csr_limiter.take(self.settings.csr_max_per_second, now) {
            Ok(())
        } else {
            Err(CaError::RateLimited)
        }
    }
}

/// The PEM label of the first block (`pem.Decode`), if any.
fn first_pem_label(pem: &str) -> Option<&str> {
    let start = pem.find("-----BEGIN ")? + "-----BEGIN ".len();
    let rest = &pem[start..];
    let end = rest.find("-----")?;
    let label = &rest[..end];
    rest[end..]
        .contains(&format!("-----END {label}-----"))
        .then_some(label)
}

/// `connect.ParseCert`'s texts for a `RootCert` (returned unwrapped by `primaryUpdateRootCA`).
fn check_root_cert_pem(pem: &str) -> Result<(), CaError> {
    match first_pem_label(pem) {
        None => Err(CaError::Provider("no PEM-encoded data found".into())),
        Some("CERTIFICATE") => Ok(()),
        Some(_) => Err(CaError::Provider(
            "first PEM-block should be CERTIFICATE type".into(),
        )),
    }
}

/// A `PrivateKey` without `RootCert`: `connect.ParseSigner`'s texts, wrapped as
/// `primaryUpdateRootCA` and `GenerateCAChain` wrap them.
fn import_key_for_new_root(pem: &str) -> Result<rcgen::KeyPair, CaError> {
    let wrap = |inner: String| {
        CaError::Provider(format!(
            "error generating CA root certificate: error generating CA: {inner}"
        ))
    };
    match first_pem_label(pem) {
        None => return Err(wrap("no PEM-encoded data found".into())),
        Some("EC PRIVATE KEY" | "RSA PRIVATE KEY" | "PRIVATE KEY") => {}
        Some(other) => {
            return Err(wrap(format!(
                "unknown PEM block type for signing key: {other}"
            )));
        }
    }
    super::keys::import_pem(pem)
}

/// mapstructure's multi-error text, wrapped as `ParseConsulCAConfig` wraps it.
fn decoding_error(mut errors: Vec<String>) -> String {
    errors.sort();
    let points: Vec<String> = errors.iter().map(|e| format!("* {e}")).collect();
    format!(
        "error decoding config: {} error(s) decoding:\n\n{}",
        errors.len(),
        points.join("\n")
    )
}

/// `ParseConsulCAConfig` + `CommonCAProviderConfig.Validate`, in Consul's order, plus the
/// simulator's own limits (which `SkipValidate` does not lift).
fn validate(cfg: &ProviderConfig) -> Result<(), CaError> {
    let invalid = |msg: String| Err(CaError::InvalidConfig(msg));
    if cfg.private_key.is_empty() && !cfg.root_cert.is_empty() {
        return invalid("must provide a private key when providing a root cert".into());
    }
    if !cfg.skip_validate {
        if cfg.leaf_ttl < MIN_LEAF_TTL {
            return invalid(format!(
                "leaf cert TTL must be greater or equal than {}",
                GoDuration::from_std(MIN_LEAF_TTL)
            ));
        }
        if cfg.leaf_ttl > MAX_LEAF_TTL {
            return invalid(format!(
                "leaf cert TTL must be less than {}",
                GoDuration::from_std(MAX_LEAF_TTL)
            ));
        }
        if cfg.intermediate_ttl < MIN_INTERMEDIATE_TTL {
            return invalid("Intermediate Cert TTL must be greater or equal than 3h".into());
        }
        let three_leaves = cfg.leaf_ttl.saturating_mul(3);
        if cfg.intermediate_ttl < three_leaves {
            return invalid(format!(
                "Intermediate Cert TTL must be greater or equal than 3 * LeafCertTTL (>={}).",
                GoDuration::from_std(three_leaves)
            ));
        }
        match (cfg.key_type.as_str(), cfg.key_bits) {
            ("ec", 224 | 256 | 384 | 521) | ("rsa", 2048 | 4096) => {}
            ("ec", _) => {
                return invalid("EC key length must be one of (224, 256, 384, 521) bits".into());
            }
            ("rsa", _) => return invalid("RSA key length must be 2048 or 4096 bits".into()),
            _ => return invalid("private key type must be either 'ec' or 'rsa'".into()),
        }
    }
    if KeyKind::from_config(&cfg.key_type, cfg.key_bits).is_none() {
        return Err(CaError::UnsupportedKey(format!(
            "PrivateKeyType {:?} with PrivateKeyBits {}",
            cfg.key_type, cfg.key_bits
        )));
    }
    if cfg.leaf_ttl < MIN_LEAF_TTL {
        return invalid(format!(
            "leaf cert TTL must be greater or equal than {}",
            GoDuration::from_std(MIN_LEAF_TTL)
        ));
    }
    if cfg.root_ttl < Duration::from_secs(1) {
        return invalid("root cert TTL must be at least 1s".into());
    }
    Ok(())
}
