//! The canonical JSON form: `to_json` (pretty, fields in declaration order) and
//! `Report::from_json` (checks the schema version before anything else).

use serde_json::Value;

use crate::error::ReportError;
use crate::model::{Report, SCHEMA_VERSION};

/// The major schema version this build reads.
const SUPPORTED_MAJOR: &str = "1";

/// The canonical JSON report: pretty-printed, struct fields in declaration order, maps sorted by
/// key, `null` for absent optional values, and a trailing newline.
pub fn to_json(report: &Report) -> String {
    // Serialising the model cannot fail (derived `Serialize` only, string map keys, no floats);
    // should that ever change, the output is still JSON that `from_json` rejects clearly.
    let mut out = serde_json::to_string_pretty(report).unwrap_or_else(|e| {
        let error = e.to_string();
        serde_json::json!({ "schema_version": SCHEMA_VERSION, "serialization_error": error })
            .to_string()
    });
    out.push('\n');
    out
}

// === impl Report ===

impl Report {
    /// Parses a JSON report. Rejects a report whose `schema_version` has a major other than the
    /// one this build reads (before looking at any other field), and names the path of the
    /// first field that does not match the schema. Unknown fields are ignored (minor versions
    /// only add fields).
    pub fn from_json(text: &str) -> Result<Self, ReportError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ReportError::InvalidJson {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        let version = value
            .get("schema_version")
            .and_then(Value::as_str)
            .ok_or(ReportError::MissingSchemaVersion)?;
        let major = version.split('.').next().unwrap_or_default();
        if major != SUPPORTED_MAJOR {
            return Err(ReportError::UnsupportedSchemaVersion {
                found: version.to_owned(),
                supported: SUPPORTED_MAJOR,
            });
        }
        serde_path_to_error::deserialize(value).map_err(|e| ReportError::InvalidReport {
            path: e.path().to_string(),
            message: e.inner().to_string(),
        })
    }
}

#[cfg(test)]
mod tests;
