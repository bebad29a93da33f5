//! Grading: a scenario's verdict from its checks, a profile's outcome from its scenarios
//! (`Report::grade`), and the CI gate on one profile (`Report::gate`, `GateFailure`). A
//! repeated scenario's verdict from its attempts is in `grade/flaky.rs`.

mod flaky;

use std::fmt;

use serde::Serialize;

use crate::model::{
    Counts, ErrorInfo, Outcome, Profile, ProfileResult, Report, Requirement, ScenarioResult,
    Verdict,
};

/// `ErrorInfo::kind` that grading records on a scenario that was neither skipped nor
/// unsupported but recorded no check (a harness bug: nothing was verified).
pub const NO_CHECKS_ERROR_KIND: &str = "no_checks_recorded";

/// The name of the check by which a runner says a `not-supported` scenario could not run *in
/// this environment* (not root, a tool missing, ...), rather than for a feature the proxy does
/// not declare. Such a scenario is not counted either, but its profile is at best `partial`: a
/// claimed feature went unverified.
pub const ENVIRONMENT_CHECK: &str = "environment";

/// Why `Report::gate` refused a profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub struct GateFailure {
    pub profile: Profile,
    pub outcome: Outcome,
    /// Counted scenarios of the profile that did not pass, worst first.
    pub offenders: Vec<Offender>,
}

/// One scenario that kept a profile from `success`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Offender {
    pub id: String,
    pub verdict: Verdict,
}

// === impl Report ===

impl Report {
    /// Computes every scenario's verdict from its checks and every profile's outcome from its
    /// scenarios. Idempotent. See `SCHEMA.md` ("Grading") for the rules.
    pub fn grade(&mut self) {
        for scenario in &mut self.scenarios {
            let verdict = scenario_verdict(scenario);
            if verdict == Verdict::Error && is_vacuous(scenario) {
                scenario.error = Some(ErrorInfo::new(
                    NO_CHECKS_ERROR_KIND,
                    "the scenario was neither skipped nor unsupported but recorded no check",
                ));
            }
            scenario.verdict = verdict;
        }
        self.profiles = Profile::ALL
            .into_iter()
            .map(|profile| {
                let scenarios = self.scenarios.iter().filter(|s| s.profile == profile);
                profile_result(
                    profile,
                    scenarios.map(|s| (s.verdict, environment_only(s))),
                    self.allow_flaky,
                )
            })
            .collect();
    }

    /// `self` after [`Report::grade`].
    pub fn graded(mut self) -> Self {
        self.grade();
        self
    }

    /// Ok only when `profile` is `success`, a `flaky` scenario failing it. Recomputes the grade
    /// from the checks rather than trusting the stored scenario verdicts and `profiles`, so
    /// stale or edited grades cannot decide it.
    pub fn gate(&self, profile: Profile) -> Result<(), GateFailure> {
        self.gate_with(profile, false)
    }

    /// [`Report::gate`], where `allow_flaky` says whether a `flaky` scenario may leave its
    /// profile a success (decided by the caller, whatever the report's own `allow_flaky`).
    pub fn gate_with(&self, profile: Profile, allow_flaky: bool) -> Result<(), GateFailure> {
        let graded: Vec<(&ScenarioResult, Verdict)> = self
            .scenarios
            .iter()
            .filter(|s| s.profile == profile)
            .map(|s| (s, scenario_verdict(s)))
            .collect();
        let result = profile_result(
            profile,
            graded.iter().map(|(s, v)| (*v, environment_only(s))),
            allow_flaky,
        );
        if result.outcome == Outcome::Success {
            return Ok(());
        }
        let mut offenders: Vec<Offender> = graded
            .into_iter()
            .filter(|(s, v)| match v {
                Verdict::Pass => false,
                Verdict::NotSupported => environment_only(s),
                Verdict::Flaky => !allow_flaky,
                _ => true,
            })
            .map(|(s, verdict)| Offender {
                id: s.id.clone(),
                verdict,
            })
            .collect();
        offenders.sort_by_key(|o| o.verdict.rank());
        Err(GateFailure {
            profile,
            outcome: result.outcome,
            offenders,
        })
    }
}

// === impl ScenarioResult ===

impl ScenarioResult {
    /// The verdict `Report::grade` gives this scenario (ignores the stored one unless no check
    /// ran).
    pub fn graded_verdict(&self) -> Verdict {
        scenario_verdict(self)
    }

    /// For a repeated scenario: the names of the checks whose verdict differed between
    /// attempts (or that some attempts did not reach), sorted; empty when they agree.
    pub fn disagreeing_checks(&self) -> Vec<String> {
        flaky::disagreeing_checks(&self.attempts)
    }
}

// === impl GateFailure ===

impl fmt::Display for GateFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.outcome == Outcome::NotRun {
            return write!(
                f,
                "profile {} was not run: no scenario of it ran (or all were not supported)",
                self.profile
            );
        }
        write!(
            f,
            "profile {} is {}, not success: {} scenario(s) did not pass:",
            self.profile,
            self.outcome,
            self.offenders.len()
        )?;
        for (i, o) in self.offenders.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            write!(f, "{sep}{} ({})", o.id, o.verdict)?;
        }
        Ok(())
    }
}

// === grading rules ===

/// A scenario's verdict: the runner's interrupted mark first; from its attempts when it ran more than once (`grade/flaky.rs`), else
/// from its checks ([`single_verdict`]).
fn scenario_verdict(s: &ScenarioResult) -> Verdict {
    if is_interrupted(s) {
        // Whatever ran, the scenario was not played to its end.
        return Verdict::Interrupted;
    }
    if s.attempts.len() > 1 {
        return flaky::verdict(&s.attempts);
    }
    let checks: Vec<(Verdict, Requirement)> = s
        .checks
        .iter()
        .map(|c| (c.verdict, c.requirement))
        .collect();
    single_verdict(s.error.is_some(), &checks, s.verdict)
}

/// One run's verdict: error > failed MUST > non-strict (failed SHOULD, or a check already
/// graded non-strict) > skipped check > passed check; when no check ran, the runner's
/// skipped/not-supported `mark` (or that of its not-run checks) stands, and a run with no
/// check at all and no mark is an error.
fn single_verdict(error: bool, checks: &[(Verdict, Requirement)], mark: Verdict) -> Verdict {
    let has = |v: Verdict| checks.iter().any(|c| c.0 == v);
    let failed = |r: Requirement| checks.iter().any(|c| c.0 == Verdict::Fail && c.1 == r);
    if error || has(Verdict::Error) {
        Verdict::Error
    } else if failed(Requirement::Must) {
        Verdict::Fail
    } else if has(Verdict::NonStrict) || failed(Requirement::Should) {
        Verdict::NonStrict
    } else if has(Verdict::Pass) {
        // Some checks ran; a skipped one means the scenario was not fully verified.
        if has(Verdict::Skipped) {
            Verdict::Skipped
        } else {
            Verdict::Pass
        }
    } else if matches!(mark, Verdict::Skipped | Verdict::NotSupported) {
        mark
    } else if has(Verdict::Skipped) {
        Verdict::Skipped
    } else if has(Verdict::NotSupported) {
        Verdict::NotSupported
    } else {
        Verdict::Error
    }
}

/// The runner's interrupted mark, or its "interrupted by ..." timeline event (so an edited
/// stored verdict cannot turn an interrupted scenario into a pass at the gate).
fn is_interrupted(s: &ScenarioResult) -> bool {
    s.verdict == Verdict::Interrupted
        || s.timeline
            .iter()
            .any(|e| e.label.starts_with(crate::text::INTERRUPTED_LABEL))
}

/// No error, no check, no skipped/not-supported mark: nothing was verified.
fn is_vacuous(s: &ScenarioResult) -> bool {
    s.error.is_none()
        && s.checks.is_empty()
        && !matches!(
            s.verdict,
            Verdict::Skipped | Verdict::NotSupported | Verdict::Interrupted
        )
}

/// Whether `s` is not supported only because the environment cannot run it.
fn environment_only(s: &ScenarioResult) -> bool {
    s.checks
        .iter()
        .any(|c| c.name == ENVIRONMENT_CHECK && c.verdict == Verdict::NotSupported)
}

/// A profile's outcome from its scenarios' `(verdict, not supported by the environment)`; a
/// `flaky` one fails it unless `allow_flaky`.
fn profile_result(
    profile: Profile,
    verdicts: impl Iterator<Item = (Verdict, bool)>,
    allow_flaky: bool,
) -> ProfileResult {
    let mut counts = Counts::default();
    let mut unverified = 0;
    for (v, environment) in verdicts {
        counts.add(v);
        if v == Verdict::NotSupported && environment {
            unverified += 1;
        }
    }
    let outcome = if counts.counted() == 0 {
        Outcome::NotRun
    } else if counts.fail + counts.error > 0 || (counts.flaky > 0 && !allow_flaky) {
        Outcome::Failure
    } else if counts.skipped + counts.non_strict + counts.interrupted + unverified > 0 {
        Outcome::Partial
    } else {
        Outcome::Success
    };
    ProfileResult {
        profile,
        outcome,
        counts,
    }
}

#[cfg(test)]
mod tests;
