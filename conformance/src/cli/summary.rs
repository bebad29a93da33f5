//! How a finished run (or merged shards) ends on the terminal: the summary printed (shard,
//! repeat, per-profile counts, every scenario not passed with its failed checks) and the exit
//! code from the claimed profiles.

use std::process::ExitCode;

use reports::{Outcome, Report};

use super::EXIT_FAILED;
use super::out::outln;
use crate::exec;

/// The exit code of a graded run (or merged shards): 2 if any scenario ended `error`, else 0
/// when every claimed profile is a success, else 3 when what kept them from it is only
/// scenarios this environment cannot run ([`environment_hint`] names the fix), else 1. A shard
/// answers only for the profiles it ran scenarios of (an empty shard, or one whose share of a
/// profile was not supported, is fine): the merged report decides the rest.
pub(super) fn exit_code(report: &Report, claimed: &[reports::Profile]) -> ExitCode {
    if report
        .scenarios
        .iter()
        .any(|s| s.verdict == reports::Verdict::Error)
    {
        // The harness itself failed somewhere: the grade says nothing reliable.
        return ExitCode::from(super::EXIT_USAGE);
    }
    let sharded = report.shard.is_some();
    let ok = claimed.iter().all(|p| {
        report.profile(*p).is_some_and(|r| {
            r.outcome == Outcome::Success || (sharded && r.outcome == Outcome::NotRun)
        })
    });
    if ok && (sharded || !claimed.is_empty()) {
        ExitCode::SUCCESS
    } else if environment_hint(report, claimed).is_some() {
        ExitCode::from(super::EXIT_ENVIRONMENT)
    } else {
        ExitCode::from(EXIT_FAILED)
    }
}

/// Whether `s` is not supported only because this environment cannot run it.
fn environment_only(s: &reports::ScenarioResult) -> Option<&str> {
    s.checks
        .iter()
        .find(|c| {
            c.name == reports::ENVIRONMENT_CHECK && c.verdict == reports::Verdict::NotSupported
        })
        .map(|c| c.observed.as_str())
}

/// When every scenario of the claimed profiles passed or could not run in this environment
/// (at least one), the line naming what is missing and how to get it; else `None`.
pub(super) fn environment_hint(report: &Report, claimed: &[reports::Profile]) -> Option<String> {
    let mut why: Vec<&str> = Vec::new();
    for s in report
        .scenarios
        .iter()
        .filter(|s| claimed.contains(&s.profile))
    {
        match (s.graded_verdict(), environment_only(s)) {
            (reports::Verdict::Pass, _) => {}
            (reports::Verdict::NotSupported, Some(reason)) => why.push(reason),
            (reports::Verdict::NotSupported, None) => {} // a feature the proxy does not declare
            _ => return None,
        }
    }
    why.sort_unstable();
    why.dedup();
    if why.is_empty() {
        return None;
    }
    let fixes: Vec<&str> = why
        .iter()
        .map(|w| reports::environment_fix(w))
        .collect::<Vec<_>>();
    let mut fixes = fixes;
    fixes.dedup();
    let profiles: Vec<&str> = claimed
        .iter()
        .filter(|p| {
            report
                .scenarios
                .iter()
                .any(|s| s.profile == **p && environment_only(s).is_some())
        })
        .map(|p| p.as_str())
        .collect();
    Some(format!(
        "not verified here: {} scenario(s) of {} could not run in this environment ({}); fix: {} \
         (or leave the profile out with --profile)",
        report
            .scenarios
            .iter()
            .filter(|s| claimed.contains(&s.profile) && environment_only(s).is_some())
            .count(),
        profiles.join(", "),
        why.iter()
            .map(|w| w.trim_start_matches("not supported by the environment: "))
            .collect::<Vec<_>>()
            .join("; "),
        fixes.join("; ")
    ))
}

pub(super) fn summarize(report: &Report, claimed: &[reports::Profile]) {
    if let Some(s) = &report.shard {
        outln!(
            "shard {}/{}: {} of {} planned scenario(s)",
            s.index,
            s.count,
            s.mine.len(),
            s.planned.len()
        );
    }
    if report.repeat > 1 {
        let flaky = report
            .scenarios
            .iter()
            .filter(|s| s.verdict == reports::Verdict::Flaky)
            .count();
        let allowed = if report.allow_flaky {
            ", allowed by --allow-flaky"
        } else {
            ""
        };
        outln!(
            "repeat {}: {flaky} flaky scenario(s){allowed}",
            report.repeat
        );
    }
    outln!(
        "{} {} — seed {} — {} ms (slack on declared bounds: {} ms)",
        report.proxy.name,
        report.proxy.version.as_deref().unwrap_or(""),
        report.seed,
        report.duration_ms,
        exec::BOUND_SLACK.as_millis()
    );
    for p in &report.profiles {
        if p.counts.total == 0 && !claimed.contains(&p.profile) {
            continue;
        }
        let c = p.counts;
        outln!(
            "  {:<12} {:<9} pass {} fail {} non-strict {} skipped {} error {} not-supported {} \
             flaky {}{}{}",
            p.profile.as_str(),
            p.outcome.as_str(),
            c.pass,
            c.fail,
            c.non_strict,
            c.skipped,
            c.error,
            c.not_supported,
            c.flaky,
            if c.flaky > 0 && report.allow_flaky {
                " (allowed)"
            } else {
                ""
            },
            if claimed.contains(&p.profile) {
                "  (claimed)"
            } else {
                ""
            }
        );
    }
    // Not passed, grouped by likely cause (the first group's fix is usually the first to try).
    let mut groups: Vec<(&'static str, Vec<&reports::ScenarioResult>)> = Vec::new();
    for s in &report.scenarios {
        let Some(cause) = likely_cause(s) else {
            continue;
        };
        match groups.iter_mut().find(|(c, _)| *c == cause) {
            Some((_, list)) => list.push(s),
            None => groups.push((cause, vec![s])),
        }
    }
    groups.sort_by_key(|(_, list)| list.iter().map(|s| s.verdict.rank()).min());
    for (cause, list) in groups {
        outln!("  {cause} ({}):", list.len());
        for s in list {
            print_scenario(s);
        }
    }
    if report
        .scenarios
        .iter()
        .any(|s| s.verdict == reports::Verdict::Fail)
    {
        outln!("  (details and timelines: report.html)");
    }
}

/// Why `s` did not pass, as a group heading; `None` when it passed or only lacks a feature
/// the proxy does not declare.
fn likely_cause(s: &reports::ScenarioResult) -> Option<&'static str> {
    use reports::Verdict;
    let failed = |name: &str| {
        s.checks
            .iter()
            .any(|c| c.name == name && matches!(c.verdict, Verdict::Fail | Verdict::Error))
    };
    Some(match s.verdict {
        Verdict::Pass => return None,
        Verdict::NotSupported if environment_only(s).is_some() => {
            "not supported by this environment"
        }
        Verdict::NotSupported => return None,
        Verdict::Error => "harness error (the grade says nothing about the proxy)",
        Verdict::Interrupted => "interrupted",
        Verdict::Flaky => "flaky (attempts disagree)",
        Verdict::Skipped => "skipped or not fully verified",
        Verdict::NonStrict => {
            "slower than the scenario's cap (within a declared bound) or a SHOULD"
        }
        _ if failed("proxy ready") => "the proxy never became ready (not listening, or it exited)",
        _ => "checks failed",
    })
}

/// One not-passed scenario: id, attempts, harness error, and each check that did not pass with
/// its verdict.
fn print_scenario(s: &reports::ScenarioResult) {
    if let Some(why) = environment_only(s) {
        outln!("    not-supported {}: {why}", s.id);
        return;
    }
    match s
        .timeline
        .iter()
        .find(|t| t.label.starts_with(reports::NOT_STARTED_LABEL))
    {
        Some(t) => outln!("    {} {}: {}", s.verdict, s.id, t.label),
        None => outln!("    {} {}", s.verdict, s.id),
    }
    if s.attempts.len() > 1 {
        outln!("        {}", super::attempts_line(s));
    }
    if let Some(e) = &s.error {
        outln!("        harness error [{}]: {}", e.kind, e.message);
    }
    for c in s
        .checks
        .iter()
        .filter(|c| c.verdict != reports::Verdict::Pass)
    {
        outln!(
            "        {} [{}]: expected {}; observed {}",
            c.name,
            c.verdict,
            c.expected,
            c.observed
        );
    }
}
