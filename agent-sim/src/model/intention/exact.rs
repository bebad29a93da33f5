//! `GET/PUT/DELETE /v1/connect/intentions/exact`: one source of one destination's
//! `service-intentions` entry, addressed by names. PUT decodes a partial Intention strictly and
//! upserts it into the entry; DELETE removes it (and the entry when it was the last source).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::names::{Parsed, check_namespace, parse_component};
use super::{Intention, IntentionError};
use crate::go::decode::{KeySchema, decode_value, parse_json};
use crate::model::config_entry::{
    ConfigEntries, ConfigEntry, ConfigError, IntentionJwtRequirement, IntentionPermission, Kind,
    ServiceIntentions, SourceIntention, go_quote,
};

const NOT_FOUND: &str = "Intention not found";

fn internal(s: String) -> IntentionError {
    IntentionError::Internal(s)
}

fn parse_source(source: &str, allow_peer: bool) -> Result<Parsed, IntentionError> {
    parse_component(source, allow_peer)
        .map_err(|e| internal(format!("source {} is invalid: {e}", go_quote(source))))
}

fn parse_destination(destination: &str) -> Result<Parsed, IntentionError> {
    parse_component(destination, false).map_err(|e| {
        internal(format!(
            "destination {} is invalid: {e}",
            go_quote(destination)
        ))
    })
}

/// `parseIntentionQueryExact` for PUT and DELETE: empty values count as missing.
fn parse_exact(source: &str, destination: &str) -> Result<(Parsed, Parsed), IntentionError> {
    if source.is_empty() {
        return Err(internal("required query parameter 'source' not set".into()));
    }
    if destination.is_empty() {
        return Err(internal(
            "required query parameter 'destination' not set".into(),
        ));
    }
    Ok((
        parse_source(source, false)?,
        parse_destination(destination)?,
    ))
}

pub(super) fn entry_for<'a>(
    entries: &'a ConfigEntries,
    destination: &str,
) -> Option<&'a ServiceIntentions> {
    match entries.get(Kind::ServiceIntentions, destination) {
        Some(ConfigEntry::ServiceIntentions(e)) => Some(e),
        _ => None,
    }
}

fn is_local_source(src: &SourceIntention, name: &str) -> bool {
    src.name == name && src.peer.is_empty() && src.sameness_group.is_empty()
}

/// `GET`: the intention from `source` (may be `peer:<p>/svc`) to `destination`; 404 `Intention
/// not found` when absent.
pub fn exact_get(
    entries: &ConfigEntries,
    source: &str,
    destination: &str,
) -> Result<Intention, IntentionError> {
    let src = parse_source(source, true)?;
    let dst = parse_destination(destination)?;
    check_namespace(&src.namespace).map_err(|e| {
        internal(format!(
            "Invalid SourceNS {}: {e}",
            go_quote(&src.namespace)
        ))
    })?;
    check_namespace(&dst.namespace).map_err(|e| {
        internal(format!(
            "Invalid DestinationNS {}: {e}",
            go_quote(&dst.namespace)
        ))
    })?;
    let entry =
        entry_for(entries, &dst.name).ok_or_else(|| IntentionError::NotFound(NOT_FOUND.into()))?;
    let idx = entry
        .sources
        .iter()
        .position(|s| s.name == src.name && s.peer == src.peer && s.sameness_group.is_empty())
        .ok_or_else(|| IntentionError::NotFound(NOT_FOUND.into()))?;
    Intention::from_source(entry, idx).ok_or_else(|| IntentionError::NotFound(NOT_FOUND.into()))
}

/// The partial Intention a PUT body may carry (`DisallowUnknownFields`); names, namespaces and
/// `ID` are taken from the query or cleared, times and `Hash` are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct IntentionBody {
    #[serde(rename = "ID")]
    pub(super) id: String,
    #[serde(rename = "Description")]
    pub(super) description: String,
    #[serde(rename = "SourceNS")]
    pub(super) source_ns: String,
    #[serde(rename = "SourceName")]
    pub(super) source_name: String,
    #[serde(rename = "DestinationNS")]
    pub(super) destination_ns: String,
    #[serde(rename = "DestinationName")]
    pub(super) destination_name: String,
    #[serde(rename = "SourcePartition")]
    pub(super) source_partition: String,
    #[serde(rename = "DestinationPartition")]
    pub(super) destination_partition: String,
    #[serde(rename = "SourcePeer")]
    pub(super) source_peer: String,
    #[serde(rename = "SourceSamenessGroup")]
    _source_sameness_group: String,
    #[serde(rename = "SourceType")]
    pub(super) source_type: String,
    #[serde(rename = "Action")]
    pub(super) action: String,
    #[serde(rename = "Permissions")]
    pub(super) permissions: Vec<IntentionPermission>,
    #[serde(rename = "JWT")]
    _jwt: Option<IntentionJwtRequirement>,
    #[serde(rename = "DefaultAddr")]
    _default_addr: String,
    #[serde(rename = "DefaultPort")]
    _default_port: i64,
    #[serde(rename = "Meta")]
    pub(super) meta: BTreeMap<String, String>,
    #[serde(rename = "Precedence")]
    _precedence: i64,
    #[serde(rename = "CreatedAt")]
    _created_at: Option<Value>,
    #[serde(rename = "UpdatedAt")]
    _updated_at: Option<Value>,
    #[serde(rename = "Hash")]
    _hash: Option<Value>,
    #[serde(rename = "CreateIndex")]
    _create_index: u64,
    #[serde(rename = "ModifyIndex")]
    _modify_index: u64,
}

const BODY_FIELDS: &[&str] = &[
    "ID",
    "Description",
    "SourceNS",
    "SourceName",
    "DestinationNS",
    "DestinationName",
    "SourcePartition",
    "DestinationPartition",
    "SourcePeer",
    "SourceSamenessGroup",
    "SourceType",
    "Action",
    "Permissions",
    "DefaultAddr",
    "DefaultPort",
    "Meta",
    "Precedence",
    "CreatedAt",
    "UpdatedAt",
    "Hash",
    "CreateIndex",
    "ModifyIndex",
    // IntentionPermission and below.
    "HTTP",
    "JWT",
    "PathExact",
    "PathPrefix",
    "PathRegex",
    "Header",
    "Methods",
    "Name",
    "Present",
    "Exact",
    "Prefix",
    "Suffix",
    "Contains",
    "Regex",
    "Invert",
    "IgnoreCase",
    "Providers",
    "VerifyClaims",
    "Path",
    "Value",
];

/// Go's decoder leaves a field at its zero value for `null`; serde would reject it.
fn drop_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, drop_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(drop_nulls).collect()),
        other => other,
    }
}

pub(super) fn decode_body(body: &[u8]) -> Result<IntentionBody, IntentionError> {
    const SCHEMA: KeySchema = KeySchema {
        canonical: BODY_FIELDS,
        opaque: &["Meta"],
        keyed: &[],
    };
    let value = parse_json(body).map_err(|e| IntentionError::Decode(e.0))?;
    decode_value(drop_nulls(value), &SCHEMA).map_err(|e| IntentionError::Decode(e.0))
}

pub(super) fn config_err(e: ConfigError) -> IntentionError {
    match e {
        ConfigError::Invalid(s) => internal(s),
        other => internal(other.to_string()),
    }
}

/// `PUT`: upserts the source into the destination's `service-intentions` entry (replacing a
/// same-name source, else appending), validated like a config entry write.
pub fn exact_put(
    entries: &mut ConfigEntries,
    source: &str,
    destination: &str,
    body: &[u8],
    index: u64,
) -> Result<(), IntentionError> {
    let (src, dst) = parse_exact(source, destination)?;
    let ixn = decode_body(body)?;
    if !ixn.source_peer.is_empty() {
        return Err(internal(
            "SourcePeer field is not supported on this endpoint. Use config entries instead".into(),
        ));
    }
    let prev = entry_for(entries, &dst.name);
    if !ixn.meta.is_empty() {
        match prev {
            None => return Err(internal("Meta must not be specified".into())),
            Some(p) if p.meta != ixn.meta => {
                return Err(internal(
                    "Meta must not be specified, or should be unchanged during an update.".into(),
                ));
            }
            Some(_) => {}
        }
    }
    // CE has no namespaces on config entry sources: the query's namespace is dropped.
    let new_source = SourceIntention {
        name: src.name.clone(),
        action: ixn.action,
        permissions: ixn.permissions,
        source_type: ixn.source_type,
        description: ixn.description,
        ..SourceIntention::default()
    };
    let mut entry = prev.cloned().unwrap_or_else(|| ServiceIntentions {
        kind: Kind::ServiceIntentions.as_str().into(),
        name: dst.name.clone(),
        ..ServiceIntentions::default()
    });
    match entry
        .sources
        .iter_mut()
        .find(|s| is_local_source(s, &src.name))
    {
        Some(slot) => *slot = new_source,
        None => entry.sources.push(new_source),
    }
    entries
        .upsert(ConfigEntry::ServiceIntentions(entry), None, index)
        .map_err(config_err)?;
    Ok(())
}

/// `DELETE`: removes the source; idempotent. The entry goes away with its last source.
pub fn exact_delete(
    entries: &mut ConfigEntries,
    source: &str,
    destination: &str,
    index: u64,
) -> Result<(), IntentionError> {
    let (src, dst) = parse_exact(source, destination)?;
    let Some(prev) = entry_for(entries, &dst.name) else {
        return Ok(());
    };
    let Some(pos) = prev
        .sources
        .iter()
        .position(|s| is_local_source(s, &src.name))
    else {
        return Ok(());
    };
    let mut entry = prev.clone();
    entry.sources.remove(pos);
    if entry.sources.is_empty() {
        entries
            .delete(Kind::ServiceIntentions, &dst.name, None, index)
            .map_err(config_err)?;
    } else {
        entries
            .upsert(ConfigEntry::ServiceIntentions(entry), None, index)
            .map_err(config_err)?;
    }
    Ok(())
}
