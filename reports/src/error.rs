//! `ReportError`: everything that can go wrong reading, parsing or writing a report, each variant
//! with a stable machine name (`ReportError::kind`).

use std::io;
use std::path::PathBuf;

use crate::model::SCHEMA_VERSION;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The text is not JSON at all.
    #[error("report is not valid JSON (line {line}, column {column}): {message}")]
    InvalidJson {
        line: usize,
        column: usize,
        message: String,
    },
    /// The JSON has no string `schema_version` at the top level.
    #[error("report has no string `schema_version` field; is this a conformance report?")]
    MissingSchemaVersion,
    /// The report was written with a major schema version this build cannot read.
    #[error(
        "unsupported report schema version {found:?}: this build reads major version {supported} \
         (writes {SCHEMA_VERSION:?}); use a harness of the matching version"
    )]
    UnsupportedSchemaVersion {
        found: String,
        supported: &'static str,
    },
    /// The JSON has a supported version but does not match the schema.
    #[error("report does not match schema {SCHEMA_VERSION} at `{path}`: {message}")]
    InvalidReport { path: String, message: String },
    /// A profile name that is not one of the four.
    #[error(
        "unknown profile {name:?}: expected one of core, l7, extended, transparent, l7-traffic, security"
    )]
    UnknownProfile { name: String },
    /// Writing a rendering to disk failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ReportError {
    /// The stable snake_case machine name of this error.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InvalidJson { .. } => "invalid_json",
            Self::MissingSchemaVersion => "missing_schema_version",
            Self::UnsupportedSchemaVersion { .. } => "unsupported_schema_version",
            Self::InvalidReport { .. } => "invalid_report",
            Self::UnknownProfile { .. } => "unknown_profile",
            Self::Io { .. } => "io",
        }
    }
}
