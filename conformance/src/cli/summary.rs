//! How a finished run (or merged shards) ends on the terminal: the summary printed (shard,
//! repeat, per-profile counts, every scenario not passed with its failed checks) and the exit
//! code from the claimed profiles.

use std::process::ExitCode;

use reports::{Outcome, Report};

use super::EXIT_FAILED;
use crate::exec;

/// The exit code of a graded run (or merged shards): 2 if any scenario ended `error`, else 0
/// when every claimed profile is a success, else 1. A shard answers only for the profiles it
/// ran scenarios of (an empty shard, or one whose share of a profile was not supported, is
/// fine): the merged report decides the rest.
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
    } else {
        ExitCode::from(EXIT_FAILED)
    }
}

pub(super) fn summarize(report: &Report, claimed: &[reports::Profile]) {
    if let Some(s) = &report.shard {
        println!(
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
        println!(
            "repeat {}: {flaky} flaky scenario(s){allowed}",
            report.repeat
        );
    }
    println!(
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
        println!(
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
    for s in &report.scenarios {
        let here = s.checks.iter().find(|c| {
            c.name == reports::ENVIRONMENT_CHECK && c.verdict == reports::Verdict::NotSupported
        });
        match (s.verdict, here) {
            (reports::Verdict::NotSupported, Some(c)) => {
                println!("  not-supported {}: {}", s.id, c.observed);
                continue;
            }
            (reports::Verdict::Pass | reports::Verdict::NotSupported, _) => continue,
            _ => {}
        }
        println!("  {} {}", s.verdict, s.id);
        if s.attempts.len() > 1 {
            println!("      {}", super::attempts_line(s));
        }
        if let Some(e) = &s.error {
            println!("      harness error [{}]: {}", e.kind, e.message);
        }
        for c in s
            .checks
            .iter()
            .filter(|c| c.verdict != reports::Verdict::Pass)
        {
            println!(
                "      {}: expected {}; observed {}",
                c.name, c.expected, c.observed
            );
        }
    }
    if report
        .scenarios
        .iter()
        .any(|s| s.verdict == reports::Verdict::Fail)
    {
        println!("  (details and timelines: report.html)");
    }
}
