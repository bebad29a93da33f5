//! Intention wire types, as `/v1/connect/intentions/match` returns them (only the fields a proxy
//! needs; unknown keys are ignored, `null` lists read as empty).

use serde::{Deserialize, Deserializer};

use crate::jwt::JwtRequirement;

/// One intention from the match API (config-entry intentions; legacy fields ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Intention {
    /// Source namespace (`default` or `*`; empty reads as `default`).
    #[serde(rename = "SourceNS", default)]
    pub source_ns: String,
    /// Source service name or `*`.
    #[serde(default)]
    pub source_name: String,
    /// Destination namespace.
    #[serde(rename = "DestinationNS", default)]
    pub destination_ns: String,
    /// Destination service name or `*`.
    #[serde(default)]
    pub destination_name: String,
    /// Source partition (empty = default).
    #[serde(default)]
    pub source_partition: String,
    /// Source peer: intentions for peered sources never match local identities.
    #[serde(default)]
    pub source_peer: String,
    /// Source sameness group (Enterprise); such intentions never match here.
    #[serde(default)]
    pub source_sameness_group: String,
    /// `allow` or `deny`; empty for L7 intentions.
    #[serde(default)]
    pub action: String,
    /// L7 permissions (empty for L4 intentions).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub permissions: Vec<Permission>,
    /// The entry's JWT requirement (HTTP services only).
    #[serde(rename = "JWT", default)]
    pub jwt: Option<JwtRequirement>,
    /// Precedence as the server computed it (informational; recomputed locally).
    #[serde(default)]
    pub precedence: i64,
    /// `ModifyIndex` of the enclosing `service-intentions` entry (informational).
    #[serde(default)]
    pub modify_index: u64,
}

/// One L7 permission.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Permission {
    /// `allow` or `deny`.
    #[serde(default)]
    pub action: String,
    /// HTTP conditions (all must hold).
    #[serde(rename = "HTTP", default)]
    pub http: Option<HttpMatch>,
    /// The permission's own JWT requirement.
    #[serde(rename = "JWT", default)]
    pub jwt: Option<JwtRequirement>,
}

/// HTTP conditions of a permission.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HttpMatch {
    /// Path equals this value (query string excluded).
    #[serde(default)]
    pub path_exact: Option<String>,
    /// Path starts with this value.
    #[serde(default)]
    pub path_prefix: Option<String>,
    /// Path fully matches this regular expression.
    #[serde(default)]
    pub path_regex: Option<String>,
    /// Method is one of these (upper-case).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub methods: Vec<String>,
    /// Every header matcher must hold.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub header: Vec<HeaderMatch>,
}

/// A header condition: exactly one of present/exact/prefix/suffix/contains/regex.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HeaderMatch {
    /// Header name (case-insensitive).
    #[serde(default)]
    pub name: String,
    /// Header is present.
    #[serde(default)]
    pub present: bool,
    /// Value equals.
    #[serde(default)]
    pub exact: Option<String>,
    /// Value starts with.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Value ends with.
    #[serde(default)]
    pub suffix: Option<String>,
    /// Value contains.
    #[serde(default)]
    pub contains: Option<String>,
    /// Value fully matches the regular expression.
    #[serde(default)]
    pub regex: Option<String>,
    /// Negate the result (an absent header then matches).
    #[serde(default)]
    pub invert: bool,
    /// Compare case-insensitively (exact, prefix, suffix, contains).
    #[serde(default)]
    pub ignore_case: bool,
}

fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

impl Intention {
    /// An L4 intention `source -> destination` with `action` (test and tooling helper).
    pub fn l4(source: &str, destination: &str, allow: bool) -> Self {
        Self {
            source_ns: "default".into(),
            source_name: source.into(),
            destination_ns: "default".into(),
            destination_name: destination.into(),
            action: if allow { "allow" } else { "deny" }.into(),
            ..Self::default()
        }
    }

    /// An L7 intention `source -> destination` with `permissions`.
    pub fn l7(source: &str, destination: &str, permissions: Vec<Permission>) -> Self {
        Self {
            permissions,
            action: String::new(),
            ..Self::l4(source, destination, false)
        }
    }
}
