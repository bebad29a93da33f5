//! The harness's self-test: every scenario, run against the reference proxy with each
//! deliberately broken behaviour it lists in `catches` (`reference-proxy --sabotage NAME`),
//! must end `fail`: no check is vacuous.
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
use libtest_mimic::{Arguments, Failed, Trial};
use reports::Verdict;
use scenarios::Scenario;

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

fn main() {
    let mut args = Arguments::from_args();
    support::default_threads(&mut args);
    let mut available = BTreeMap::new();
    let mut trials = Vec::new();
    for s in support::scenarios() {
        for name in s.catches.clone() {
            if let Ok(tamper) = name.parse::<Tamper>() {
                trials.push(tamper_trial(&s, tamper));
                continue;
            }
            let ok = *available
                .entry(name.clone())
                .or_insert_with(|| sabotage_available(&name));
            let scenario = s.clone();
            let sabotage = name.clone();
            trials.push(
                Trial::test(format!("{}::{name}", s.id), move || {
                    if !ok {
                        return Err(Failed::from(format!(
                            "the reference proxy does not know --sabotage {sabotage}"
                        )));
                    }
                    let cfg = support::config(&format!("--sabotage {sabotage}"));
                    if let Some(why) = support::unsupported_here(&scenario) {
                        return Err(Failed::from(why));
                    }
                    let (result, verdict) = support::run(&cfg, &scenario);
                    if verdict == Verdict::Fail {
                        Ok(())
                    } else {
                        Err(Failed::from(format!(
                            "expected verdict fail against --sabotage {sabotage}\n{}",
                            support::explain(&result, verdict)
                        )))
                    }
                })
                .with_kind("sabotage"),
            );
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

/// The correct reference proxy in a deliberately broken environment must fail too.
fn tamper_trial(s: &Scenario, tamper: Tamper) -> Trial {
    let scenario = s.clone();
    Trial::test(format!("{}::{tamper}", s.id), move || {
        if let Some(why) = support::unsupported_here(&scenario) {
            return Err(Failed::from(why));
        }
        let mut cfg = support::config("");
        cfg.tamper = Some(tamper);
        let (result, verdict) = support::run(&cfg, &scenario);
        if verdict == Verdict::Fail {
            Ok(())
        } else {
            Err(Failed::from(format!(
                "expected verdict fail with the environment tampered ({tamper})\n{}",
                support::explain(&result, verdict)
            )))
        }
    })
    .with_kind("tamper")
    .with_ignored_flag(support::skip_here(s))
}
