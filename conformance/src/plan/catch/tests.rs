//! The self-test's judgement: only the named checks failing against a proxy that became ready
//! is a catch.

use reports::{
    CheckResult, ENVIRONMENT_CHECK, ErrorInfo, Profile, Requirement, ScenarioResult, Verdict,
};
use scenarios::Catch;

use super::*;

fn result(checks: &[(&str, Verdict)]) -> ScenarioResult {
    let mut r = ScenarioResult::new("s", "d", Profile::Core, vec![]);
    for (name, v) in checks {
        r.checks
            .push(CheckResult::new(*name, Requirement::Must, *v, "e", "o"));
    }
    r
}

#[test]
fn the_named_check_failing_is_a_catch() {
    let r = result(&[
        ("web allowed", Verdict::Pass),
        ("web denied", Verdict::Fail),
    ]);
    assert_eq!(
        judge(&r, &Catch::by("ignore-deny", &["web denied"])),
        Ok(vec!["web denied".to_owned()])
    );
    // A bare entry: any failed check of the timeline.
    assert_eq!(
        judge(&r, &Catch::any("ignore-deny")),
        Ok(vec!["web denied".to_owned()])
    );
}

#[test]
fn another_check_failing_is_not_a_catch() {
    let r = result(&[
        ("web allowed", Verdict::Fail),
        ("web denied", Verdict::Pass),
    ]);
    let miss = judge(&r, &Catch::by("ignore-deny", &["web denied"])).unwrap_err();
    assert_eq!(
        miss,
        Miss::OtherChecks {
            missing: vec!["web denied".into()],
            failed: vec!["web allowed".into()]
        }
    );
    assert_eq!(
        miss.to_string(),
        "the named check(s) \"web denied\" did not fail; failed instead: \"web allowed\""
    );
    // Every named check must fail, not one of them.
    let r = result(&[("a", Verdict::Fail), ("b", Verdict::Pass)]);
    assert!(judge(&r, &Catch::by("x", &["a", "b"])).is_err());
}

#[test]
fn a_readiness_failure_is_not_a_catch() {
    let mut r = result(&[(PROXY_READY, Verdict::Fail)]);
    r.checks[0].observed = "nothing listens on 127.0.0.1:21000".into();
    let miss = judge(&r, &Catch::any("ignore-deny")).unwrap_err();
    assert!(matches!(miss, Miss::NotReady(_)), "{miss:?}");
    assert!(miss.to_string().contains("never became ready"), "{miss}");
    assert!(miss.to_string().contains("127.0.0.1:21000"), "{miss}");
}

#[test]
fn a_harness_error_or_an_interruption_is_not_a_catch() {
    let mut r = result(&[("web denied", Verdict::Fail)]);
    r.error = Some(ErrorInfo::new("proxy_spawn_failed", "no such file"));
    let miss = judge(&r, &Catch::any("ignore-deny")).unwrap_err();
    assert!(matches!(miss, Miss::HarnessError(_)), "{miss:?}");
    assert!(miss.to_string().contains("proxy_spawn_failed"), "{miss}");

    let mut r = result(&[("web denied", Verdict::Fail)]);
    r.mark_interrupted();
    assert_eq!(
        judge(&r, &Catch::any("ignore-deny")),
        Err(Miss::Interrupted)
    );
}

#[test]
fn gates_and_passes_are_not_catches() {
    let r = result(&[("web denied", Verdict::Pass)]);
    assert_eq!(
        judge(&r, &Catch::any("ignore-deny")),
        Err(Miss::NothingFailed)
    );
    // The harness's own records (features, environment, xds) never count.
    let r = result(&[
        ("features", Verdict::Fail),
        (ENVIRONMENT_CHECK, Verdict::Fail),
        ("xds", Verdict::Fail),
    ]);
    assert_eq!(
        judge(&r, &Catch::any("ignore-deny")),
        Err(Miss::NothingFailed)
    );
    let mut r = result(&[("features", Verdict::NotSupported)]);
    r.mark_not_supported();
    assert_eq!(
        judge(&r, &Catch::any("ignore-deny")),
        Err(Miss::NotRun(Verdict::NotSupported))
    );
}
