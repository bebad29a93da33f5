//! The canonical, versioned conformance report (`Report`), its grading and CI gate, and its
//! renderings: JSON (canonical), JUnit XML, Markdown (GitHub job summary) and one self-contained
//! HTML page. Pure: the only IO is `write_all`, into a directory it is handed.

mod error;
mod escape;
#[cfg(any(test, feature = "test-util"))]
pub mod fixture;
mod grade;
mod html;
mod json;
mod junit;
mod markdown;
mod model;
mod text;
mod write;

pub use self::error::ReportError;
pub use self::grade::{GateFailure, NO_CHECKS_ERROR_KIND, Offender};
pub use self::html::to_html;
pub use self::json::to_json;
pub use self::junit::to_junit;
pub use self::markdown::to_markdown;
pub use self::model::{
    Artifact, CheckResult, Counts, Environment, ErrorInfo, EventKind, HARNESS_NAME, Harness,
    Outcome, Profile, ProfileResult, ProxyInfo, Report, Requirement, SCHEMA_VERSION,
    ScenarioResult, TimelineEvent, Verdict,
};
pub use self::write::{REPORT_FILES, write_all};
