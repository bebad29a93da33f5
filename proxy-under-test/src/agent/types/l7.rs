//! The L7 parts of a compiled discovery chain: route and split definitions (`ServiceRoute`,
//! `ServiceSplit`) and resolver load balancing (`LoadBalancer`), read leniently (unknown keys
//! ignored, `null` as empty, durations as Go strings or integer nanoseconds).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::null_default;

/// A Go `time.Duration` as the agent writes it: a string (`"1.5s"`) or integer nanoseconds;
/// zero, empty and `null` read as `None`.
pub fn go_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    Ok(match v {
        Some(Value::String(s)) => crate::agent::assemble::parse_go_duration(&s),
        Some(Value::Number(n)) => n.as_u64().map(Duration::from_nanos),
        _ => None,
    }
    .filter(|d| !d.is_zero()))
}

/// A route's or split's definition (the fields of both, as one reads the other's as empty).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ChainDefinition {
    /// Route: what it matches (`None` = everything).
    #[serde(default)]
    pub r#match: Option<RouteMatch>,
    /// Route: where and how it goes.
    #[serde(default)]
    pub destination: Option<RouteDestination>,
    /// Split: request headers to change.
    #[serde(default)]
    pub request_headers: Option<HeaderModifiers>,
    /// Split: response headers to change.
    #[serde(default)]
    pub response_headers: Option<HeaderModifiers>,
}

/// `ServiceRouteMatch`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct RouteMatch {
    /// The HTTP match.
    #[serde(rename = "HTTP", default)]
    pub http: Option<HttpMatch>,
}

/// `ServiceRouteHTTPMatch`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HttpMatch {
    /// Exact path.
    #[serde(default)]
    pub path_exact: String,
    /// Path prefix.
    #[serde(default)]
    pub path_prefix: String,
    /// Path regex (whole path).
    #[serde(default)]
    pub path_regex: String,
    /// Path matches ignore case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Header matches (all must hold).
    #[serde(default, deserialize_with = "null_default")]
    pub header: Vec<HeaderMatch>,
    /// Query parameter matches (all must hold).
    #[serde(default, deserialize_with = "null_default")]
    pub query_param: Vec<QueryMatch>,
    /// Methods (any).
    #[serde(default, deserialize_with = "null_default")]
    pub methods: Vec<String>,
}

/// `ServiceRouteHTTPMatchHeader`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HeaderMatch {
    /// Header name.
    #[serde(default)]
    pub name: String,
    /// Present at all.
    #[serde(default)]
    pub present: bool,
    /// Exact value.
    #[serde(default)]
    pub exact: String,
    /// Value prefix.
    #[serde(default)]
    pub prefix: String,
    /// Value suffix.
    #[serde(default)]
    pub suffix: String,
    /// Value regex (whole value).
    #[serde(default)]
    pub regex: String,
    /// Negate the match.
    #[serde(default)]
    pub invert: bool,
}

/// `ServiceRouteHTTPMatchQueryParam`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct QueryMatch {
    /// Parameter name.
    #[serde(default)]
    pub name: String,
    /// Present at all.
    #[serde(default)]
    pub present: bool,
    /// Exact value.
    #[serde(default)]
    pub exact: String,
    /// Value regex (whole value).
    #[serde(default)]
    pub regex: String,
}

/// `ServiceRouteDestination`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RouteDestination {
    /// Route timeout.
    #[serde(default, deserialize_with = "go_duration")]
    pub request_timeout: Option<Duration>,
    /// Stream idle timeout.
    #[serde(default, deserialize_with = "go_duration")]
    pub idle_timeout: Option<Duration>,
    /// Replaces the matched path prefix.
    #[serde(default)]
    pub prefix_rewrite: String,
    /// Retries (0 with other retry settings = Envoy's default, 1).
    #[serde(default)]
    pub num_retries: u32,
    /// Retry on connect failure.
    #[serde(default)]
    pub retry_on_connect_failure: bool,
    /// Envoy `retry_on` conditions.
    #[serde(default, deserialize_with = "null_default")]
    pub retry_on: Vec<String>,
    /// Retriable status codes.
    #[serde(default, deserialize_with = "null_default")]
    pub retry_on_status_codes: Vec<u32>,
    /// Request headers to change.
    #[serde(default)]
    pub request_headers: Option<HeaderModifiers>,
    /// Response headers to change.
    #[serde(default)]
    pub response_headers: Option<HeaderModifiers>,
}

/// `HTTPHeaderModifiers`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HeaderModifiers {
    /// Appended.
    #[serde(default, deserialize_with = "null_default")]
    pub add: BTreeMap<String, String>,
    /// Overwritten.
    #[serde(default, deserialize_with = "null_default")]
    pub set: BTreeMap<String, String>,
    /// Removed.
    #[serde(default, deserialize_with = "null_default")]
    pub remove: Vec<String>,
}

/// A resolver's `LoadBalancer`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct LoadBalancer {
    /// `round_robin` (default), `least_request`, `random`, `ring_hash`, `maglev`.
    #[serde(default)]
    pub policy: String,
    /// least_request options.
    #[serde(default)]
    pub least_request_config: Option<LeastRequestConfig>,
    /// Hash policies (ring_hash, maglev).
    #[serde(default, deserialize_with = "null_default")]
    pub hash_policies: Vec<HashPolicy>,
}

/// `LeastRequestConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct LeastRequestConfig {
    /// Random candidates compared (Envoy's default 2).
    #[serde(default)]
    pub choice_count: u32,
}

/// `HashPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HashPolicy {
    /// `header`, `cookie` or `query_parameter` (empty with `SourceIP`).
    #[serde(default)]
    pub field: String,
    /// The header, cookie or parameter name.
    #[serde(default)]
    pub field_value: String,
    /// Cookie options.
    #[serde(default)]
    pub cookie_config: Option<CookieConfig>,
    /// Hash the source IP.
    #[serde(rename = "SourceIP", default)]
    pub source_ip: bool,
    /// Stop at this policy when it yields a hash.
    #[serde(default)]
    pub terminal: bool,
}

/// `CookieConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CookieConfig {
    /// Session cookie (generated without expiry).
    #[serde(default)]
    pub session: bool,
    /// Generated cookie lifetime.
    #[serde(rename = "TTL", default, deserialize_with = "go_duration")]
    pub ttl: Option<Duration>,
    /// Generated cookie path.
    #[serde(default)]
    pub path: String,
}
