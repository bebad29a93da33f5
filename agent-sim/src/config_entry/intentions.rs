//! The `service-intentions` config entry: sources, L7 permissions, JWT requirements, their
//! normalization (precedence, source type, upper-cased methods, stable sort) and validation with
//! Consul's error texts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{META_VALUE_MAX_LENGTH, is_false, validate_meta};
use super::mapstructure::{Field, Schema, Ty};
use super::{go_quote, multierror};

/// A `service-intentions` entry: who may talk to `name`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceIntentions {
    #[serde(rename = "Kind")]
    pub kind: String,
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Sources")]
    pub sources: Vec<SourceIntention>,
    #[serde(rename = "JWT", skip_serializing_if = "Option::is_none")]
    pub jwt: Option<IntentionJwtRequirement>,
    #[serde(rename = "Meta", skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
    #[serde(rename = "Hash", skip_serializing)]
    pub hash: u64,
    #[serde(rename = "CreateIndex", skip_deserializing)]
    pub create_index: u64,
    #[serde(rename = "ModifyIndex", skip_deserializing)]
    pub modify_index: u64,
}

/// One source of a `service-intentions` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SourceIntention {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Action", skip_serializing_if = "String::is_empty")]
    pub action: String,
    #[serde(rename = "Permissions", skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<IntentionPermission>,
    #[serde(rename = "Precedence")]
    pub precedence: i64,
    #[serde(rename = "LegacyID", skip_serializing_if = "String::is_empty")]
    pub legacy_id: String,
    #[serde(rename = "Type")]
    pub source_type: String,
    #[serde(rename = "Description", skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(rename = "LegacyMeta", skip_serializing_if = "BTreeMap::is_empty")]
    pub legacy_meta: BTreeMap<String, String>,
    #[serde(rename = "LegacyCreateTime", skip_serializing_if = "Option::is_none")]
    pub legacy_create_time: Option<Value>,
    #[serde(rename = "LegacyUpdateTime", skip_serializing_if = "Option::is_none")]
    pub legacy_update_time: Option<Value>,
    #[serde(rename = "Peer", skip_serializing_if = "String::is_empty")]
    pub peer: String,
    #[serde(rename = "SamenessGroup", skip_serializing_if = "String::is_empty")]
    pub sameness_group: String,
}

/// An L7 permission (`Sources[].Permissions[]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntentionPermission {
    #[serde(rename = "Action")]
    pub action: String,
    #[serde(rename = "HTTP", skip_serializing_if = "Option::is_none")]
    pub http: Option<IntentionHttpPermission>,
    #[serde(rename = "JWT", skip_serializing_if = "Option::is_none")]
    pub jwt: Option<IntentionJwtRequirement>,
}

/// HTTP match criteria of a permission.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntentionHttpPermission {
    #[serde(rename = "PathExact", skip_serializing_if = "String::is_empty")]
    pub path_exact: String,
    #[serde(rename = "PathPrefix", skip_serializing_if = "String::is_empty")]
    pub path_prefix: String,
    #[serde(rename = "PathRegex", skip_serializing_if = "String::is_empty")]
    pub path_regex: String,
    #[serde(rename = "Header", skip_serializing_if = "Vec::is_empty")]
    pub header: Vec<IntentionHttpHeaderPermission>,
    #[serde(rename = "Methods", skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
}

/// A header matcher of an HTTP permission.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntentionHttpHeaderPermission {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Present", skip_serializing_if = "is_false")]
    pub present: bool,
    #[serde(rename = "Exact", skip_serializing_if = "String::is_empty")]
    pub exact: String,
    #[serde(rename = "Prefix", skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    #[serde(rename = "Suffix", skip_serializing_if = "String::is_empty")]
    pub suffix: String,
    #[serde(rename = "Contains", skip_serializing_if = "String::is_empty")]
    pub contains: String,
    #[serde(rename = "Regex", skip_serializing_if = "String::is_empty")]
    pub regex: String,
    #[serde(rename = "Invert", skip_serializing_if = "is_false")]
    pub invert: bool,
    #[serde(rename = "IgnoreCase", skip_serializing_if = "is_false")]
    pub ignore_case: bool,
}

/// `IntentionJWTRequirement`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntentionJwtRequirement {
    #[serde(rename = "Providers", skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<IntentionJwtProvider>,
}

/// `IntentionJWTProvider`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntentionJwtProvider {
    #[serde(rename = "Name", skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(rename = "VerifyClaims", skip_serializing_if = "Vec::is_empty")]
    pub verify_claims: Vec<IntentionJwtClaimVerification>,
}

/// `IntentionJWTClaimVerification`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntentionJwtClaimVerification {
    #[serde(rename = "Path", skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
    #[serde(rename = "Value", skip_serializing_if = "String::is_empty")]
    pub value: String,
}

static CLAIM: Schema = Schema {
    fields: &[Field("Path", Ty::Slice(&Ty::Str)), Field("Value", Ty::Str)],
};
static CLAIM_TY: Ty = Ty::Struct(&CLAIM);
static PROVIDER: Schema = Schema {
    fields: &[
        Field("Name", Ty::Str),
        Field("VerifyClaims", Ty::Slice(&CLAIM_TY)),
    ],
};
static PROVIDER_TY: Ty = Ty::Struct(&PROVIDER);
static JWT: Schema = Schema {
    fields: &[Field("Providers", Ty::Slice(&PROVIDER_TY))],
};
static HEADER: Schema = Schema {
    fields: &[
        Field("Name", Ty::Str),
        Field("Present", Ty::Bool),
        Field("Exact", Ty::Str),
        Field("Prefix", Ty::Str),
        Field("Suffix", Ty::Str),
        Field("Contains", Ty::Str),
        Field("Regex", Ty::Str),
        Field("Invert", Ty::Bool),
        Field("IgnoreCase", Ty::Bool),
    ],
};
static HEADER_TY: Ty = Ty::Struct(&HEADER);
static HTTP: Schema = Schema {
    fields: &[
        Field("PathExact", Ty::Str),
        Field("PathPrefix", Ty::Str),
        Field("PathRegex", Ty::Str),
        Field("Header", Ty::Slice(&HEADER_TY)),
        Field("Methods", Ty::Slice(&Ty::Str)),
    ],
};
static PERMISSION: Schema = Schema {
    fields: &[
        Field("Action", Ty::Str),
        Field("HTTP", Ty::Struct(&HTTP)),
        Field("JWT", Ty::Struct(&JWT)),
    ],
};
static PERMISSION_TY: Ty = Ty::Struct(&PERMISSION);
static SOURCE: Schema = Schema {
    fields: &[
        Field("Name", Ty::Str),
        Field("Action", Ty::Str),
        Field("Permissions", Ty::Slice(&PERMISSION_TY)),
        Field("Precedence", Ty::Int("int")),
        Field("LegacyID", Ty::Str),
        Field("Type", Ty::Str),
        Field("Description", Ty::Str),
        Field("LegacyMeta", Ty::Map(&Ty::Str)),
        Field("LegacyCreateTime", Ty::Opaque),
        Field("LegacyUpdateTime", Ty::Opaque),
        Field("Peer", Ty::Str),
        Field("SamenessGroup", Ty::Str),
    ],
};
static SOURCE_TY: Ty = Ty::Struct(&SOURCE);
pub(crate) static SCHEMA: Schema = Schema {
    fields: &[
        Field("Kind", Ty::Str),
        Field("Name", Ty::Str),
        Field("Sources", Ty::Slice(&SOURCE_TY)),
        Field("JWT", Ty::Struct(&JWT)),
        Field("Meta", Ty::Map(&Ty::Str)),
        Field("Hash", Ty::Uint("uint64")),
    ],
};

/// Intention precedence for a destination/source name pair in CE (namespace is always exact).
pub(crate) fn precedence(destination: &str, source: &str) -> i64 {
    let count = |name: &str| if name == "*" { 1 } else { 2 };
    let max = match count(destination) {
        2 => 9,
        _ => 6,
    };
    max - (2 - count(source))
}

impl ServiceIntentions {
    /// True when the destination is `*`.
    pub fn has_wildcard_destination(&self) -> bool {
        self.name == "*"
    }

    /// True when any source carries L7 permissions.
    pub fn has_any_permissions(&self) -> bool {
        self.sources.iter().any(|s| !s.permissions.is_empty())
    }

    /// `ServiceIntentionsConfigEntry.Normalize` (non-legacy write).
    pub(crate) fn normalize(&mut self) {
        self.kind = "service-intentions".into();
        for src in &mut self.sources {
            if src.source_type.is_empty() {
                src.source_type = "consul".into();
            }
            src.precedence = precedence(&self.name, &src.name);
            src.legacy_id.clear();
            src.legacy_create_time = None;
            src.legacy_update_time = None;
            for perm in &mut src.permissions {
                if let Some(http) = &mut perm.http {
                    http.methods.iter_mut().for_each(|m| *m = m.to_uppercase());
                }
            }
        }
        // Highest precedence first; stable, so equal precedences keep their order.
        self.sources
            .sort_by_key(|s| std::cmp::Reverse(s.precedence));
    }

    /// `ServiceIntentionsConfigEntry.Validate` (non-legacy write).
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("Name is required".into());
        }
        validate_wildcard_name(&self.name)?;
        if let Some(jwt) = &self.jwt {
            validate_jwt(jwt)?;
        }
        let meta_errs = validate_meta(&self.meta);
        if !meta_errs.is_empty() {
            return Err(multierror(&meta_errs));
        }
        if self.sources.is_empty() {
            return Err("At least one source is required".into());
        }
        let mut seen: Vec<(&str, &str, &str)> = Vec::new();
        for (i, src) in self.sources.iter().enumerate() {
            self.validate_source(i, src)?;
            let key = (
                src.name.as_str(),
                src.peer.as_str(),
                src.sameness_group.as_str(),
            );
            if seen.contains(&key) {
                return Err(if !src.peer.is_empty() {
                    format!(
                        "Sources[{i}] defines peer({}) {} more than once",
                        go_quote(&src.peer),
                        go_quote(&src.name)
                    )
                } else {
                    format!(
                        "Sources[{i}] defines {} more than once",
                        go_quote(&src.name)
                    )
                });
            }
            seen.push(key);
        }
        Ok(())
    }

    fn validate_source(&self, i: usize, src: &SourceIntention) -> Result<(), String> {
        if src.name.is_empty() {
            return Err(format!("Sources[{i}].Name is required"));
        }
        if !src.sameness_group.is_empty() {
            return Err(format!(
                "Sources[{i}].SamenessGroup: Sameness groups are a Consul Enterprise feature. "
            ));
        }
        validate_wildcard_name(&src.name).map_err(|e| format!("Sources[{i}].{e}"))?;
        if src.peer.contains('*') {
            return Err(format!(
                "Sources[{i}].Peer: cannot use wildcard '*' in peer"
            ));
        }
        if src.description.len() > META_VALUE_MAX_LENGTH {
            return Err(format!(
                "Sources[{i}].Description exceeds maximum length {META_VALUE_MAX_LENGTH}"
            ));
        }
        if !src.legacy_meta.is_empty() {
            return Err(format!("Sources[{i}].LegacyMeta must be omitted"));
        }
        if !src.legacy_id.is_empty() {
            return Err(format!("Sources[{i}].LegacyID must be omitted"));
        }
        if src.permissions.is_empty() && !matches!(src.action.as_str(), "allow" | "deny") {
            return Err(format!(
                "Sources[{i}].Action must be set to 'allow' or 'deny'"
            ));
        }
        if !src.permissions.is_empty() && !src.action.is_empty() {
            return Err(format!(
                "Sources[{i}].Action must be omitted if Permissions are specified"
            ));
        }
        if self.has_wildcard_destination() && !src.permissions.is_empty() {
            return Err(format!(
                "Sources[{i}].Permissions cannot be specified on intentions with wildcarded destinations"
            ));
        }
        if src.source_type != "consul" {
            return Err(format!("Sources[{i}].Type must be set to 'consul'"));
        }
        for (j, perm) in src.permissions.iter().enumerate() {
            validate_permission(i, j, perm)?;
        }
        Ok(())
    }
}

/// `validateIntentionWildcards` for a CE name (namespace and partition are always `default`).
fn validate_wildcard_name(name: &str) -> Result<(), String> {
    if name != "*" && name.contains('*') {
        return Err("Name: wildcard character '*' cannot be used with partial values".into());
    }
    Ok(())
}

fn validate_jwt(jwt: &IntentionJwtRequirement) -> Result<(), String> {
    let errs: Vec<String> = jwt
        .providers
        .iter()
        .filter(|p| p.name.is_empty())
        .map(|_| "JWT provider name is required".to_owned())
        .collect();
    if errs.is_empty() {
        Ok(())
    } else {
        Err(multierror(&errs))
    }
}

/// Go's `http.Method*` constants.
pub(crate) fn is_valid_http_method(m: &str) -> bool {
    matches!(
        m,
        "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "CONNECT" | "OPTIONS" | "TRACE"
    )
}

fn validate_permission(i: usize, j: usize, perm: &IntentionPermission) -> Result<(), String> {
    if !matches!(perm.action.as_str(), "allow" | "deny") {
        return Err(format!(
            "Sources[{i}].Permissions[{j}].Action must be set to 'allow' or 'deny'"
        ));
    }
    let prefix = format!("Sources[{i}].Permissions[{j}].HTTP");
    let Some(http) = &perm.http else {
        return Err(format!("{prefix} is required"));
    };
    let mut path_parts = 0;
    if !http.path_exact.is_empty() {
        path_parts += 1;
        if !http.path_exact.starts_with('/') {
            return Err(format!(
                "{prefix}.PathExact doesn't start with '/': {}",
                go_quote(&http.path_exact)
            ));
        }
    }
    if !http.path_prefix.is_empty() {
        path_parts += 1;
        if !http.path_prefix.starts_with('/') {
            return Err(format!(
                "{prefix}.PathPrefix doesn't start with '/': {}",
                go_quote(&http.path_prefix)
            ));
        }
    }
    if !http.path_regex.is_empty() {
        path_parts += 1;
    }
    if path_parts > 1 {
        return Err(format!(
            "{prefix} should only contain at most one of PathExact, PathPrefix, or PathRegex"
        ));
    }
    let mut perm_parts = path_parts;
    for (k, hdr) in http.header.iter().enumerate() {
        if hdr.name.is_empty() {
            return Err(format!("{prefix}.Header[{k}] missing required Name field"));
        }
        let parts = [
            hdr.present,
            !hdr.exact.is_empty(),
            !hdr.regex.is_empty(),
            !hdr.prefix.is_empty(),
        ]
        .into_iter()
        .chain([!hdr.suffix.is_empty(), !hdr.contains.is_empty()])
        .filter(|b| *b)
        .count();
        if parts != 1 {
            return Err(format!(
                "{prefix}.Header[{k}] should only contain one of Present, Exact, Prefix, Suffix, Contains, or Regex"
            ));
        }
        if hdr.ignore_case && (hdr.present || !hdr.regex.is_empty()) {
            return Err(format!(
                "{prefix}.Header[{k}] should set one of Exact, Prefix, Suffix, or Contains to use IgnoreCase"
            ));
        }
        perm_parts += 1;
    }
    if !http.methods.is_empty() {
        let mut found: Vec<&str> = Vec::new();
        for m in &http.methods {
            if !is_valid_http_method(m) {
                return Err(format!(
                    "{prefix}.Methods contains an invalid method {}",
                    go_quote(m)
                ));
            }
            if found.contains(&m.as_str()) {
                return Err(format!(
                    "{prefix}.Methods contains {} more than once",
                    go_quote(m)
                ));
            }
            found.push(m);
        }
        perm_parts += 1;
    }
    if perm_parts == 0 {
        return Err(format!("{prefix} should not be empty"));
    }
    if let Some(jwt) = &perm.jwt {
        validate_jwt(jwt)?;
    }
    Ok(())
}
