//! JUnit for repeated scenarios, with quick-junit's reruns: a `flaky` scenario is a
//! `<failure type="flaky">` carrying a `<flakyFailure>`/`<flakyError>` per non-passing attempt,
//! or, when flaky was allowed, a passing test case carrying them (Surefire's "passed with flaky
//! runs"); a scenario that failed (errored) in every attempt carries a `<rerunFailure>`
//! (`<rerunError>`) per attempt after the representative one.

use std::time::Duration;

use quick_junit::{FlakyOrRerun, NonSuccessKind, TestCaseStatus, TestRerun};

use crate::model::{Attempt, Report, ScenarioResult, Verdict};
use crate::repeat::{attempt_line, summary};

/// The status of a `flaky` scenario.
pub(super) fn flaky_status(report: &Report, s: &ScenarioResult) -> TestCaseStatus {
    let mut st = if report.allow_flaky {
        TestCaseStatus::success()
    } else {
        let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
        st.set_message(format!("flaky: {}", summary(s)));
        st.set_type("flaky");
        st.set_description(all_attempts(s));
        st.set_rerun_kind(FlakyOrRerun::Flaky);
        st
    };
    let of = s.attempts.len();
    st.add_reruns(
        s.attempts
            .iter()
            .enumerate()
            .filter(|(_, a)| a.verdict != Verdict::Pass)
            .map(|(i, a)| rerun(a, i + 1, of)),
    );
    st
}

/// The note of an allowed `flaky` scenario (it is reported as passed).
pub(super) fn allowed_note(s: &ScenarioResult) -> String {
    format!(
        "flaky (allowed by --allow-flaky, reported as passed): {}\n{}\n",
        summary(s),
        all_attempts(s)
    )
}

/// Adds a rerun element for every attempt but the representative one to the status of a
/// repeated `fail` or `error` scenario.
pub(super) fn add_reruns(st: &mut TestCaseStatus, s: &ScenarioResult) {
    if s.attempts.len() < 2 {
        return;
    }
    let representative = representative(s);
    let of = s.attempts.len();
    st.set_rerun_kind(FlakyOrRerun::Rerun);
    st.add_reruns(
        s.attempts
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != representative)
            .map(|(i, a)| rerun(a, i + 1, of)),
    );
}

/// The attempt whose detail the scenario carries: the first non-passing one, else the first.
fn representative(s: &ScenarioResult) -> Option<usize> {
    s.attempts
        .iter()
        .position(|a| a.verdict != Verdict::Pass)
        .or((!s.attempts.is_empty()).then_some(0))
}

fn rerun(a: &Attempt, n: usize, of: usize) -> TestRerun {
    let kind = if a.verdict == Verdict::Error {
        NonSuccessKind::Error
    } else {
        NonSuccessKind::Failure
    };
    let mut r = TestRerun::new(kind);
    r.set_time(Duration::from_millis(a.duration_ms));
    r.set_message(attempt_line(a, n, of));
    r.set_type(a.error_kind.as_deref().unwrap_or(a.verdict.as_str()));
    r
}

fn all_attempts(s: &ScenarioResult) -> String {
    let of = s.attempts.len();
    s.attempts
        .iter()
        .enumerate()
        .map(|(i, a)| attempt_line(a, i + 1, of))
        .collect::<Vec<_>>()
        .join("\n")
}
