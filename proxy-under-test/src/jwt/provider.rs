//! `jwt-provider` config entries as `GET /v1/config/jwt-provider` returns them (only what a
//! proxy needs; unknown keys ignored; durations are integer nanoseconds, or Go duration text).

use std::time::Duration;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One provider.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ProviderEntry {
    /// The provider's name, as intentions name it.
    #[serde(default)]
    pub name: String,
    /// Where the keys come from.
    #[serde(rename = "JSONWebKeySet", default)]
    pub json_web_key_set: Option<KeySet>,
    /// Required `iss` (unchecked when empty).
    #[serde(default)]
    pub issuer: String,
    /// One of these must be in `aud` (unchecked when empty).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub audiences: Vec<String>,
    /// Where tokens are looked for (Envoy's defaults when empty).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub locations: Vec<Location>,
    /// Allowed clock skew for `exp`/`nbf` (Consul normalizes 0 to 30).
    #[serde(default)]
    pub clock_skew_seconds: u64,
    /// Where a verified payload goes.
    #[serde(default)]
    pub forwarding: Option<Forwarding>,
}

/// `JWTForwardingConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Forwarding {
    /// The header the payload is written to (nothing is forwarded when empty).
    #[serde(default)]
    pub header_name: String,
    /// Pad the base64url payload with `=`.
    #[serde(default)]
    pub pad_forward_payload_header: bool,
}

/// `JSONWebKeySet`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct KeySet {
    /// An inline (base64) JWKS or a file.
    #[serde(default)]
    pub local: Option<LocalKeys>,
    /// A JWKS fetched over HTTP or HTTPS.
    #[serde(default)]
    pub remote: Option<RemoteKeys>,
}

/// `LocalJWKS`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct LocalKeys {
    /// Base64 (standard) of the JWKS JSON.
    #[serde(rename = "JWKS", default)]
    pub jwks: String,
    /// A JWKS file on this machine.
    #[serde(rename = "Filename", default)]
    pub filename: String,
}

/// `RemoteJWKS`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct RemoteKeys {
    /// Where to fetch the JWKS.
    #[serde(rename = "URI", default)]
    pub uri: String,
    /// Fetch timeout (0: Envoy's `HttpUri` default of none; 5 s here).
    #[serde(rename = "RequestTimeoutMs", default)]
    pub request_timeout_ms: u64,
    /// How long fetched keys are kept (0: Envoy's 10 minutes).
    #[serde(rename = "CacheDuration", default, deserialize_with = "duration")]
    pub cache_duration: Duration,
    /// The JWKS cluster's options; only its TLS trust is used here.
    #[serde(rename = "JWKSCluster", default)]
    pub cluster: Option<JwksCluster>,
}

/// `JWKSCluster` (discovery type and connect timeout are Envoy's cluster options, not used).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct JwksCluster {
    /// What an `https` JWKS server is verified against.
    #[serde(rename = "TLSCertificates", default)]
    pub tls_certificates: Option<JwksTls>,
}

/// `JWKSTLSCertificate`: exactly one of the two (Consul validates it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct JwksTls {
    /// The CA the server's chain must lead to.
    #[serde(rename = "TrustedCA", default)]
    pub trusted_ca: Option<TrustedCa>,
    /// An Envoy certificate provider plugin instance (not available here).
    #[serde(rename = "CaCertificateProviderInstance", default)]
    pub ca_certificate_provider_instance: Option<Value>,
}

/// `JWKSTLSCertTrustedCA`: exactly one source of the CA's PEM.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TrustedCa {
    /// A PEM file on this machine.
    #[serde(default)]
    pub filename: String,
    /// An environment variable of Envoy's process holding the PEM.
    #[serde(default)]
    pub environment_variable: String,
    /// The PEM itself.
    #[serde(default)]
    pub inline_string: String,
    /// The PEM as bytes (base64 in JSON, as Go encodes `[]byte`).
    #[serde(default)]
    pub inline_bytes: String,
}

/// `JWTLocation`: one of header, query parameter, cookie.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Location {
    /// A header, with a value prefix (e.g. `Bearer `).
    #[serde(default)]
    pub header: Option<HeaderLocation>,
    /// A query parameter.
    #[serde(default)]
    pub query_param: Option<Named>,
    /// A cookie.
    #[serde(default)]
    pub cookie: Option<Named>,
}

/// `JWTLocationHeader`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HeaderLocation {
    /// Header name.
    #[serde(default)]
    pub name: String,
    /// Stripped before the token.
    #[serde(default)]
    pub value_prefix: String,
    /// Keep the header after a successful verification.
    #[serde(default)]
    pub forward: bool,
}

/// A name (query parameter, cookie).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Named {
    /// The name.
    #[serde(default)]
    pub name: String,
}

fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    match Option::<Value>::deserialize(d)? {
        Some(Value::Number(n)) => Ok(Duration::from_nanos(n.as_u64().unwrap_or(0))),
        Some(Value::String(s)) => crate::agent::assemble::parse_go_duration(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("bad duration {s:?}"))),
        _ => Ok(Duration::ZERO),
    }
}
