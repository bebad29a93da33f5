//! The `service-intentions` config entry: sources, L7 permissions, JWT requirements, their
//! normalization (precedence, source type, upper-cased methods, stable sort) and validation with
//! Consul's error texts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{
    META_KEY_MAX_LENGTH, META_MAX_KEY_PAIRS, META_VALUE_MAX_LENGTH, validate_meta,
};
use super::permissions::{
    IntentionJwtRequirement, IntentionPermission, JWT, PERMISSION_TY, validate_jwt,
    validate_permission,
};
use super::{go_quote, multierror};
use crate::go::mapstructure::{Field, Schema, Ty};

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
        self.normalize_as(false);
    }

    /// `normalize(legacyWrite)`: a non-legacy write clears the legacy ID and times of every
    /// source (a config-entry write turns legacy intentions into ID-less ones, as in Consul).
    pub(crate) fn normalize_as(&mut self, legacy: bool) {
        self.kind = "service-intentions".into();
        for src in &mut self.sources {
            if src.source_type.is_empty() {
                src.source_type = "consul".into();
            }
            src.precedence = precedence(&self.name, &src.name);
            if !legacy {
                src.legacy_id.clear();
                src.legacy_create_time = None;
                src.legacy_update_time = None;
            }
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
        self.validate_as(false)
    }

    /// `validate(legacyWrite)`.
    pub(crate) fn validate_as(&self, legacy: bool) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("Name is required".into());
        }
        validate_wildcard_name(&self.name)?;
        if let Some(jwt) = &self.jwt {
            validate_jwt(jwt)?;
        }
        if legacy {
            if !self.meta.is_empty() {
                return Err("Meta must be omitted for legacy intention writes".into());
            }
        } else {
            let meta_errs = validate_meta(&self.meta);
            if !meta_errs.is_empty() {
                return Err(multierror(&meta_errs));
            }
        }
        if self.sources.is_empty() {
            return Err("At least one source is required".into());
        }
        let mut seen: Vec<(&str, &str, &str)> = Vec::new();
        for (i, src) in self.sources.iter().enumerate() {
            self.validate_source(i, src, legacy)?;
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

    fn validate_source(&self, i: usize, src: &SourceIntention, legacy: bool) -> Result<(), String> {
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
        if legacy {
            validate_legacy_source(i, src)?;
        } else {
            if !src.legacy_meta.is_empty() {
                return Err(format!("Sources[{i}].LegacyMeta must be omitted"));
            }
            if !src.legacy_id.is_empty() {
                return Err(format!("Sources[{i}].LegacyID must be omitted"));
            }
        }
        if (legacy || src.permissions.is_empty())
            && !matches!(src.action.as_str(), "allow" | "deny")
        {
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

/// The legacy-write half of `validate`: no peer, bounded `LegacyMeta`, times and ID set.
fn validate_legacy_source(i: usize, src: &SourceIntention) -> Result<(), String> {
    if !src.peer.is_empty() {
        return Err(format!(
            "Sources[{i}].Peer cannot be set by legacy intentions"
        ));
    }
    if src.legacy_meta.len() > META_MAX_KEY_PAIRS {
        return Err(format!(
            "Sources[{i}].Meta exceeds maximum element count {META_MAX_KEY_PAIRS}"
        ));
    }
    for (k, v) in &src.legacy_meta {
        if k.len() > META_KEY_MAX_LENGTH {
            return Err(format!(
                "Sources[{i}].Meta key {} exceeds maximum length {META_KEY_MAX_LENGTH}",
                go_quote(k)
            ));
        }
        if v.len() > META_VALUE_MAX_LENGTH {
            return Err(format!(
                "Sources[{i}].Meta value for key {} exceeds maximum length {META_VALUE_MAX_LENGTH}",
                go_quote(k)
            ));
        }
    }
    if src.legacy_create_time.is_none() {
        return Err(format!("Sources[{i}].LegacyCreateTime must be set"));
    }
    if src.legacy_update_time.is_none() {
        return Err(format!("Sources[{i}].LegacyUpdateTime must be set"));
    }
    if src.legacy_id.is_empty() {
        return Err(format!("Sources[{i}].LegacyID must be set"));
    }
    Ok(())
}

/// `validateIntentionWildcards` for a CE name (namespace and partition are always `default`).
fn validate_wildcard_name(name: &str) -> Result<(), String> {
    if name != "*" && name.contains('*') {
        return Err("Name: wildcard character '*' cannot be used with partial values".into());
    }
    Ok(())
}
