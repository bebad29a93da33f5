//! The `jwt-provider` config entry (`config_entry_jwt_provider.go`): the JSON Web Key Set
//! (inline or a file, or a remote URI with its fetch options), issuer, audiences, token
//! locations, forwarding, clock skew and cache; `Normalize` (clock skew defaults to 30 s) and
//! `Validate` with Consul's texts. Durations are integer nanoseconds on the wire (the Go struct
//! has no custom marshaller).

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::common::{is_false, is_zero_i64, validate_meta};
use super::{go_quote, multierror};
use crate::go::mapstructure::{Field, Schema, Ty};

/// `structs.DefaultClockSkewSeconds`.
pub const DEFAULT_CLOCK_SKEW_SECONDS: i64 = 30;

/// A `jwt-provider` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwtProviderConfigEntry {
    #[serde(rename = "Kind", skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(rename = "Name", skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(rename = "JSONWebKeySet", skip_serializing_if = "Option::is_none")]
    pub json_web_key_set: Option<JsonWebKeySet>,
    #[serde(rename = "Issuer", skip_serializing_if = "String::is_empty")]
    pub issuer: String,
    #[serde(rename = "Audiences", skip_serializing_if = "Vec::is_empty")]
    pub audiences: Vec<String>,
    #[serde(rename = "Locations", skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<JwtLocation>,
    #[serde(rename = "Forwarding", skip_serializing_if = "Option::is_none")]
    pub forwarding: Option<JwtForwardingConfig>,
    #[serde(rename = "ClockSkewSeconds", skip_serializing_if = "is_zero_i64")]
    pub clock_skew_seconds: i64,
    #[serde(rename = "CacheConfig", skip_serializing_if = "Option::is_none")]
    pub cache_config: Option<JwtCacheConfig>,
    #[serde(rename = "Meta", skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
    #[serde(rename = "Hash", skip_serializing)]
    pub hash: u64,
    #[serde(rename = "CreateIndex", skip_deserializing)]
    pub create_index: u64,
    #[serde(rename = "ModifyIndex", skip_deserializing)]
    pub modify_index: u64,
}

/// `JSONWebKeySet`: exactly one of `Local` or `Remote`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JsonWebKeySet {
    #[serde(rename = "Local", skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalJwks>,
    #[serde(rename = "Remote", skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteJwks>,
}

/// `LocalJWKS`: a base64-encoded JWKS or a file name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LocalJwks {
    #[serde(rename = "JWKS", skip_serializing_if = "String::is_empty")]
    pub jwks: String,
    #[serde(rename = "Filename", skip_serializing_if = "String::is_empty")]
    pub filename: String,
}

/// `RemoteJWKS`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RemoteJwks {
    #[serde(rename = "URI", skip_serializing_if = "String::is_empty")]
    pub uri: String,
    #[serde(rename = "RequestTimeoutMs", skip_serializing_if = "is_zero_i64")]
    pub request_timeout_ms: i64,
    /// Nanoseconds.
    #[serde(rename = "CacheDuration", skip_serializing_if = "is_zero_i64")]
    pub cache_duration: i64,
    #[serde(rename = "FetchAsynchronously", skip_serializing_if = "is_false")]
    pub fetch_asynchronously: bool,
    #[serde(rename = "RetryPolicy", skip_serializing_if = "Option::is_none")]
    pub retry_policy: Option<JwksRetryPolicy>,
    #[serde(rename = "JWKSCluster", skip_serializing_if = "Option::is_none")]
    pub jwks_cluster: Option<JwksCluster>,
}

/// `JWKSRetryPolicy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwksRetryPolicy {
    #[serde(rename = "NumRetries", skip_serializing_if = "is_zero_i64")]
    pub num_retries: i64,
    #[serde(rename = "RetryPolicyBackOff", skip_serializing_if = "Option::is_none")]
    pub retry_policy_back_off: Option<RetryPolicyBackOff>,
}

/// `RetryPolicyBackOff` (nanoseconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicyBackOff {
    #[serde(rename = "BaseInterval", skip_serializing_if = "is_zero_i64")]
    pub base_interval: i64,
    #[serde(rename = "MaxInterval", skip_serializing_if = "is_zero_i64")]
    pub max_interval: i64,
}

/// `JWKSCluster`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwksCluster {
    #[serde(rename = "DiscoveryType", skip_serializing_if = "String::is_empty")]
    pub discovery_type: String,
    #[serde(rename = "TLSCertificates", skip_serializing_if = "Option::is_none")]
    pub tls_certificates: Option<JwksTlsCertificate>,
    /// Nanoseconds.
    #[serde(rename = "ConnectTimeout", skip_serializing_if = "is_zero_i64")]
    pub connect_timeout: i64,
}

/// `JWKSTLSCertificate`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwksTlsCertificate {
    #[serde(
        rename = "CaCertificateProviderInstance",
        skip_serializing_if = "Option::is_none"
    )]
    pub ca_certificate_provider_instance: Option<JwksTlsCertProviderInstance>,
    #[serde(rename = "TrustedCA", skip_serializing_if = "Option::is_none")]
    pub trusted_ca: Option<JwksTlsCertTrustedCa>,
}

/// `JWKSTLSCertProviderInstance`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwksTlsCertProviderInstance {
    #[serde(rename = "InstanceName", skip_serializing_if = "String::is_empty")]
    pub instance_name: String,
    #[serde(rename = "CertificateName", skip_serializing_if = "String::is_empty")]
    pub certificate_name: String,
}

/// `JWKSTLSCertTrustedCA` (`InlineBytes` kept as its base64 text).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwksTlsCertTrustedCa {
    #[serde(rename = "Filename", skip_serializing_if = "String::is_empty")]
    pub filename: String,
    #[serde(
        rename = "EnvironmentVariable",
        skip_serializing_if = "String::is_empty"
    )]
    pub environment_variable: String,
    #[serde(rename = "InlineString", skip_serializing_if = "String::is_empty")]
    pub inline_string: String,
    #[serde(rename = "InlineBytes", skip_serializing_if = "String::is_empty")]
    pub inline_bytes: String,
}

/// `JWTLocation`: exactly one of header, query parameter or cookie.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwtLocation {
    #[serde(rename = "Header", skip_serializing_if = "Option::is_none")]
    pub header: Option<JwtLocationHeader>,
    #[serde(rename = "QueryParam", skip_serializing_if = "Option::is_none")]
    pub query_param: Option<JwtLocationName>,
    #[serde(rename = "Cookie", skip_serializing_if = "Option::is_none")]
    pub cookie: Option<JwtLocationName>,
}

/// `JWTLocationHeader`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwtLocationHeader {
    #[serde(rename = "Name", skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(rename = "ValuePrefix", skip_serializing_if = "String::is_empty")]
    pub value_prefix: String,
    #[serde(rename = "Forward", skip_serializing_if = "is_false")]
    pub forward: bool,
}

/// `JWTLocationQueryParam` and `JWTLocationCookie` (both just a name).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwtLocationName {
    #[serde(rename = "Name", skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// `JWTForwardingConfig` (`PadForwardPayloadHeader` has no `omitempty`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwtForwardingConfig {
    #[serde(rename = "HeaderName", skip_serializing_if = "String::is_empty")]
    pub header_name: String,
    #[serde(rename = "PadForwardPayloadHeader")]
    pub pad_forward_payload_header: bool,
}

/// `JWTCacheConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwtCacheConfig {
    #[serde(rename = "Size", skip_serializing_if = "is_zero_i64")]
    pub size: i64,
}

static STR_TY: Ty = Ty::Str;
static LOCAL: Schema = Schema {
    fields: &[Field("JWKS", Ty::Str), Field("Filename", Ty::Str)],
};
static BACKOFF: Schema = Schema {
    fields: &[
        Field("BaseInterval", Ty::Duration),
        Field("MaxInterval", Ty::Duration),
    ],
};
static RETRY: Schema = Schema {
    fields: &[
        Field("NumRetries", Ty::Int("int")),
        Field("RetryPolicyBackOff", Ty::Struct(&BACKOFF)),
    ],
};
static PROVIDER_INSTANCE: Schema = Schema {
    fields: &[
        Field("InstanceName", Ty::Str),
        Field("CertificateName", Ty::Str),
    ],
};
static TRUSTED_CA: Schema = Schema {
    fields: &[
        Field("Filename", Ty::Str),
        Field("EnvironmentVariable", Ty::Str),
        Field("InlineString", Ty::Str),
        Field("InlineBytes", Ty::Str),
    ],
};
static TLS_CERTS: Schema = Schema {
    fields: &[
        Field(
            "CaCertificateProviderInstance",
            Ty::Struct(&PROVIDER_INSTANCE),
        ),
        Field("TrustedCA", Ty::Struct(&TRUSTED_CA)),
    ],
};
static CLUSTER: Schema = Schema {
    fields: &[
        Field("DiscoveryType", Ty::Str),
        Field("TLSCertificates", Ty::Struct(&TLS_CERTS)),
        Field("ConnectTimeout", Ty::Duration),
    ],
};
static REMOTE: Schema = Schema {
    fields: &[
        Field("URI", Ty::Str),
        Field("RequestTimeoutMs", Ty::Int("int")),
        Field("CacheDuration", Ty::Duration),
        Field("FetchAsynchronously", Ty::Bool),
        Field("RetryPolicy", Ty::Struct(&RETRY)),
        Field("JWKSCluster", Ty::Struct(&CLUSTER)),
    ],
};
static KEY_SET: Schema = Schema {
    fields: &[
        Field("Local", Ty::Struct(&LOCAL)),
        Field("Remote", Ty::Struct(&REMOTE)),
    ],
};
static HEADER: Schema = Schema {
    fields: &[
        Field("Name", Ty::Str),
        Field("ValuePrefix", Ty::Str),
        Field("Forward", Ty::Bool),
    ],
};
static NAME_ONLY: Schema = Schema {
    fields: &[Field("Name", Ty::Str)],
};
static LOCATION: Schema = Schema {
    fields: &[
        Field("Header", Ty::Struct(&HEADER)),
        Field("QueryParam", Ty::Struct(&NAME_ONLY)),
        Field("Cookie", Ty::Struct(&NAME_ONLY)),
    ],
};
static LOCATION_TY: Ty = Ty::Struct(&LOCATION);
static FORWARDING: Schema = Schema {
    fields: &[
        Field("HeaderName", Ty::Str),
        Field("PadForwardPayloadHeader", Ty::Bool),
    ],
};
static CACHE: Schema = Schema {
    fields: &[Field("Size", Ty::Int("int"))],
};
pub(crate) static SCHEMA: Schema = Schema {
    fields: &[
        Field("Kind", Ty::Str),
        Field("Name", Ty::Str),
        Field("JSONWebKeySet", Ty::Struct(&KEY_SET)),
        Field("Issuer", Ty::Str),
        Field("Audiences", Ty::Slice(&STR_TY)),
        Field("Locations", Ty::Slice(&LOCATION_TY)),
        Field("Forwarding", Ty::Struct(&FORWARDING)),
        Field("ClockSkewSeconds", Ty::Int("int")),
        Field("CacheConfig", Ty::Struct(&CACHE)),
        Field("Meta", Ty::Map(&STR_TY)),
        Field("Hash", Ty::Uint("uint64")),
    ],
};

fn count_true(vals: &[bool]) -> usize {
    vals.iter().filter(|v| **v).count()
}

impl JwtProviderConfigEntry {
    /// `Normalize()`: the kind, and a zero clock skew becomes 30 seconds.
    pub(crate) fn normalize(&mut self) {
        self.kind = "jwt-provider".to_owned();
        if self.clock_skew_seconds == 0 {
            self.clock_skew_seconds = DEFAULT_CLOCK_SKEW_SECONDS;
        }
    }

    /// `Validate()`, in Go's order.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("Name is required".into());
        }
        let meta = validate_meta(&self.meta);
        if !meta.is_empty() {
            return Err(multierror(&meta));
        }
        let Some(set) = &self.json_web_key_set else {
            return Err("JSONWebKeySet is required".into());
        };
        set.validate()?;
        let loc_errs: Vec<String> = self
            .locations
            .iter()
            .filter_map(|l| l.validate().err())
            .collect();
        if !loc_errs.is_empty() {
            return Err(multierror(&loc_errs));
        }
        if let Some(f) = &self.forwarding
            && f.header_name.is_empty()
        {
            return Err("Header name required for forwarding config".into());
        }
        Ok(())
    }
}

impl JsonWebKeySet {
    fn validate(&self) -> Result<(), String> {
        if count_true(&[self.local.is_some(), self.remote.is_some()]) != 1 {
            return Err("must specify exactly one of Local or Remote JSON Web key set".into());
        }
        if let Some(remote) = &self.remote {
            return remote.validate();
        }
        match &self.local {
            Some(local) => local.validate(),
            None => Ok(()),
        }
    }
}

impl LocalJwks {
    fn validate(&self) -> Result<(), String> {
        if count_true(&[!self.filename.is_empty(), !self.jwks.is_empty()]) != 1 {
            return Err("must specify exactly one of String or filename for local keyset".into());
        }
        if !self.jwks.is_empty()
            && base64::engine::general_purpose::STANDARD
                .decode(&self.jwks)
                .is_err()
        {
            return Err("JWKS must be valid base64 encoded string".into());
        }
        Ok(())
    }

    /// The decoded inline JWKS (validation already checked the base64).
    pub fn decoded_jwks(&self) -> Option<String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.jwks)
            .ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}

impl RemoteJwks {
    fn validate(&self) -> Result<(), String> {
        if self.uri.is_empty() {
            return Err("Remote JWKS URI is required".into());
        }
        if let Err(e) = parse_request_uri(&self.uri) {
            return Err(format!(
                "Remote JWKS URI is invalid: {e}, uri: {}",
                self.uri
            ));
        }
        if let Some(b) = self
            .retry_policy
            .as_ref()
            .and_then(|r| r.retry_policy_back_off.as_ref())
            && b.max_interval != 0
            && b.base_interval > b.max_interval
        {
            return Err(
                "retry policy backoff's MaxInterval should be greater or equal to BaseInterval"
                    .into(),
            );
        }
        if let Some(c) = &self.jwks_cluster {
            if !c.discovery_type.is_empty()
                && !matches!(
                    c.discovery_type.as_str(),
                    "STATIC" | "STRICT_DNS" | "LOGICAL_DNS" | "EDS" | "ORIGINAL_DST"
                )
            {
                return Err(format!(
                    "unsupported jwks cluster discovery type: {}",
                    go_quote(&c.discovery_type)
                ));
            }
            if let Some(t) = &c.tls_certificates {
                return t.validate();
            }
        }
        Ok(())
    }
}

impl JwksTlsCertificate {
    fn validate(&self) -> Result<(), String> {
        if count_true(&[
            self.ca_certificate_provider_instance.is_some(),
            self.trusted_ca.is_some(),
        ]) != 1
        {
            return Err("must specify exactly one of: CaCertificateProviderInstance or TrustedCA for JKWS' TLSCertificates".into());
        }
        if let Some(ca) = &self.trusted_ca
            && count_true(&[
                !ca.filename.is_empty(),
                !ca.environment_variable.is_empty(),
                !ca.inline_string.is_empty(),
                !ca.inline_bytes.is_empty(),
            ]) != 1
        {
            return Err("must specify exactly one of: Filename, EnvironmentVariable, InlineString or InlineBytes for JWKS' TrustedCA".into());
        }
        Ok(())
    }
}

impl JwtLocation {
    fn validate(&self) -> Result<(), String> {
        let (h, q, c) = (&self.header, &self.query_param, &self.cookie);
        if count_true(&[h.is_some(), q.is_some(), c.is_some()]) != 1 {
            return Err(
                "must set exactly one of: JWT location header, query param or cookie".into(),
            );
        }
        if let Some(h) = h {
            if h.name.is_empty() {
                return Err("JWT location header name must be specified".into());
            }
        } else if let Some(c) = c {
            if c.name.is_empty() {
                return Err("JWT location cookie name must be specified".into());
            }
        } else if q.as_ref().is_some_and(|q| q.name.is_empty()) {
            return Err("JWT location query param name must be specified".into());
        }
        Ok(())
    }
}

/// The `(host, scheme, port)` of a remote JWKS URI (`parseJWTRemoteURL`: port 80, or 443 for
/// `https`, when the URI names none).
pub fn remote_host_port(uri: &str) -> Option<(String, String, u16)> {
    parse_request_uri(uri).ok()?;
    let (scheme, rest) = uri.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, tail) = v6.split_once(']')?;
        (h.to_owned(), tail.strip_prefix(':').unwrap_or_default())
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), p),
            None => (authority.to_owned(), ""),
        }
    };
    let port = match port.parse::<u16>() {
        Ok(p) if p != 0 => p,
        _ if scheme == "https" => 443,
        _ => 80,
    };
    Some((host, scheme.to_owned(), port))
}

/// Go's `url.ParseRequestURI`, as far as its errors go: an absolute URI (`scheme:...`) or an
/// absolute path.
fn parse_request_uri(uri: &str) -> Result<(), String> {
    let quoted = go_quote(uri);
    if uri.chars().any(|c| c.is_ascii_control()) {
        return Err(format!(
            "parse {quoted}: net/url: invalid control character in URL"
        ));
    }
    if uri.starts_with('/') {
        return Ok(());
    }
    let scheme = uri.split(':').next().unwrap_or_default();
    let scheme_ok = uri.contains(':')
        && scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if uri.starts_with(':') {
        return Err(format!("parse {quoted}: missing protocol scheme"));
    }
    if !scheme_ok {
        return Err(format!("parse {quoted}: invalid URI for request"));
    }
    Ok(())
}

#[cfg(test)]
#[path = "jwt_provider_tests.rs"]
mod tests;
