//! The legacy by-ID intention API Consul CE still serves (`POST /v1/connect/intentions`,
//! `GET|PUT|DELETE /v1/connect/intentions/:id`), as `Intention.Apply`'s legacy create, update and
//! delete and `Intention.Get` by ID do it: each intention is one source of its destination's
//! `service-intentions` entry carrying `LegacyID`, `LegacyMeta` and the legacy times, written with
//! `LegacyNormalize`/`LegacyValidate`. An entry written through config entries (or `/exact`) has
//! sources without IDs, and the legacy API then refuses to touch it.

use serde_json::{Value, json};

use super::exact::{IntentionBody, config_err, decode_body, entry_for};
use super::names::check_namespace;
use super::{Intention, IntentionError};
use crate::model::config_entry::{
    ConfigEntries, Kind, ServiceIntentions, SourceIntention, go_quote,
};

/// `ErrIntentionNotFound`.
const NOT_FOUND: &str = "Intention not found";

fn internal(s: impl Into<String>) -> IntentionError {
    IntentionError::Internal(s.into())
}

/// The entry and source position holding legacy ID `id`.
fn find(entries: &ConfigEntries, id: &str) -> Option<(ServiceIntentions, usize)> {
    if id.is_empty() {
        return None;
    }
    entries.intentions().find_map(|si| {
        si.sources
            .iter()
            .position(|s| s.legacy_id == id)
            .map(|i| (si.clone(), i))
    })
}

/// go-memdb's `UUIDFieldIndex.FromArgs` on the ID (the legacy-ID index), wrapped as
/// `configIntentionGetTxn` wraps it.
fn check_uuid(id: &str) -> Result<(), String> {
    let fail = |m: String| Err(format!("failed config entry lookup: {m}"));
    if id.len() != 36 {
        return fail("UUID must be 36 characters".into());
    }
    let hyphens = id.matches('-').count();
    if hyphens > 4 {
        return fail(format!(
            "UUID should have maximum of 4 \"-\"; got {hyphens}"
        ));
    }
    let hex: String = id.chars().filter(|c| *c != '-').collect();
    if !hex.len().is_multiple_of(2) {
        return fail("Input (without hyphens) must be even length".into());
    }
    if let Some(bad) = hex.chars().find(|c| !c.is_ascii_hexdigit()) {
        return fail(format!(
            "Invalid UUID: encoding/hex: invalid byte: U+{:04X} '{bad}'",
            u32::from(bad)
        ));
    }
    Ok(())
}

/// `checkLegacyIntentionApplyAllowed`: every source of the entry must have a legacy ID.
fn check_legacy_allowed(entry: &ServiceIntentions) -> Result<(), IntentionError> {
    if entry.sources.iter().all(|s| !s.legacy_id.is_empty()) {
        return Ok(());
    }
    Err(internal(format!(
        "cannot use legacy intention API to edit intentions with a destination of {} after \
         editing them via a service-intentions config entry",
        go_quote(&entry.name)
    )))
}

/// The request body of create and update, decoded as the HTTP handler decodes it; `create`
/// selects Consul's texts (create: 500 `Failed to decode request body: ...`; update: 400
/// `Request decode failed: ...`). Then the partition checks (400) and CE's namespace check.
pub fn parse_body(body: &[u8], create: bool) -> Result<IntentionBodyView, IntentionError> {
    let ixn = decode_body(body).map_err(|e| match e {
        IntentionError::Decode(d) if create => {
            internal(format!("Failed to decode request body: {d}"))
        }
        other => other,
    })?;
    let bad_partition = |p: &str| !p.is_empty() && p != "default";
    if bad_partition(&ixn.destination_partition) {
        return Err(IntentionError::BadRequest(
            "Cannot specify a destination partition with this endpoint".into(),
        ));
    }
    if bad_partition(&ixn.source_partition) {
        return Err(IntentionError::BadRequest(
            "Cannot specify a source partition with this endpoint".into(),
        ));
    }
    for (field, ns) in [
        ("SourceNS", &ixn.source_ns),
        ("DestinationNS", &ixn.destination_ns),
    ] {
        if !ns.is_empty() {
            check_namespace(ns)
                .map_err(|e| internal(format!("Invalid {field} {}: {e}", go_quote(ns))))?;
        }
    }
    Ok(IntentionBodyView(ixn))
}

/// A decoded legacy body; `destination` is what the ACL check (`intention:write`) looks at.
#[derive(Debug)]
pub struct IntentionBodyView(IntentionBody);

impl IntentionBodyView {
    /// `DestinationName` as given.
    pub fn destination(&self) -> &str {
        &self.0.destination_name
    }
}

/// `Intention.Validate` for the fields the simulator models (names set); the rest is the
/// entry's `LegacyValidate`.
fn to_source(
    ixn: IntentionBody,
    id: &str,
    created: Value,
    updated: Value,
) -> Result<SourceIntention, IntentionError> {
    if ixn.source_name.is_empty() {
        return Err(internal("SourceName must be set"));
    }
    if ixn.destination_name.is_empty() {
        return Err(internal("DestinationName must be set"));
    }
    Ok(SourceIntention {
        name: ixn.source_name,
        action: ixn.action,
        permissions: ixn.permissions,
        legacy_id: id.to_owned(),
        source_type: if ixn.source_type.is_empty() {
            "consul".into()
        } else {
            ixn.source_type
        },
        description: ixn.description,
        legacy_meta: ixn.meta,
        legacy_create_time: Some(created),
        legacy_update_time: Some(updated),
        peer: ixn.source_peer,
        ..SourceIntention::default()
    })
}

/// `POST /v1/connect/intentions` after the ACL check: appends a source with the new `id` to the
/// destination's entry (creating it) and returns the ID. `now` is RFC 3339 (Go's time JSON).
pub fn legacy_create(
    entries: &mut ConfigEntries,
    body: IntentionBodyView,
    id: &str,
    now: &str,
    index: u64,
) -> Result<String, IntentionError> {
    let ixn = body.0;
    if !ixn.id.is_empty() {
        return Err(internal("ID must be empty when creating a new intention"));
    }
    let destination = ixn.destination_name.clone();
    let source = to_source(ixn, id, json!(now), json!(now))?;
    let entry = match entry_for(entries, &destination) {
        Some(prev) => {
            check_legacy_allowed(prev)?;
            let mut e = prev.clone();
            e.sources.push(source);
            e
        }
        None => ServiceIntentions {
            kind: Kind::ServiceIntentions.as_str().into(),
            name: destination,
            sources: vec![source],
            ..ServiceIntentions::default()
        },
    };
    entries
        .upsert_legacy_intentions(entry, index)
        .map_err(config_err)?;
    Ok(id.to_owned())
}

/// `GET /v1/connect/intentions/:id`: 404 `Intention not found` when no source has that ID;
/// `can_read(source, destination)` is `Intention.CanRead` (403 `Permission denied`).
pub fn legacy_get(
    entries: &ConfigEntries,
    id: &str,
    can_read: &dyn Fn(&str, &str) -> bool,
) -> Result<Intention, IntentionError> {
    // The handler turns an error mentioning "UUID" into a 400.
    check_uuid(id).map_err(IntentionError::BadRequest)?;
    let (entry, idx) =
        find(entries, id).ok_or_else(|| IntentionError::NotFound(NOT_FOUND.into()))?;
    let ixn = Intention::from_source(&entry, idx)
        .ok_or_else(|| IntentionError::NotFound(NOT_FOUND.into()))?;
    if !can_read(&ixn.source_name, &ixn.destination_name) {
        return Err(IntentionError::PermissionDenied);
    }
    Ok(ixn)
}

/// `PUT /v1/connect/intentions/:id`: replaces the source with that ID (keeping its create time);
/// the destination cannot change. `can_write(destination)` is checked on the stored intention.
pub fn legacy_update(
    entries: &mut ConfigEntries,
    id: &str,
    body: IntentionBodyView,
    now: &str,
    index: u64,
    can_write: &dyn Fn(&str) -> bool,
) -> Result<(), IntentionError> {
    check_uuid(id).map_err(|e| internal(format!("Intention lookup failed: {e}")))?;
    let Some((mut entry, idx)) = find(entries, id) else {
        return Err(internal(format!(
            "Cannot modify non-existent intention: '{id}'"
        )));
    };
    if !can_write(&entry.name) {
        return Err(IntentionError::PermissionDenied);
    }
    let ixn = body.0;
    if ixn.destination_name != entry.name {
        return Err(internal(
            "Cannot modify Destination partition/namespace/name for an intention once it exists.",
        ));
    }
    let created = entry.sources[idx]
        .legacy_create_time
        .clone()
        .unwrap_or_else(|| json!(now));
    let source = to_source(ixn, id, created, json!(now))?;
    check_legacy_allowed(&entry)?;
    entry.sources[idx] = source;
    entries
        .upsert_legacy_intentions(entry, index)
        .map_err(config_err)
}

/// `DELETE /v1/connect/intentions/:id`: removes that source (the entry with its last one).
pub fn legacy_delete(
    entries: &mut ConfigEntries,
    id: &str,
    index: u64,
    can_write: &dyn Fn(&str) -> bool,
) -> Result<(), IntentionError> {
    check_uuid(id).map_err(|e| internal(format!("Intention lookup failed: {e}")))?;
    let Some((mut entry, idx)) = find(entries, id) else {
        return Err(internal(format!(
            "Cannot delete non-existent intention: '{id}'"
        )));
    };
    if !can_write(&entry.name) {
        return Err(IntentionError::PermissionDenied);
    }
    check_legacy_allowed(&entry)?;
    entry.sources.remove(idx);
    if entry.sources.is_empty() {
        entries
            .delete(Kind::ServiceIntentions, &entry.name, None, index)
            .map_err(config_err)?;
        return Ok(());
    }
    entries
        .upsert_legacy_intentions(entry, index)
        .map_err(config_err)
}
