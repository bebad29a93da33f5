//! One attempt of a scenario run several times (`--repeat N`): its verdict, duration, error kind
//! and the verdict of each of its checks, enough to tell whether attempts agree.

use serde::{Deserialize, Serialize};

use super::scenario::ScenarioResult;
use super::verdict::{Requirement, Verdict};

/// What one attempt of a repeated scenario showed (the full detail is kept only for the
/// scenario's representative attempt).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// This attempt's own verdict, graded like a single run (its mark when no check ran).
    pub verdict: Verdict,
    pub duration_ms: u64,
    /// Every check of the attempt, in the order decided.
    pub checks: Vec<AttemptCheck>,
    /// The harness error's kind, when the harness failed in this attempt.
    pub error_kind: Option<String>,
}

/// One check of an attempt: its name, level and verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptCheck {
    pub name: String,
    pub verdict: Verdict,
    pub requirement: Requirement,
}

// === impl Attempt ===

impl Attempt {
    /// The summary of one attempt's result, with the `verdict` grading gave it.
    pub fn of(result: &ScenarioResult, verdict: Verdict) -> Self {
        Self {
            verdict,
            duration_ms: result.duration_ms,
            checks: result
                .checks
                .iter()
                .map(|c| AttemptCheck {
                    name: c.name.clone(),
                    verdict: c.verdict,
                    requirement: c.requirement,
                })
                .collect(),
            error_kind: result.error.as_ref().map(|e| e.kind.clone()),
        }
    }
}
