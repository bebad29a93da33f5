//! Config entries as the simulated server stores them: the eight kinds a sidecar cares about
//! (`service-intentions`, `service-defaults`, `proxy-defaults`, `service-resolver`,
//! `service-splitter`, `service-router`, `mesh`, `jwt-provider`), decoding of `PUT /v1/config` bodies with mapstructure
//! semantics, normalization and validation with Consul's texts, and the read shape of
//! `GET /v1/config/:kind/:name`. Pure and synchronous: the raft index is passed in.

mod common;
mod graph;
mod intentions;
mod jwt_provider;
mod jwt_refs;
mod load_balancer;
mod mesh;
mod path_match;
mod permissions;
mod proxy_defaults;
mod resolver;
mod router;
mod service_defaults;
mod splitter;
mod store;
mod upstream_defaults;

#[cfg(test)]
mod mesh_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod validation_tests;

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use common::{
    AccessLogsConfig, EnvoyExtension, ExposeConfig, ExposePath, FailoverPolicy,
    HttpHeaderModifiers, MeshGatewayConfig, PrioritizeByLocality, TransparentProxyConfig,
};
pub use intentions::{ServiceIntentions, SourceIntention};
pub use jwt_provider::{
    DEFAULT_CLOCK_SKEW_SECONDS, JsonWebKeySet, JwksCluster, JwksRetryPolicy, JwksTlsCertificate,
    JwtCacheConfig, JwtForwardingConfig, JwtLocation, JwtLocationHeader, JwtLocationName,
    JwtProviderConfigEntry, LocalJwks, RemoteJwks, RetryPolicyBackOff, remote_host_port,
};
pub use load_balancer::{
    CookieConfig, HashPolicy, LeastRequestConfig, LoadBalancer, RingHashConfig,
};
pub use mesh::{
    HEADERS_WITH_UNDERSCORES_ACTIONS, MESH_NAME, MeshConfigEntry, MeshDirectionalHttpConfig,
    MeshDirectionalTlsConfig, MeshHttpConfig, MeshTlsConfig, PATH_WITH_ESCAPED_SLASHES_ACTIONS,
    PeeringMeshConfig, RequestNormalization, TransparentProxyMeshConfig, envoy_cipher_suite,
};
pub use permissions::{
    IntentionHttpHeaderPermission, IntentionHttpPermission, IntentionJwtClaimVerification,
    IntentionJwtProvider, IntentionJwtRequirement, IntentionPermission,
};
pub use proxy_defaults::ProxyDefaults;
pub use resolver::{
    FailoverTarget, ResolverFailover, ResolverRedirect, ResolverSubset, ServiceResolver,
};
pub use router::{
    RouteDestination, RouteHeaderMatch, RouteHttpMatch, RouteMatch, RouteQueryParamMatch,
    ServiceRoute, ServiceRouter,
};
pub use service_defaults::{
    DestinationConfig, PassiveHealthCheck, ServiceDefaults, UpstreamConfig, UpstreamConfiguration,
    UpstreamLimits,
};
pub use splitter::{ServiceSplit, ServiceSplitter};
pub use store::{CentralConfig, ConfigEntries};

/// The config entry kinds the simulator supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    ServiceIntentions,
    ServiceDefaults,
    ProxyDefaults,
    ServiceResolver,
    ServiceSplitter,
    ServiceRouter,
    Mesh,
    JwtProvider,
}

impl Kind {
    /// Every supported kind.
    pub const ALL: [Self; 8] = [
        Self::ServiceIntentions,
        Self::ServiceDefaults,
        Self::ProxyDefaults,
        Self::ServiceResolver,
        Self::ServiceSplitter,
        Self::ServiceRouter,
        Self::Mesh,
        Self::JwtProvider,
    ];

    /// The wire name (`service-defaults`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::ServiceIntentions => "service-intentions",
            Self::ServiceDefaults => "service-defaults",
            Self::ProxyDefaults => "proxy-defaults",
            Self::ServiceResolver => "service-resolver",
            Self::ServiceSplitter => "service-splitter",
            Self::ServiceRouter => "service-router",
            Self::Mesh => "mesh",
            Self::JwtProvider => "jwt-provider",
        }
    }

    /// Parses a wire name. Consul's `MakeConfigEntry` matches exactly: no aliases, no case folding.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// A config entry error; `Display` is the HTTP body text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// HTTP 400.
    #[error("Request decoding failed: {0}")]
    Decode(String),
    /// HTTP 500; the text is Consul's validation or graph error.
    #[error("{0}")]
    Invalid(String),
    /// HTTP 404.
    #[error("Config entry not found for {} / {}", go_quote(.kind), go_quote(.name))]
    NotFound { kind: String, name: String },
}

/// One config entry of any supported kind.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // a few hundred bytes each; entries live in a map anyway
pub enum ConfigEntry {
    ServiceIntentions(ServiceIntentions),
    ServiceDefaults(ServiceDefaults),
    ProxyDefaults(ProxyDefaults),
    ServiceResolver(ServiceResolver),
    ServiceSplitter(ServiceSplitter),
    ServiceRouter(ServiceRouter),
    Mesh(MeshConfigEntry),
    JwtProvider(JwtProviderConfigEntry),
}

macro_rules! each {
    ($self:expr, $e:ident => $body:expr) => {
        match $self {
            ConfigEntry::ServiceIntentions($e) => $body,
            ConfigEntry::ServiceDefaults($e) => $body,
            ConfigEntry::ProxyDefaults($e) => $body,
            ConfigEntry::ServiceResolver($e) => $body,
            ConfigEntry::ServiceSplitter($e) => $body,
            ConfigEntry::ServiceRouter($e) => $body,
            ConfigEntry::Mesh($e) => $body,
            ConfigEntry::JwtProvider($e) => $body,
        }
    };
}

impl ConfigEntry {
    pub fn kind(&self) -> Kind {
        match self {
            Self::ServiceIntentions(_) => Kind::ServiceIntentions,
            Self::ServiceDefaults(_) => Kind::ServiceDefaults,
            Self::ProxyDefaults(_) => Kind::ProxyDefaults,
            Self::ServiceResolver(_) => Kind::ServiceResolver,
            Self::ServiceSplitter(_) => Kind::ServiceSplitter,
            Self::ServiceRouter(_) => Kind::ServiceRouter,
            Self::Mesh(_) => Kind::Mesh,
            Self::JwtProvider(_) => Kind::JwtProvider,
        }
    }

    pub fn name(&self) -> &str {
        each!(self, e => &e.name)
    }

    pub fn create_index(&self) -> u64 {
        each!(self, e => e.create_index)
    }

    pub fn modify_index(&self) -> u64 {
        each!(self, e => e.modify_index)
    }

    pub(crate) fn set_indexes(&mut self, create: u64, modify: u64) {
        each!(self, e => {
            e.create_index = create;
            e.modify_index = modify;
        });
    }

    /// The read shape of `GET /v1/config/:kind/:name`: Go struct order, Go's `omitempty`, then
    /// `CreateIndex` and `ModifyIndex` (`Hash` is left out). Stored entries are already
    /// normalized.
    pub fn to_json(&self) -> Value {
        let v = each!(self, e => serde_json::to_value(e));
        v.unwrap_or(Value::Null)
    }

    /// `Normalize()`; fails only for a proxy-defaults name other than `global` or an
    /// undecodable `Config.protocol`.
    pub(crate) fn normalize(&mut self) -> Result<(), String> {
        match self {
            Self::ServiceIntentions(e) => e.normalize(),
            Self::ServiceDefaults(e) => e.normalize(),
            Self::ProxyDefaults(e) => e.normalize()?,
            Self::ServiceResolver(e) => e.normalize(),
            Self::ServiceSplitter(e) => e.normalize(),
            Self::ServiceRouter(e) => e.normalize(),
            Self::Mesh(e) => e.normalize(),
            Self::JwtProvider(e) => e.normalize(),
        }
        Ok(())
    }

    /// `Validate()`: the entry on its own, without looking at other entries.
    pub(crate) fn validate(&self) -> Result<(), String> {
        match self {
            Self::ServiceIntentions(e) => e.validate(),
            Self::ServiceDefaults(e) => e.validate(),
            Self::ProxyDefaults(e) => e.validate(),
            Self::ServiceResolver(e) => e.validate(),
            Self::ServiceSplitter(e) => e.validate(),
            Self::ServiceRouter(e) => e.validate(),
            Self::Mesh(e) => e.validate(),
            Self::JwtProvider(e) => e.validate(),
        }
    }
}

/// Decodes a `PUT /v1/config` body (mapstructure semantics: either key case, snake or Pascal,
/// weak typing, durations as `"15s"`, unknown keys rejected). The entry is not yet normalized.
pub fn decode_entry(body: &[u8]) -> Result<ConfigEntry, ConfigError> {
    let raw = crate::go::decode::parse_json(body).map_err(|e| ConfigError::Decode(e.0))?;
    let Value::Object(raw) = raw else {
        let got = match raw {
            Value::Array(_) => "array",
            Value::String(_) => "string",
            Value::Number(_) => "number",
            Value::Bool(_) => "bool",
            _ => "null",
        };
        return Err(ConfigError::Decode(format!(
            "json: cannot unmarshal {got} into Go value of type map[string]interface {{}}"
        )));
    };
    let kind_val = raw.get("Kind").or_else(|| raw.get("kind"));
    let Some(kind_val) = kind_val else {
        return Err(ConfigError::Decode(
            "Payload does not contain a kind/Kind key at the top level".into(),
        ));
    };
    let Value::String(kind_str) = kind_val else {
        return Err(ConfigError::Decode(
            "Kind value in payload is not a string".into(),
        ));
    };
    let kind = Kind::parse(kind_str)
        .ok_or_else(|| ConfigError::Decode(format!("invalid config entry kind: {kind_str}")))?;
    let schema = match kind {
        Kind::ServiceIntentions => &intentions::SCHEMA,
        Kind::ServiceDefaults => &service_defaults::SCHEMA,
        Kind::ProxyDefaults => &proxy_defaults::SCHEMA,
        Kind::ServiceResolver => &resolver::SCHEMA,
        Kind::ServiceSplitter => &splitter::SPLITTER_SCHEMA,
        Kind::ServiceRouter => &router::ROUTER_SCHEMA,
        Kind::Mesh => &mesh::SCHEMA,
        Kind::JwtProvider => &jwt_provider::SCHEMA,
    };
    let (canonical, unused) =
        crate::go::mapstructure::decode_top(&raw, schema).map_err(ConfigError::Decode)?;
    validate_unused_keys(&unused).map_err(ConfigError::Decode)?;
    fn typed<T: DeserializeOwned>(v: Value) -> Result<T, ConfigError> {
        serde_json::from_value(v).map_err(|e| ConfigError::Decode(e.to_string()))
    }
    Ok(match kind {
        Kind::ServiceIntentions => ConfigEntry::ServiceIntentions(typed(canonical)?),
        Kind::ServiceDefaults => ConfigEntry::ServiceDefaults(typed(canonical)?),
        Kind::ProxyDefaults => ConfigEntry::ProxyDefaults(typed(canonical)?),
        Kind::ServiceResolver => ConfigEntry::ServiceResolver(typed(canonical)?),
        Kind::ServiceSplitter => ConfigEntry::ServiceSplitter(typed(canonical)?),
        Kind::ServiceRouter => ConfigEntry::ServiceRouter(typed(canonical)?),
        Kind::Mesh => ConfigEntry::Mesh(typed(canonical)?),
        Kind::JwtProvider => ConfigEntry::JwtProvider(typed(canonical)?),
    })
}

/// `validateUnusedKeys` (CE).
fn validate_unused_keys(unused: &[String]) -> Result<(), String> {
    let errs: Vec<String> = unused
        .iter()
        .filter(|k| !matches!(k.as_str(), "CreateIndex" | "ModifyIndex" | "kind" | "Kind"))
        .map(|k| {
            let lower = k.to_lowercase();
            if lower.ends_with("namespace") {
                format!("invalid config key {}, namespaces are a consul enterprise feature", go_quote(k))
            } else if lower.contains("jwt") {
                format!("invalid config key {}, api-gateway jwt validation is a consul enterprise feature", go_quote(k))
            } else {
                format!("invalid config key {}", go_quote(k))
            }
        })
        .collect();
    if errs.is_empty() {
        Ok(())
    } else {
        Err(multierror(&errs))
    }
}

pub(crate) use crate::go::gotext::multierror;

pub(crate) use crate::go::gotext::go_quote;
