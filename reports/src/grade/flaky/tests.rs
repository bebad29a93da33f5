//! Grading repeated scenarios: the flaky table, the disagreeing checks, `--allow-flaky` in grade
//! and gate, and the property that the verdict does not depend on the attempts' order.

use proptest::prelude::*;

use super::{disagreeing_checks, verdict};
use crate::model::{
    Attempt, AttemptCheck, Environment, Harness, Outcome, Profile, ProxyInfo, Report, Requirement,
    ScenarioResult, Verdict,
};

use Verdict::{Error, Fail, Flaky, NonStrict, NotSupported, Pass};

/// An attempt with MUST checks `(name, verdict)` and stored verdict `stored`.
pub(crate) fn attempt(stored: Verdict, checks: &[(&str, Verdict)]) -> Attempt {
    Attempt {
        verdict: stored,
        duration_ms: 100,
        checks: checks
            .iter()
            .map(|(name, v)| AttemptCheck {
                name: (*name).to_owned(),
                verdict: *v,
                requirement: Requirement::Must,
            })
            .collect(),
        error_kind: None,
    }
}

fn errored() -> Attempt {
    let mut a = attempt(Error, &[]);
    a.error_kind = Some("proxy_not_ready".into());
    a
}

fn should_failed() -> Attempt {
    let mut a = attempt(NonStrict, &[("c", Pass), ("s", Fail)]);
    a.checks[1].requirement = Requirement::Should;
    a
}

#[test]
fn flaky_table() {
    let ok = || attempt(Pass, &[("a", Pass), ("b", Pass)]);
    #[rustfmt::skip]
    let table: Vec<(&str, Vec<Attempt>, Verdict)> = vec![
        ("all pass alike", vec![ok(), ok(), ok()], Pass),
        ("one attempt fails", vec![ok(), attempt(Fail, &[("a", Pass), ("b", Fail)]), ok()], Flaky),
        ("the last attempt fails", vec![ok(), ok(), attempt(Fail, &[("a", Fail), ("b", Pass)])], Flaky),
        ("fails alike", vec![attempt(Fail, &[("a", Fail)]), attempt(Fail, &[("a", Fail)])], Fail),
        ("fails every time, on different checks",
            vec![attempt(Fail, &[("a", Fail), ("b", Pass)]), attempt(Fail, &[("a", Pass), ("b", Fail)])], Fail),
        ("a harness error among passes", vec![ok(), errored()], Flaky),
        ("errors every time", vec![errored(), errored()], Error),
        ("a check only some attempts reached", vec![ok(), attempt(Pass, &[("a", Pass)])], Flaky),
        ("a SHOULD fails once", vec![should_failed(), attempt(Pass, &[("c", Pass), ("s", Pass)])], Flaky),
        ("non-strict alike", vec![should_failed(), should_failed()], NonStrict),
        ("not supported alike", vec![attempt(NotSupported, &[]), attempt(NotSupported, &[])], NotSupported),
        ("stored verdicts are re-graded",
            vec![attempt(Pass, &[("a", Fail)]), attempt(Pass, &[("a", Pass)])], Flaky),
    ];
    for (name, attempts, want) in table {
        assert_eq!(verdict(&attempts), want, "{name}");
        let mut s = ScenarioResult::new("s", "d", Profile::Core, vec![]);
        s.attempts = attempts;
        assert_eq!(s.graded_verdict(), want, "{name} (scenario)");
    }
}

#[test]
fn disagreeing_checks_are_named() {
    let a = attempt(Pass, &[("x", Pass), ("y", Pass), ("z", Pass)]);
    let b = attempt(Fail, &[("x", Pass), ("y", Fail)]);
    assert_eq!(disagreeing_checks(&[a.clone(), b]), ["y", "z"]);
    assert!(disagreeing_checks(&[a.clone(), a]).is_empty());
}

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
    r.repeat = 2;
    r.scenarios = scenarios;
    r
}

fn repeated(id: &str, attempts: Vec<Attempt>) -> ScenarioResult {
    let mut s = ScenarioResult::new(id, "d", Profile::Core, vec![]);
    s.checks = vec![crate::model::CheckResult::new(
        "a",
        Requirement::Must,
        attempts[0].checks[0].verdict,
        "e",
        "o",
    )];
    s.attempts = attempts;
    s
}

#[test]
fn flaky_fails_the_profile_and_the_gate_unless_allowed() {
    let pass = || attempt(Pass, &[("a", Pass)]);
    let fail = || attempt(Fail, &[("a", Fail)]);
    let scenarios = vec![
        repeated("steady", vec![pass(), pass()]),
        repeated("wobbly", vec![fail(), pass()]),
    ];
    let mut r = report(scenarios.clone()).graded();
    let core = r.profile(Profile::Core).unwrap();
    assert_eq!(
        (core.outcome, core.counts.flaky, core.counts.pass),
        (Outcome::Failure, 1, 1)
    );
    let g = r.gate(Profile::Core).unwrap_err();
    assert_eq!(g.offenders.len(), 1);
    assert_eq!(
        (g.offenders[0].id.as_str(), g.offenders[0].verdict),
        ("wobbly", Flaky)
    );
    assert!(g.to_string().contains("wobbly (flaky)"), "{g}");
    assert_eq!(r.gate_with(Profile::Core, true), Ok(()));

    // Allowed at grading time: the profile succeeds, the scenario is still counted as flaky.
    r.allow_flaky = true;
    r.grade();
    let core = r.profile(Profile::Core).unwrap();
    assert_eq!((core.outcome, core.counts.flaky), (Outcome::Success, 1));
    assert_eq!(r.scenarios[1].verdict, Flaky);
    // The gate decides with its own flag, not the report's.
    assert!(r.gate(Profile::Core).is_err());
    assert_eq!(r.gate_with(Profile::Core, true), Ok(()));

    // Allowing flaky does not excuse a scenario that failed every attempt.
    let mut r = report(vec![
        repeated("broken", vec![fail(), fail()]),
        scenarios[1].clone(),
    ]);
    r.allow_flaky = true;
    let r = r.graded();
    assert_eq!(r.profile(Profile::Core).unwrap().outcome, Outcome::Failure);
    let g = r.gate_with(Profile::Core, true).unwrap_err();
    let offenders: Vec<(&str, Verdict)> = g
        .offenders
        .iter()
        .map(|o| (o.id.as_str(), o.verdict))
        .collect();
    assert_eq!(offenders, [("broken", Fail)]);
}

#[test]
fn a_1_1_report_without_attempts_still_reads_and_grades() {
    let mut json: serde_json::Value = serde_json::from_str(&crate::to_json(
        &report(vec![repeated(
            "s",
            vec![attempt(Pass, &[("a", Pass)]), attempt(Pass, &[("a", Pass)])],
        )])
        .graded(),
    ))
    .unwrap();
    json["schema_version"] = "1.1".into();
    let obj = json.as_object_mut().unwrap();
    obj.remove("repeat");
    obj.remove("allow_flaky");
    for s in json["scenarios"].as_array_mut().unwrap() {
        s.as_object_mut().unwrap().remove("attempts");
    }
    for p in json["profiles"].as_array_mut().unwrap() {
        p["counts"].as_object_mut().unwrap().remove("flaky");
    }
    let r = Report::from_json(&json.to_string()).unwrap();
    assert_eq!((r.repeat, r.allow_flaky), (1, false));
    assert!(r.scenarios[0].attempts.is_empty());
    assert_eq!(r.gate(Profile::Core), Ok(()));
}

fn any_attempt() -> impl Strategy<Value = Attempt> {
    let check = (
        prop::sample::select(vec!["a", "b", "c"]),
        prop::sample::select(vec![Pass, Fail, Error, NotSupported]),
        prop::sample::select(vec![Requirement::Must, Requirement::Should]),
    );
    (
        prop::sample::select(vec![Pass, NotSupported, Verdict::Skipped]),
        prop::collection::vec(check, 0..4),
        prop::bool::weighted(0.15),
        0u64..5000,
    )
        .prop_map(|(stored, checks, error, duration_ms)| Attempt {
            verdict: stored,
            duration_ms,
            checks: checks
                .into_iter()
                .map(|(name, verdict, requirement)| AttemptCheck {
                    name: name.to_owned(),
                    verdict,
                    requirement,
                })
                .collect(),
            error_kind: error.then(|| "proxy_not_ready".to_owned()),
        })
}

proptest! {
    #[test]
    fn grading_is_order_independent_over_attempts(
        (attempts, shuffled) in prop::collection::vec(any_attempt(), 2..6)
            .prop_flat_map(|v| (Just(v.clone()), Just(v).prop_shuffle())),
    ) {
        prop_assert_eq!(verdict(&attempts), verdict(&shuffled));
        prop_assert_eq!(disagreeing_checks(&attempts), disagreeing_checks(&shuffled));
    }

    #[test]
    fn identical_attempts_are_never_flaky(a in any_attempt(), n in 2usize..5) {
        let attempts = vec![a.clone(); n];
        let single = verdict(std::slice::from_ref(&a));
        prop_assert_eq!(verdict(&attempts), single);
        prop_assert_ne!(single, Flaky);
    }

    #[test]
    fn flaky_means_the_attempts_disagree(attempts in prop::collection::vec(any_attempt(), 2..6)) {
        if verdict(&attempts) == Flaky {
            let first = &attempts[0];
            let differ = attempts.iter().any(|a| {
                super::attempt_verdict(a) != super::attempt_verdict(first)
            }) || !disagreeing_checks(&attempts).is_empty();
            prop_assert!(differ);
        }
    }
}
