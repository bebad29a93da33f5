//! Folding attempts into one result: the representative attempt and the summaries.

use reports::{CheckResult, Profile, Requirement, ScenarioResult, Verdict};

use super::fold;

fn attempt(verdict: Verdict, ms: u64) -> ScenarioResult {
    let mut r = ScenarioResult::new("s", "d", Profile::Core, vec![]);
    r.duration_ms = ms;
    r.checks
        .push(CheckResult::new("c", Requirement::Must, verdict, "e", "o"));
    r
}

#[test]
fn the_first_failing_attempt_is_kept_and_every_attempt_summarised() {
    let r = fold(vec![
        attempt(Verdict::Pass, 10),
        attempt(Verdict::Fail, 20),
        attempt(Verdict::Fail, 30),
    ]);
    assert_eq!(r.duration_ms, 20);
    assert_eq!(r.checks[0].verdict, Verdict::Fail);
    let got: Vec<(Verdict, u64)> = r
        .attempts
        .iter()
        .map(|a| (a.verdict, a.duration_ms))
        .collect();
    assert_eq!(
        got,
        [
            (Verdict::Pass, 10),
            (Verdict::Fail, 20),
            (Verdict::Fail, 30)
        ]
    );
    assert_eq!(r.graded_verdict(), Verdict::Flaky);
    assert_eq!(r.disagreeing_checks(), ["c"]);
}

#[test]
fn agreeing_attempts_keep_the_first_and_their_verdict() {
    let r = fold(vec![attempt(Verdict::Pass, 10), attempt(Verdict::Pass, 11)]);
    assert_eq!(r.duration_ms, 10);
    assert_eq!(r.graded_verdict(), Verdict::Pass);
    assert_eq!(r.attempts.len(), 2);
}

#[test]
fn a_single_attempt_is_left_as_it_is() {
    let r = fold(vec![attempt(Verdict::Fail, 10)]);
    assert!(r.attempts.is_empty());
    assert_eq!(r.graded_verdict(), Verdict::Fail);
}
