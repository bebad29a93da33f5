//! The exit code of shards and merged reports: a shard answers only for the profiles it ran.

use std::process::ExitCode;

use reports::{CheckResult, Profile, Report, Requirement, ScenarioResult, ShardInfo, Verdict};

use super::super::summary::exit_code;

fn report(scenarios: &[(&str, Profile, Verdict)], shard: bool) -> Report {
    let mut r = reports::fixture::sample_report();
    r.scenarios = scenarios
        .iter()
        .map(|(id, p, v)| {
            let mut s = ScenarioResult::new(*id, "", *p, vec![]);
            s.checks
                .push(CheckResult::new("c", Requirement::Must, *v, "x", "y"));
            s
        })
        .collect();
    r.shard = shard.then(|| ShardInfo {
        index: 1,
        count: 2,
        planned: vec![],
        mine: scenarios
            .iter()
            .map(|(id, _, _)| (*id).to_owned())
            .collect(),
        claimed: vec![Profile::Core, Profile::L7],
    });
    r.graded()
}

fn code(r: &Report, claimed: &[Profile]) -> String {
    format!("{:?}", exit_code(r, claimed))
}

#[test]
fn a_shard_answers_for_its_own_profiles_only() {
    let ok = format!("{:?}", ExitCode::SUCCESS);
    let failed = format!("{:?}", ExitCode::from(super::super::EXIT_FAILED));
    let usage = format!("{:?}", ExitCode::from(super::super::EXIT_USAGE));
    assert!(
        ok != failed && failed != usage,
        "exit codes tell apart in Debug"
    );
    let claimed = [Profile::Core, Profile::L7];
    let core_pass = [("a", Profile::Core, Verdict::Pass)];
    // l7 has no scenario here: not-run fails a whole run, not a shard.
    assert_eq!(code(&report(&core_pass, true), &claimed), ok);
    assert_eq!(code(&report(&core_pass, false), &claimed), failed);
    // An empty shard is fine; an empty whole run is not.
    assert_eq!(code(&report(&[], true), &claimed), ok);
    assert_eq!(code(&report(&[], false), &[]), failed);
    // A failure or a harness error counts in a shard as anywhere.
    let core_fail = [("a", Profile::Core, Verdict::Fail)];
    assert_eq!(code(&report(&core_fail, true), &claimed), failed);
    let core_error = [("a", Profile::Core, Verdict::Error)];
    assert_eq!(code(&report(&core_error, true), &claimed), usage);
}
