//! The harness's self-test: every scenario, run against the reference proxy with each
//! deliberately broken behaviour it lists in `catches` (`reference-proxy --sabotage NAME`),
//! must end `fail`, and fail the way the entry says: the proxy became ready, the harness did
//! not fail, and the checks the entry names failed (`conformance::plan::catch::judge`; any
//! check of the timeline for a bare name). A crash at start-up, a readiness timeout or a
//! harness error is reported as what it is, never as a catch. A caught trial prints the checks
//! that caught it. `CONFORMANCE_SELFTEST_REPEAT=N` plays every trial N times and requires each
//! attempt to be caught the same way (the soak of the self-test: no trial caught by accident).
//!
//! A trial *fails* when this build's reference proxy does not accept `--sabotage NAME` (the
//! `sabotage` feature of proxy-under-test is on for this crate's tests, so that means the name is
//! unknown): a missing broken proxy must not look like a caught one. Names of deliberately
//! broken *environments* (`redirect-wrong-uid`, ...) run the correct proxy with the redirect
//! step misconfigured instead.

mod support;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use conformance::Tamper;
use conformance::plan::catch::judge;
use libtest_mimic::{Arguments, Failed, Trial};
use reports::Verdict;
use scenarios::{Catch, Scenario};

/// Whether the bundled reference proxy knows `--sabotage NAME`.
fn sabotage_available(name: &str) -> bool {
    Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args(["reference-proxy", "--sabotage", name, "--version"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// How many times each trial is played (`CONFORMANCE_SELFTEST_REPEAT`, default 1).
fn repeat() -> u32 {
    match std::env::var("CONFORMANCE_SELFTEST_REPEAT") {
        Ok(v) => v.parse().ok().filter(|n| *n >= 1).unwrap_or_else(|| {
            panic!("CONFORMANCE_SELFTEST_REPEAT={v:?}: expected a whole number of at least 1")
        }),
        Err(_) => 1,
    }
}

fn main() {
    let mut args = Arguments::from_args();
    let repeat = repeat();
    support::default_threads(&mut args);
    let mut available = BTreeMap::new();
    let mut trials = Vec::new();
    for s in support::scenarios() {
        for catch in s.catches.clone() {
            let name = catch.sabotage.clone();
            if let Ok(tamper) = name.parse::<Tamper>() {
                trials.push(tamper_trial(&s, tamper, catch, repeat));
                continue;
            }
            let ok = *available
                .entry(name.clone())
                .or_insert_with(|| sabotage_available(&name));
            let scenario = s.clone();
            trials.push(
                Trial::test(format!("{}::{name}", s.id), move || {
                    if !ok {
                        return Err(Failed::from(format!(
                            "the reference proxy does not know --sabotage {name}"
                        )));
                    }
                    let cfg = support::config(&format!("--sabotage {name}"));
                    if let Some(why) = support::unsupported_here(&scenario) {
                        return Err(Failed::from(why));
                    }
                    for attempt in 1..=repeat {
                        let (result, verdict) = support::run(&cfg, &scenario);
                        verdict_is_the_catch(&scenario, &catch, &result, verdict, "--sabotage")
                            .map_err(|e| attempt_of(e, attempt, repeat))?;
                    }
                    Ok(())
                })
                .with_kind("sabotage")
                .with_ignored_flag(support::skip_here(&s)),
            );
        }
    }
    trials.extend(grading_trials());
    libtest_mimic::run(&args, trials).exit();
}

/// Honest grading, end to end: a proxy that declares no bound is held to the scenario's own
/// cap and never graded `non-strict` (a bound nobody declared): the correct proxy passes
/// `persistent-connection`, and one that never re-checks open connections fails it.
fn grading_trials() -> Vec<Trial> {
    let scenario = support::scenarios()
        .into_iter()
        .find(|s| s.id == "persistent-connection")
        .expect("persistent-connection is in the catalogue");
    let mut trials = Vec::new();
    for (name, extra, want) in [
        ("grading::no-declared-bounds::correct", "", Verdict::Pass),
        (
            "grading::no-declared-bounds::never-recheck-open",
            "--sabotage never-recheck-open",
            Verdict::Fail,
        ),
    ] {
        let s = scenario.clone();
        trials.push(
            Trial::test(name, move || {
                let mut cfg = support::config(extra);
                cfg.manifest.bounds = conformance::Bounds::default();
                let (result, verdict) = support::run(&cfg, &s);
                let non_strict: Vec<&str> = result
                    .checks
                    .iter()
                    .filter(|c| c.verdict == Verdict::NonStrict)
                    .map(|c| c.name.as_str())
                    .collect();
                if verdict == want && non_strict.is_empty() {
                    Ok(())
                } else {
                    Err(Failed::from(format!(
                        "with no declared bound: expected {want} and no non-strict check, got \
                         {verdict} (non-strict: {non_strict:?})\n{}",
                        support::explain(&result, verdict)
                    )))
                }
            })
            .with_kind("grading"),
        );
    }
    trials
}

/// The correct reference proxy in a deliberately broken environment must fail too.
fn tamper_trial(s: &Scenario, tamper: Tamper, catch: Catch, repeat: u32) -> Trial {
    let scenario = s.clone();
    Trial::test(format!("{}::{tamper}", s.id), move || {
        if let Some(why) = support::unsupported_here(&scenario) {
            return Err(Failed::from(why));
        }
        let mut cfg = support::config("");
        cfg.tamper = Some(tamper);
        for attempt in 1..=repeat {
            let (result, verdict) = support::run(&cfg, &scenario);
            verdict_is_the_catch(
                &scenario,
                &catch,
                &result,
                verdict,
                "the environment tampered:",
            )
            .map_err(|e| attempt_of(e, attempt, repeat))?;
        }
        Ok(())
    })
    .with_kind("tamper")
    .with_ignored_flag(support::skip_here(s))
}

/// Names the attempt that was not caught, when there are several.
fn attempt_of(e: Failed, attempt: u32, repeat: u32) -> Failed {
    if repeat == 1 {
        return e;
    }
    Failed::from(format!(
        "attempt {attempt} of {repeat}: {}",
        e.message().unwrap_or_default()
    ))
}

/// A trial passes when the scenario failed the way `catch` says (and prints the checks that
/// caught it); otherwise it fails saying what happened instead.
fn verdict_is_the_catch(
    s: &Scenario,
    catch: &Catch,
    result: &reports::ScenarioResult,
    verdict: Verdict,
    against: &str,
) -> Result<(), Failed> {
    let judged = judge(result, catch);
    match (&judged, verdict) {
        (Ok(by), Verdict::Fail) => {
            println!(
                "caught: {}::{} by {}",
                s.id,
                catch.sabotage,
                scenarios::catch_quoted(by)
            );
            Ok(())
        }
        _ => Err(Failed::from(format!(
            "expected {catch} to be caught against {against} {}: {}\n{}",
            catch.sabotage,
            match judged {
                Ok(_) => format!("the scenario ended {verdict}, not fail"),
                Err(miss) => miss.to_string(),
            },
            support::explain(result, verdict)
        ))),
    }
}
