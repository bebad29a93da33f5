//! Field-level rules shared by every part of validation: Go durations, one of a known set,
//! service (and instance, upstream, connection) names, intention ends.

use crate::duration::parse_go_duration;
use crate::error::{FieldError, FieldPath};

pub(crate) fn go_duration(at: &FieldPath, text: &str) -> Result<std::time::Duration, FieldError> {
    parse_go_duration(text).map_err(|e| FieldError::new(at.clone(), e.to_string()))
}

pub(crate) fn one_of(at: &FieldPath, value: &str, known: &[&str]) -> Result<(), FieldError> {
    if known.contains(&value) {
        Ok(())
    } else {
        Err(FieldError::new(
            at.clone(),
            format!("{value:?} is not one of {}", known.join(", ")),
        ))
    }
}

/// A service (or instance, upstream, connection) name: letters, digits, `-`, `_`, `.`.
pub(crate) fn service_name(at: &FieldPath, name: &str) -> Result<(), FieldError> {
    if !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        Ok(())
    } else {
        Err(FieldError::new(
            at.clone(),
            format!("{name:?} is not a name (letters, digits, '-', '_', '.')"),
        ))
    }
}

/// An intention end: a service name or `*` (partial wildcards are invalid in Consul).
pub(super) fn intention_end(at: &FieldPath, name: &str) -> Result<(), FieldError> {
    if name == "*" {
        return Ok(());
    }
    if name.contains('*') {
        return Err(FieldError::new(
            at.clone(),
            format!("{name:?}: partial wildcards are not allowed, only \"*\""),
        ));
    }
    service_name(at, name)
}
