//! Loading a scenario file: TOML text to a validated [`Scenario`], with errors that name the
//! file, the 1-based line and the field (`steps[3].check.identity`). Syntax errors take their line
//! from toml's span; type and validation errors are located by walking the field path through the
//! spanned document.

mod repr;

use serde::Deserialize;
use toml::de::{DeTable, DeValue};

use crate::error::{FieldError, FieldPath, ScenarioError, Seg};
use crate::model::Scenario;
use crate::validate::check_scenario;

/// Parses and validates one scenario file. `path` is only used in errors.
///
/// Runs [`crate::validate`] too (with lines), so a scenario returned here is valid on its own;
/// ids unique across files is [`crate::validate_all`]'s job.
pub fn parse(path: &str, text: &str) -> Result<Scenario, ScenarioError> {
    let doc = DeTable::parse(text).map_err(|e| ScenarioError {
        path: path.to_owned(),
        line: e.span().map(|s| line_of(text, s.start)),
        field: None,
        message: e.message().to_owned(),
    })?;
    let scenario = deserialize(&doc).map_err(|(fe, span)| {
        let line = locate(&doc, &fe.field)
            .or(span)
            .map(|offset| line_of(text, offset))
            .unwrap_or(1);
        ScenarioError {
            path: path.to_owned(),
            line: Some(line),
            field: fe.field.rendered(),
            message: fe.message,
        }
    })?;
    check_scenario(&scenario).map_err(|fe| ScenarioError {
        path: path.to_owned(),
        line: Some(locate(&doc, &fe.field).map_or(1, |offset| line_of(text, offset))),
        field: fe.field.rendered(),
        message: fe.message,
    })?;
    Ok(scenario)
}

/// [`parse`] for a file's raw bytes: text that is not UTF-8 is refused with the line of the first
/// bad byte (reading the file with `read_to_string` would only say "invalid UTF-8", no line).
pub fn parse_bytes(path: &str, bytes: &[u8]) -> Result<Scenario, ScenarioError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let valid = e.valid_up_to();
        ScenarioError {
            path: path.to_owned(),
            line: Some(bytes[..valid].iter().filter(|b| **b == b'\n').count() + 1),
            field: None,
            message: format!("not valid UTF-8 (byte offset {valid})"),
        }
    })?;
    parse(path, text)
}

/// Deserializes the spanned document; an error comes with its field and toml's span (start
/// offset) as a fallback location.
fn deserialize(doc: &toml::Spanned<DeTable<'_>>) -> Result<Scenario, (FieldError, Option<usize>)> {
    let de = toml::de::Deserializer::from(doc.clone());
    let mut track = serde_path_to_error::Track::new();
    let tracked = serde_path_to_error::Deserializer::new(de, &mut track);
    match repr::Parsed::deserialize(tracked) {
        Ok(repr::Parsed(s)) => Ok(s),
        Err(e) => {
            let outer = repr::convert_path(&track.path());
            let (inner, message) = repr::decode(e.message());
            Err((
                FieldError::new(outer.join(&inner), message),
                e.span().map(|s| s.start),
            ))
        }
    }
}

/// The byte offset where `field` (or the deepest part of it that exists) is written: the key of a
/// table entry, or the element of an array.
fn locate(doc: &toml::Spanned<DeTable<'_>>, field: &FieldPath) -> Option<usize> {
    let mut found = None;
    let mut table: Option<&DeTable<'_>> = Some(doc.get_ref());
    let mut value: Option<&DeValue<'_>> = None;
    for seg in &field.0 {
        match seg {
            Seg::Key(k) => {
                let Some(t) = table.or_else(|| value.and_then(DeValue::as_table)) else {
                    break;
                };
                let Some((key, v)) = t.get_key_value(k.as_str()) else {
                    break;
                };
                found = Some(key.span().start);
                value = Some(v.get_ref());
            }
            Seg::Index(i) => {
                let Some(item) = value.and_then(DeValue::as_array).and_then(|a| a.get(*i)) else {
                    break;
                };
                found = Some(item.span().start);
                value = Some(item.get_ref());
            }
        }
        table = None;
    }
    found
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests;
