//! Table-driven tests of the grading rules and the gate, plus grading properties.

use proptest::prelude::*;

use super::*;
use crate::model::{CheckResult, Environment, Harness, ProxyInfo};

use Requirement::{Must, Should};
use Verdict::{Error, Fail, Flaky, Interrupted, NonStrict, NotSupported, Pass, Skipped};

fn report(scenarios: Vec<ScenarioResult>) -> Report {
    let proxy = ProxyInfo {
        name: "p".into(),
        version: None,
        command: "p".into(),
        features: vec![],
        bounds: Default::default(),
        xds_tls_mode: None,
    };
    let env = Environment {
        os: "linux".into(),
        arch: "x86_64".into(),
        cpus: 2,
        hostname: None,
        ci: false,
        notes: vec![],
    };
    let mut r = Report::new(Harness::new("0"), proxy, env, "2026-01-01T00:00:00Z", 1);
    r.scenarios = scenarios;
    r
}

fn check(verdict: Verdict, req: Requirement) -> CheckResult {
    CheckResult::new(format!("{verdict} {req}"), req, verdict, "e", "o")
}

/// A scenario built as a runner would: a mark (`Pass` = unmarked), a harness error or not, and
/// checks.
fn scenario(
    id: &str,
    profile: Profile,
    mark: Verdict,
    error: bool,
    checks: &[(Verdict, Requirement)],
) -> ScenarioResult {
    let mut s = ScenarioResult::new(id, "d", profile, vec![]);
    s.verdict = mark;
    if error {
        s.error = Some(ErrorInfo::new("proxy_not_ready", "boom"));
    }
    s.checks = checks.iter().map(|(v, r)| check(*v, *r)).collect();
    s
}

/// A scenario that grades to `v`.
fn graded_as(id: &str, profile: Profile, v: Verdict) -> ScenarioResult {
    match v {
        Pass => scenario(id, profile, Pass, false, &[(Pass, Must)]),
        Fail => scenario(id, profile, Pass, false, &[(Pass, Must), (Fail, Must)]),
        NonStrict => scenario(id, profile, Pass, false, &[(Pass, Must), (Fail, Should)]),
        Skipped => scenario(id, profile, Skipped, false, &[]),
        NotSupported => scenario(id, profile, NotSupported, false, &[]),
        Error => scenario(id, profile, Pass, true, &[]),
        Flaky => {
            let mut s = scenario(id, profile, Pass, false, &[(Fail, Must)]);
            s.attempts = vec![
                flaky::tests::attempt(Pass, &[("c", Pass)]),
                flaky::tests::attempt(Fail, &[("c", Fail)]),
            ];
            s
        }
        Interrupted => scenario(id, profile, Interrupted, false, &[(Pass, Must)]),
    }
}

/// (verdict, requirement) of each check of a table row.
type Checks = &'static [(Verdict, Requirement)];

#[test]
fn scenario_verdict_table() {
    #[rustfmt::skip]
    let table: &[(&str, Verdict, bool, Checks, Verdict)] = &[
        ("all pass", Pass, false, &[(Pass, Must), (Pass, Should)], Pass),
        ("must fails", Pass, false, &[(Pass, Must), (Fail, Must)], Fail),
        ("should fails", Pass, false, &[(Pass, Must), (Fail, Should)], NonStrict),
        ("must and should fail", Pass, false, &[(Fail, Should), (Fail, Must)], Fail),
        ("check graded non-strict", Pass, false, &[(Pass, Must), (NonStrict, Must)], NonStrict),
        ("errored check beats failed must", Pass, false, &[(Fail, Must), (Error, Should)], Error),
        ("harness error beats passing checks", Pass, true, &[(Pass, Must)], Error),
        ("harness error on a skipped scenario", Skipped, true, &[], Error),
        ("skipped, no checks", Skipped, false, &[], Skipped),
        ("not supported, no checks", NotSupported, false, &[], NotSupported),
        ("not supported, reason check", NotSupported, false, &[(NotSupported, Must)], NotSupported),
        ("unmarked, every check not supported", Pass, false, &[(NotSupported, Must)], NotSupported),
        ("unmarked, every check skipped", Pass, false, &[(Skipped, Must)], Skipped),
        ("a skipped check among passes", Pass, false, &[(Pass, Must), (Skipped, Must)], Skipped),
        ("not-supported among passes", Pass, false, &[(Pass, Must), (NotSupported, Must)], Pass),
        ("a failed must among skipped", Pass, false, &[(Skipped, Must), (Fail, Must)], Fail),
        ("marked skipped but checks ran", Skipped, false, &[(Pass, Must)], Pass),
        ("stale stored fail, all checks pass", Fail, false, &[(Pass, Must)], Pass),
        ("nothing recorded at all", Pass, false, &[], Error),
        ("stale stored fail, nothing recorded", Fail, false, &[], Error),
        ("interrupted, no checks", Interrupted, false, &[], Interrupted),
        ("interrupted beats passing checks", Interrupted, false, &[(Pass, Must)], Interrupted),
        ("interrupted beats a failed must", Interrupted, false, &[(Fail, Must)], Interrupted),
        ("interrupted beats a harness error", Interrupted, true, &[], Interrupted),
    ];
    for (name, mark, error, checks, want) in table {
        let s = scenario(name, Profile::Core, *mark, *error, checks);
        assert_eq!(s.graded_verdict(), *want, "{name}");
        let mut r = report(vec![s]);
        r.grade();
        assert_eq!(r.scenarios[0].verdict, *want, "{name} (via grade)");
    }
}

#[test]
fn grading_a_scenario_with_nothing_recorded_explains_the_error() {
    let mut r = report(vec![scenario("empty", Profile::Core, Pass, false, &[])]);
    r.grade();
    let err = r.scenarios[0].error.as_ref().expect("error recorded");
    assert_eq!(err.kind, NO_CHECKS_ERROR_KIND);
    // A real harness error is kept as it is.
    let mut r = report(vec![scenario("e", Profile::Core, Pass, true, &[])]);
    r.grade();
    assert_eq!(
        r.scenarios[0].error.as_ref().unwrap().kind,
        "proxy_not_ready"
    );
}

#[test]
fn profile_outcome_table() {
    #[rustfmt::skip]
    let table: &[(&[Verdict], Outcome)] = &[
        (&[], Outcome::NotRun),
        (&[NotSupported], Outcome::NotRun),
        (&[NotSupported, NotSupported], Outcome::NotRun),
        (&[Pass], Outcome::Success),
        (&[Pass, NotSupported], Outcome::Success),
        (&[Pass, Skipped], Outcome::Partial),
        (&[Skipped], Outcome::Partial),
        (&[Pass, NonStrict, NotSupported], Outcome::Partial),
        (&[Pass, Fail], Outcome::Failure),
        (&[Error], Outcome::Failure),
        (&[Skipped, NonStrict, Fail], Outcome::Failure),
        (&[Pass, Error, NotSupported], Outcome::Failure),
        (&[Pass, Flaky], Outcome::Failure),
        (&[Flaky, Skipped], Outcome::Failure),
        (&[Pass, Interrupted], Outcome::Partial),
        (&[Interrupted], Outcome::Partial),
        (&[Interrupted, Fail], Outcome::Failure),
    ];
    for (verdicts, want) in table {
        let scenarios = verdicts
            .iter()
            .enumerate()
            .map(|(i, v)| graded_as(&format!("s{i}"), Profile::L7, *v))
            .collect();
        let r = report(scenarios).graded();
        let l7 = r.profile(Profile::L7).unwrap();
        assert_eq!(l7.outcome, *want, "{verdicts:?}");
        assert_eq!(l7.counts.total as usize, verdicts.len());
        assert_eq!(
            l7.counts.counted() as usize,
            verdicts.iter().filter(|v| **v != NotSupported).count()
        );
        // Other profiles had nothing and are listed as not run.
        let order: Vec<Profile> = r.profiles.iter().map(|p| p.profile).collect();
        assert_eq!(order, Profile::ALL);
        assert_eq!(r.profile(Profile::Core).unwrap().outcome, Outcome::NotRun);
    }
}

#[test]
fn counts_tally_every_verdict() {
    let vs = [
        Pass,
        Pass,
        Fail,
        NonStrict,
        Skipped,
        Error,
        NotSupported,
        Flaky,
        Interrupted,
    ];
    let scenarios = vs
        .iter()
        .map(|v| graded_as(v.as_str(), Profile::Core, *v))
        .collect();
    let r = report(scenarios).graded();
    let c = r.profile(Profile::Core).unwrap().counts;
    let want = Counts {
        total: 9,
        pass: 2,
        fail: 1,
        non_strict: 1,
        skipped: 1,
        error: 1,
        not_supported: 1,
        flaky: 1,
        interrupted: 1,
    };
    assert_eq!(c, want);
}

/// A scenario the runner could not run in this environment.
fn unsupported_here(id: &str, profile: Profile) -> ScenarioResult {
    let mut s = ScenarioResult::new(id, "d", profile, vec![]);
    s.mark_not_supported();
    s.checks.push(CheckResult::new(
        ENVIRONMENT_CHECK,
        Must,
        NotSupported,
        "root",
        "not supported by the environment: not root",
    ));
    s
}

#[test]
fn scenarios_the_environment_cannot_run_leave_the_profile_partial() {
    let r = report(vec![
        graded_as("a-pass", Profile::Transparent, Pass),
        graded_as("b-undeclared", Profile::Transparent, NotSupported),
        unsupported_here("c-needs-root", Profile::Transparent),
        graded_as("l7-pass", Profile::L7, Pass),
        graded_as("l7-undeclared", Profile::L7, NotSupported),
    ])
    .graded();
    let tp = r.profile(Profile::Transparent).unwrap();
    assert_eq!(tp.outcome, Outcome::Partial);
    assert_eq!((tp.counts.not_supported, tp.counts.counted()), (2, 1));
    // A feature the proxy does not declare still leaves a profile successful.
    assert_eq!(r.profile(Profile::L7).unwrap().outcome, Outcome::Success);
    let gate = r.gate(Profile::Transparent).unwrap_err();
    assert_eq!(gate.outcome, Outcome::Partial);
    assert_eq!(
        gate.offenders,
        [Offender {
            id: "c-needs-root".into(),
            verdict: NotSupported
        }]
    );
    // Nothing but environment-unsupported scenarios: not run.
    let only = report(vec![unsupported_here("x", Profile::Transparent)]).graded();
    assert_eq!(
        only.profile(Profile::Transparent).unwrap().outcome,
        Outcome::NotRun
    );
}

#[test]
fn gate_table() {
    let mixed = vec![
        graded_as("a-pass", Profile::Core, Pass),
        graded_as("b-skip", Profile::Core, Skipped),
        graded_as("c-nonstrict", Profile::Core, NonStrict),
        graded_as("d-unsupported", Profile::Core, NotSupported),
        graded_as("e-fail", Profile::Core, Fail),
        graded_as("f-error", Profile::Core, Error),
        graded_as("l7-pass", Profile::L7, Pass),
        graded_as("l7-unsupported", Profile::L7, NotSupported),
        graded_as("ext-skip", Profile::Extended, Skipped),
        graded_as("tp-unsupported", Profile::Transparent, NotSupported),
    ];
    let r = report(mixed).graded();
    assert_eq!(r.gate(Profile::L7), Ok(()));

    let core = r.gate(Profile::Core).unwrap_err();
    assert_eq!(core.outcome, Outcome::Failure);
    let got: Vec<(&str, Verdict)> = core
        .offenders
        .iter()
        .map(|o| (o.id.as_str(), o.verdict))
        .collect();
    assert_eq!(
        got,
        [
            ("f-error", Error),
            ("e-fail", Fail),
            ("c-nonstrict", NonStrict),
            ("b-skip", Skipped)
        ]
    );
    assert_eq!(
        core.to_string(),
        "profile core is failure, not success: 4 scenario(s) did not pass: \
         f-error (error), e-fail (fail), c-nonstrict (non-strict), b-skip (skipped)"
    );

    let ext = r.gate(Profile::Extended).unwrap_err();
    assert_eq!(ext.outcome, Outcome::Partial);
    assert_eq!(
        ext.offenders,
        [Offender {
            id: "ext-skip".into(),
            verdict: Skipped
        }]
    );

    // Only not-supported scenarios: not run, and that does not pass the gate.
    let tp = r.gate(Profile::Transparent).unwrap_err();
    assert_eq!(tp.outcome, Outcome::NotRun);
    assert!(tp.offenders.is_empty());
    assert!(tp.to_string().contains("was not run"), "{tp}");
}

#[test]
fn gate_regrades_instead_of_trusting_stored_verdicts() {
    let mut r = report(vec![graded_as("bad", Profile::Core, Fail)]).graded();
    // Tamper: claim it passed and the profile succeeded.
    r.scenarios[0].verdict = Pass;
    r.profiles[0].outcome = Outcome::Success;
    let err = r.gate(Profile::Core).unwrap_err();
    assert_eq!(
        err.offenders,
        [Offender {
            id: "bad".into(),
            verdict: Fail
        }]
    );
}

fn any_verdict() -> impl Strategy<Value = Verdict> {
    prop::sample::select(Verdict::WORST_FIRST.to_vec())
}

fn any_scenario() -> impl Strategy<Value = ScenarioResult> {
    let req = prop::sample::select(vec![Must, Should]);
    (
        prop::sample::select(Profile::ALL.to_vec()),
        any_verdict(),
        prop::bool::weighted(0.1),
        prop::collection::vec((any_verdict(), req), 0..5),
    )
        .prop_map(|(profile, mark, error, checks)| scenario("s", profile, mark, error, &checks))
}

proptest! {
    #[test]
    fn grading_is_idempotent(scenarios in prop::collection::vec(any_scenario(), 0..12)) {
        let once = report(scenarios).graded();
        let twice = once.clone().graded();
        prop_assert_eq!(&once, &twice);
    }

    #[test]
    fn gate_agrees_with_grade(scenarios in prop::collection::vec(any_scenario(), 0..12)) {
        let r = report(scenarios).graded();
        for p in &r.profiles {
            let gate = r.gate(p.profile);
            prop_assert_eq!(gate.is_ok(), p.outcome == Outcome::Success);
            if let Err(g) = gate {
                prop_assert_eq!(g.outcome, p.outcome);
                let c = p.counts;
                let not_passing =
                    c.fail + c.error + c.skipped + c.non_strict + c.flaky + c.interrupted;
                prop_assert_eq!(g.offenders.len() as u32, not_passing);
            }
        }
    }

    #[test]
    fn a_passing_check_never_hides_a_failed_must(
        mut s in any_scenario(),
        at in 0usize..5,
    ) {
        let at = at.min(s.checks.len());
        s.checks.insert(at, check(Fail, Must));
        // An interrupted mark stands (never a pass): the failed check is still listed in it.
        let want_interrupted = s.verdict == Interrupted;
        match s.graded_verdict() {
            Interrupted => prop_assert!(want_interrupted),
            v => prop_assert!(matches!(v, Fail | Error), "{v}"),
        }
    }
}

#[test]
fn an_edited_verdict_does_not_hide_an_interruption_from_the_gate() {
    let mut s = scenario("cut", Profile::Core, Interrupted, false, &[(Pass, Must)]);
    s.timeline.push(crate::model::TimelineEvent::new(
        10,
        crate::model::EventKind::Step,
        "interrupted by SIGTERM",
    ));
    let mut r = report(vec![s]).graded();
    assert_eq!(r.scenarios[0].verdict, Interrupted);
    r.scenarios[0].verdict = Pass;
    r.profiles.clear();
    let err = r.gate(Profile::Core).unwrap_err();
    assert_eq!(err.outcome, Outcome::Partial);
    assert_eq!(err.offenders[0].verdict, Interrupted);
}
