//! Intentions as the intention APIs see them: one per source of each `service-intentions`
//! entry. Match (`/v1/connect/intentions/match`), check (`/check`), the agent's authorize
//! decision (`/v1/agent/connect/authorize`), the default policy, and precedence ordering.
//! Exact CRUD lives in `intention/exact.rs`. Pure and synchronous.

mod decide;
mod exact;
mod legacy;
mod names;

#[cfg(test)]
mod exact_tests;
#[cfg(test)]
mod index_tests;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::model::config_entry::{
    ConfigEntries, IntentionJwtRequirement, IntentionPermission, ServiceIntentions,
    SourceIntention, go_quote,
};

pub use decide::{Action, Decision, DefaultPolicy, authorize, authorize_matched, check};
pub use exact::{exact_delete, exact_get, exact_put};
pub use legacy::{
    IntentionBodyView, legacy_create, legacy_delete, legacy_get, legacy_update, parse_body,
};
use names::{check_namespace, check_partition, parse_component};

/// One intention in the shape the intention APIs return (reference §4 key order).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Intention {
    /// Legacy-API intentions only: the source's `LegacyCreateTime`.
    #[serde(rename = "CreatedAt", skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Value>,
    /// Legacy-API intentions only: the source's `LegacyUpdateTime`.
    #[serde(rename = "UpdatedAt", skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Value>,
    /// Only intentions created through the legacy API (`POST /v1/connect/intentions`) have one
    /// (the source's `LegacyID`); config-entry writes clear it, as in Consul.
    #[serde(rename = "ID", skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(rename = "Description", skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(rename = "SourceNS")]
    pub source_ns: String,
    #[serde(rename = "SourceName")]
    pub source_name: String,
    #[serde(rename = "DestinationNS")]
    pub destination_ns: String,
    #[serde(rename = "DestinationName")]
    pub destination_name: String,
    #[serde(rename = "SourcePartition", skip_serializing_if = "String::is_empty")]
    pub source_partition: String,
    #[serde(
        rename = "DestinationPartition",
        skip_serializing_if = "String::is_empty"
    )]
    pub destination_partition: String,
    #[serde(rename = "SourcePeer", skip_serializing_if = "String::is_empty")]
    pub source_peer: String,
    #[serde(
        rename = "SourceSamenessGroup",
        skip_serializing_if = "String::is_empty"
    )]
    pub source_sameness_group: String,
    #[serde(rename = "SourceType")]
    pub source_type: String,
    #[serde(rename = "Action", skip_serializing_if = "String::is_empty")]
    pub action: String,
    #[serde(rename = "Permissions", skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<IntentionPermission>,
    /// The enclosing entry's JWT requirement.
    #[serde(rename = "JWT", skip_serializing_if = "Option::is_none")]
    pub jwt: Option<IntentionJwtRequirement>,
    /// The enclosing entry's `Meta`.
    #[serde(rename = "Meta", skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
    #[serde(rename = "Precedence")]
    pub precedence: i64,
    #[serde(rename = "CreateIndex")]
    pub create_index: u64,
    #[serde(rename = "ModifyIndex")]
    pub modify_index: u64,
}

impl Intention {
    fn from_source(entry: &ServiceIntentions, idx: usize) -> Option<Self> {
        let src = entry.sources.get(idx)?;
        let legacy = !src.legacy_id.is_empty();
        Some(Self {
            created_at: src.legacy_create_time.clone().filter(|_| legacy),
            updated_at: src.legacy_update_time.clone().filter(|_| legacy),
            id: src.legacy_id.clone(),
            description: src.description.clone(),
            source_ns: "default".into(),
            source_name: src.name.clone(),
            destination_ns: "default".into(),
            destination_name: entry.name.clone(),
            source_partition: String::new(),
            destination_partition: String::new(),
            source_peer: src.peer.clone(),
            source_sameness_group: src.sameness_group.clone(),
            source_type: src.source_type.clone(),
            action: src.action.clone(),
            permissions: src.permissions.clone(),
            jwt: entry.jwt.clone(),
            // `ToIntention`: a legacy intention carries its own meta.
            meta: if legacy {
                src.legacy_meta.clone()
            } else {
                entry.meta.clone()
            },
            precedence: src.precedence,
            create_index: entry.create_index,
            modify_index: entry.modify_index,
        })
    }

    /// The JSON object the intention endpoints return.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Precedence (9, 8, 6 or 5 in CE).
    pub fn precedence(&self) -> u32 {
        u32::try_from(self.precedence).unwrap_or(0)
    }

    /// True for an L7 intention (it has `Permissions` instead of an `Action`).
    pub fn is_l7(&self) -> bool {
        !self.permissions.is_empty()
    }

    /// `Intention.String()`: `default/web => default/db (Precedence: 9, Action: ALLOW)`.
    pub fn describe(&self) -> String {
        let src_prefix = if !self.source_peer.is_empty() {
            format!("peer({})/", self.source_peer)
        } else if !self.source_sameness_group.is_empty() {
            format!("sameness-group({})/", self.source_sameness_group)
        } else if !self.source_partition.is_empty() {
            format!("{}/", self.source_partition)
        } else {
            String::new()
        };
        let dst_prefix = if self.destination_partition.is_empty() {
            String::new()
        } else {
            format!("{}/", self.destination_partition)
        };
        let id = if self.id.is_empty() {
            String::new()
        } else {
            format!("ID: {}, ", self.id)
        };
        let detail = if self.is_l7() {
            format!("Permissions: {}", self.permissions.len())
        } else {
            format!("Action: {}", self.action.to_uppercase())
        };
        format!(
            "{src_prefix}{}/{} => {dst_prefix}{}/{} ({id}Precedence: {}, {detail})",
            self.source_ns,
            self.source_name,
            self.destination_ns,
            self.destination_name,
            self.precedence
        )
    }

    fn matches_destination(&self, name: &str) -> bool {
        self.destination_name == name || self.destination_name == "*"
    }

    /// A local (non-peered) source matching `name`.
    fn matches_source(&self, name: &str) -> bool {
        self.source_peer.is_empty()
            && self.source_sameness_group.is_empty()
            && (self.source_name == name || self.source_name == "*")
    }
}

/// Precedence descending, then the lexicographic tie-break tuple of reference §4 (compared on
/// borrowed fields: building the tuple from owned copies cost 16 string clones per comparison).
pub fn sort_intentions(ixns: &mut [Intention]) {
    fn key(i: &Intention) -> [&str; 8] {
        [
            &i.source_sameness_group,
            &i.source_peer,
            &i.source_partition,
            &i.source_ns,
            &i.source_name,
            &i.destination_partition,
            &i.destination_ns,
            &i.destination_name,
        ]
    }
    ixns.sort_by(|a, b| match b.precedence.cmp(&a.precedence) {
        Ordering::Equal => key(a).cmp(&key(b)),
        other => other,
    });
}

/// All intentions derived from the service-intentions entries (one per source), entries by
/// destination name, sources in stored (precedence) order.
pub fn all_intentions(entries: &ConfigEntries) -> Vec<Intention> {
    entries
        .intentions()
        .flat_map(|e| (0..e.sources.len()).filter_map(move |i| Intention::from_source(e, i)))
        .collect()
}

/// `by` of the match endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchBy {
    Source,
    Destination,
}

/// An intention endpoint error; `Display` is the HTTP body text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IntentionError {
    /// HTTP 400.
    #[error("{0}")]
    BadRequest(String),
    /// HTTP 500 (most bad input on these endpoints).
    #[error("{0}")]
    Internal(String),
    /// HTTP 404.
    #[error("{0}")]
    NotFound(String),
    /// HTTP 403, `acl.ErrPermissionDenied`.
    #[error("Permission denied")]
    PermissionDenied,
    /// HTTP 400, strict body decoding.
    #[error("Request decode failed: {0}")]
    Decode(String),
}

/// Parses and validates `by` and every `name` of the match endpoint with Consul's 500 texts.
/// Returns the service names (the part after the last `/`), in request order, for the ACL
/// checks; `match_json` takes the raw names.
pub fn parse_match_query(
    by: Option<&str>,
    names: &[String],
) -> Result<(MatchBy, Vec<String>), IntentionError> {
    let internal = |s: String| IntentionError::Internal(s);
    let by = match by {
        None => return Err(internal("required query parameter 'by' not set".into())),
        Some("source") => MatchBy::Source,
        Some("destination") => MatchBy::Destination,
        Some(_) => {
            return Err(internal(
                "'by' parameter must be one of 'source' or 'destination'".into(),
            ));
        }
    };
    if names.is_empty() {
        return Err(internal("required query parameter 'name' not set".into()));
    }
    let parsed = names
        .iter()
        .map(|n| {
            parse_component(n, false)
                .map_err(|e| internal(format!("name {} is invalid: {e}", go_quote(n))))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for p in &parsed {
        check_namespace(&p.namespace).map_err(|e| {
            internal(format!(
                "Invalid match entry namespace {}: {e}",
                go_quote(&p.namespace)
            ))
        })?;
        check_partition(&p.partition).map_err(|e| {
            internal(format!(
                "Invalid match entry partition {}: {e}",
                go_quote(&p.partition)
            ))
        })?;
    }
    Ok((by, parsed.into_iter().map(|p| p.name).collect()))
}

/// The sorted intentions matching one service name.
///
/// By destination, only the entries named `service` and `*` can match, so they are looked up by
/// name instead of scanning every entry. By source, every entry is scanned, but only the
/// matching sources are turned into intentions.
pub fn matching(entries: &ConfigEntries, by: MatchBy, service: &str) -> Vec<Intention> {
    let expand = |e: &ServiceIntentions, keep: &dyn Fn(&SourceIntention) -> bool| {
        (0..e.sources.len())
            .filter(|&i| keep(&e.sources[i]))
            .filter_map(|i| Intention::from_source(e, i))
            .collect::<Vec<_>>()
    };
    let mut out: Vec<Intention> = match by {
        MatchBy::Destination => {
            let wildcard = (service != "*").then_some("*");
            [Some(service), wildcard]
                .into_iter()
                .flatten()
                .filter_map(|name| entries.intentions_for(name))
                .flat_map(|e| expand(e, &|_| true))
                .collect()
        }
        MatchBy::Source => entries
            .intentions()
            .flat_map(|e| expand(e, &|src| source_matches(src, service)))
            .collect(),
    };
    sort_intentions(&mut out);
    out
}

/// `Intention::matches_source` on the source before it becomes an intention.
fn source_matches(src: &SourceIntention, name: &str) -> bool {
    src.peer.is_empty() && src.sameness_group.is_empty() && (src.name == name || src.name == "*")
}

/// `matching` as a scan over every intention: the definition the lookup must agree with.
#[cfg(test)]
pub(crate) fn matching_by_scan(
    entries: &ConfigEntries,
    by: MatchBy,
    service: &str,
) -> Vec<Intention> {
    let mut out: Vec<Intention> = all_intentions(entries)
        .into_iter()
        .filter(|i| match by {
            MatchBy::Destination => i.matches_destination(service),
            MatchBy::Source => i.matches_source(service),
        })
        .collect();
    sort_intentions(&mut out);
    out
}

/// The match response: `{raw name: [intentions...] | null}` (`null`, not `[]`, when nothing
/// matches, as Consul's code does); a Go map, so the names come in sorted order.
pub fn match_json(entries: &ConfigEntries, by: MatchBy, names: &[String]) -> Value {
    let mut out = BTreeMap::new();
    for raw in names {
        let service = parse_component(raw, false).map_or_else(|_| raw.clone(), |p| p.name);
        let found = matching(entries, by, &service);
        let value = if found.is_empty() {
            Value::Null
        } else {
            Value::Array(found.iter().map(Intention::to_json).collect())
        };
        out.insert(raw.clone(), value);
    }
    Value::Object(out.into_iter().collect())
}

/// `match_json` as its compact Go serialization, written straight from the intentions (no
/// `Value` tree: thousands of match watchers woken by one write each render one).
pub fn match_compact(entries: &ConfigEntries, by: MatchBy, names: &[String]) -> Vec<u8> {
    let sorted: std::collections::BTreeSet<&String> = names.iter().collect();
    let mut out = Vec::with_capacity(1024);
    out.push(b'{');
    for (n, raw) in sorted.into_iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.extend(crate::go::gojson::compact_of(raw.as_str()));
        out.push(b':');
        let service = parse_component(raw, false).map_or_else(|_| raw.clone(), |p| p.name);
        let found = matching(entries, by, &service);
        if found.is_empty() {
            out.extend_from_slice(b"null");
            continue;
        }
        out.push(b'[');
        for (i, ixn) in found.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend(crate::go::gojson::compact_of(ixn));
        }
        out.push(b']');
    }
    out.push(b'}');
    out
}
