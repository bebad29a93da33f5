//! The canonical, versioned conformance report (`Report`), its grading and CI gate, and its
//! renderings: JSON (canonical), JUnit XML, Markdown (GitHub job summary) and one self-contained
//! HTML page. Pure: the only IO is `write_all`, into a directory it is handed.
//!
//! The JSON schema, its versioning policy and the grading rules are documented in `SCHEMA.md`.
//!
//! Modules: `model` (the report's types), `grade` (verdicts, outcomes, the gate, `flaky`),
//! `merge` (one report from a sharded run's), `json` (the canonical form), `junit`, `markdown`
//! and `html` (the renderings, sharing the phrasing of `text` and `repeat` and the escaping of
//! `escape`), `write` (`write_all`, the crate's only IO), `error` (`ReportError`) and, for
//! tests, `fixture` (a graded sample report).
//!
//! ```
//! use std::collections::BTreeMap;
//! use reports::*;
//!
//! let proxy = ProxyInfo {
//!     name: "my-proxy".into(),
//!     version: None,
//!     command: "my-proxy -proxy-id {proxy_id}".into(),
//!     features: vec!["l4".into()],
//!     bounds: BTreeMap::new(),
//!     xds_tls_mode: None,
//! };
//! let env = Environment {
//!     os: "linux".into(),
//!     arch: "x86_64".into(),
//!     cpus: 2,
//!     hostname: None,
//!     ci: false,
//!     notes: vec![],
//! };
//! let mut report = Report::new(Harness::new("0.1.0"), proxy, env, "2026-01-01T00:00:00Z", 42);
//! let mut s = ScenarioResult::new("l4-allow-deny", "web→db allowed", Profile::Core, vec![]);
//! let check = CheckResult::new("web allowed", Requirement::Must, Verdict::Pass, "echo", "echo");
//! s.checks.push(check.at(410));
//! report.scenarios.push(s);
//! report.grade();
//! assert_eq!(report.gate(Profile::Core), Ok(()));
//! assert!(report.gate(Profile::L7).is_err()); // not run
//!
//! let json = to_json(&report);
//! assert_eq!(Report::from_json(&json)?, report);
//! # Ok::<(), ReportError>(())
//! ```

#![forbid(unsafe_code)]

mod compare;
mod error;
mod escape;
#[cfg(any(test, feature = "test-util"))]
pub mod fixture;
mod grade;
mod html;
mod json;
mod junit;
mod markdown;
mod merge;
mod model;
mod repeat;
mod text;
mod write;

pub use self::compare::{Column, compare_html, compare_markdown, html_anchor, slim};
pub use self::error::ReportError;
pub use self::grade::{ENVIRONMENT_CHECK, GateFailure, NO_CHECKS_ERROR_KIND, Offender};
pub use self::html::to_html;
pub use self::json::to_json;
pub use self::junit::to_junit;
pub use self::markdown::to_markdown;
pub use self::merge::{MergeError, merge};
pub use self::model::{
    Artifact, Attempt, AttemptCheck, CheckResult, Counts, Environment, ErrorInfo, EventKind,
    HARNESS_NAME, Harness, Outcome, Profile, ProfileResult, ProxyInfo, Report, Requirement,
    SCHEMA_VERSION, ScenarioResult, ShardInfo, TimelineEvent, Verdict,
};
pub use self::text::{INTERRUPTED_LABEL, NOT_STARTED_LABEL, environment_fix};
pub use self::write::{REPORT_FILES, write_all};
