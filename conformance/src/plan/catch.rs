//! The self-test's judgement of one trial (a scenario run against a deliberately broken proxy
//! or environment): caught only when the proxy became ready, the harness did not fail, and the
//! checks the scenario's `catches` entry names failed (any check of the timeline for an entry
//! that names none). A readiness failure, a harness error, an interruption or a failure of some
//! other check is reported as what it is, never as a catch. Pure: it reads a finished result.

use std::fmt;

use reports::{ENVIRONMENT_CHECK, ScenarioResult, Verdict};
use scenarios::Catch;

/// The check the runner records when the proxy's listeners never accepted connections.
pub const PROXY_READY: &str = "proxy ready";

/// Checks the harness records about the run itself rather than about a step of the timeline
/// (readiness, declared features, the environment, xDS applicability): never a catch.
const GATES: &[&str] = &[PROXY_READY, "features", ENVIRONMENT_CHECK, "xds"];

/// Why a trial is not a catch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// The harness itself failed (`ScenarioResult::error`): says nothing about the proxy.
    HarnessError(String),
    /// The broken proxy never became ready: a crash or a start-up failure, not the behaviour
    /// the scenario tests.
    NotReady(String),
    /// The run was interrupted before the scenario was verified.
    Interrupted,
    /// Not run (not supported here, or skipped).
    NotRun(Verdict),
    /// No check of the timeline failed.
    NothingFailed,
    /// Checks failed, but not (all of) the ones the entry names.
    OtherChecks {
        /// The named checks that did not fail.
        missing: Vec<String>,
        /// The checks that did.
        failed: Vec<String>,
    },
}

impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::HarnessError(e) => write!(f, "harness error, not a catch: {e}"),
            Self::NotReady(why) => write!(
                f,
                "the proxy never became ready ({why}): a start-up failure, not a catch of the \
                 behaviour the scenario tests"
            ),
            Self::Interrupted => f.write_str("interrupted before the scenario was verified"),
            Self::NotRun(v) => write!(f, "the scenario did not run ({v})"),
            Self::NothingFailed => f.write_str("no check of the timeline failed"),
            Self::OtherChecks { missing, failed } => write!(
                f,
                "the named check(s) {} did not fail; failed instead: {}",
                scenarios::catch_quoted(missing),
                if failed.is_empty() {
                    "none".to_owned()
                } else {
                    scenarios::catch_quoted(failed)
                }
            ),
        }
    }
}

/// The timeline checks that failed in `result` (gates excluded), each name once, in order.
pub fn failed_checks(result: &ScenarioResult) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in &result.checks {
        if c.verdict == Verdict::Fail && !GATES.contains(&c.name.as_str()) && !out.contains(&c.name)
        {
            out.push(c.name.clone());
        }
    }
    out
}

/// Judges one trial: `Ok` with the failed checks that caught it, or why it is not a catch.
pub fn judge(result: &ScenarioResult, catch: &Catch) -> Result<Vec<String>, Miss> {
    if let Some(e) = &result.error {
        return Err(Miss::HarnessError(format!("[{}] {}", e.kind, e.message)));
    }
    if let Some(c) = result
        .checks
        .iter()
        .find(|c| c.name == PROXY_READY && c.verdict != Verdict::Pass)
    {
        return Err(Miss::NotReady(c.observed.clone()));
    }
    match result.graded_verdict() {
        Verdict::Interrupted => return Err(Miss::Interrupted),
        v @ (Verdict::NotSupported | Verdict::Skipped) => return Err(Miss::NotRun(v)),
        _ => {}
    }
    let failed = failed_checks(result);
    if failed.is_empty() {
        return Err(Miss::NothingFailed);
    }
    let missing: Vec<String> = catch
        .checks
        .iter()
        .filter(|c| !failed.contains(c))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(Miss::OtherChecks { missing, failed });
    }
    Ok(failed)
}

#[cfg(test)]
mod tests;
