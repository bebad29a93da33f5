//! The `jwt-provider` config entry (`config_entry_jwt_provider.go`): the JSON Web Key Set
//! (inline or a file, or a remote URI with its fetch options), issuer, audiences, token
//! locations, forwarding, clock skew and cache, and its decoding schema; `Normalize` and
//! `Validate` are in [`validate`]. Durations are integer nanoseconds on the wire (the Go struct
//! has no custom marshaller).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::{is_false, is_zero_i64};
use crate::go::mapstructure::{Field, Schema, Ty};

mod validate;

pub use self::validate::remote_host_port;

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

/// `JWKSTLSCertTrustedCA`. `InlineBytes` is a Go `[]byte` that Consul's HTTP API fills from a
/// JSON string with mapstructure's weak typing (`DecodeConfigEntry`, `WeaklyTypedInput`): the
/// string's bytes as written, not base64-decoded, so the PEM text itself is what works. Kept
/// here as that string; a read answers it base64-encoded, as Go's JSON encodes `[]byte` (so a
/// read written back unchanged stores the base64 text, as in Consul).
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
    #[serde(
        rename = "InlineBytes",
        skip_serializing_if = "String::is_empty",
        serialize_with = "go_bytes"
    )]
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

/// A Go `[]byte` as `encoding/json` writes it: standard base64.
fn go_bytes<S: serde::Serializer>(raw: &str, s: S) -> Result<S::Ok, S::Error> {
    use base64::Engine as _;
    s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(raw))
}

#[cfg(test)]
#[path = "jwt_provider_tests.rs"]
mod tests;
