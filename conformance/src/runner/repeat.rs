//! Runs the plan with every scenario `repeat` times (`conformance run --repeat N`): each attempt
//! in a fresh world with a fresh proxy and the same scenario seed (so attempts differ only in
//! timing, load and the proxy's own behaviour, not in generated input), attempts of all
//! scenarios `jobs` at a time, in rounds (every scenario's first attempt starts before any
//! second one), longest first within a round. The attempts of a scenario are folded into one `ScenarioResult`: a summary per
//! attempt plus the full detail of the representative attempt (the first non-passing, else the
//! first); grading then decides `flaky`. With `--fail-fast`, the first attempt graded `fail`
//! or `error` stops the queue: attempts not yet started are recorded skipped, with why.

use std::sync::Arc;

use reports::{Attempt, ErrorInfo, ScenarioResult, Verdict};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;

use super::cancel::Signal;
use super::{Progress, RunConfig, blank, run_scenario};
use crate::plan::{Planned, order};

/// Every planned scenario's result, in plan order (attempts folded when `cfg.repeat > 1`).
pub(super) async fn run_plan(
    cfg: &RunConfig,
    plan: Vec<Planned>,
    progress: Arc<dyn Progress>,
) -> Vec<ScenarioResult> {
    let repeat = cfg.repeat.max(1) as usize;
    let runs = plan.iter().filter(|p| matches!(p, Planned::Run(_))).count();
    progress.start(plan.len() - runs + runs * repeat);
    let permits = Arc::new(Semaphore::new(cfg.jobs.max(1)));
    let cfg = Arc::new(cfg.clone());
    let mut handles: Vec<Vec<JoinHandle<ScenarioResult>>> = plan.iter().map(|_| vec![]).collect();
    // Longest first (by recorded durations), so the longest scenario does not start last.
    let start = order::longest_first(
        plan.iter().map(|p| p.scenario().id.as_str()),
        &cfg.durations,
    );
    // Once a signal arrives, no attempt starts: each left is recorded as not started.
    let mut cancelled: Option<Signal> = None;
    // With --fail-fast: the id of the first scenario that failed; none starts after it.
    let (failed_tx, failed_rx) = watch::channel(None::<String>);
    let failed_tx = Arc::new(failed_tx);
    let mut stopped: Option<String> = None;
    for round in 0..repeat {
        for (i, p) in start.iter().map(|&i| (i, &plan[i])) {
            if round > 0 && matches!(p, Planned::Skip(_)) {
                continue;
            }
            let (cfg, progress) = (cfg.clone(), progress.clone());
            let p = p.clone();
            // Taken here, not in the task: attempts start in queue order, whatever the
            // scheduler does (an alternating proxy then alternates deterministically).
            let mut failed = failed_rx.clone();
            let permit = match (cancelled, &stopped) {
                (Some(sig), _) => Err(Stop::Signal(sig)),
                (None, Some(id)) => Err(Stop::FailFast(id.clone())),
                (None, None) => tokio::select! {
                    biased;
                    sig = cfg.interrupt.cancelled() => Err(Stop::Signal(sig)),
                    Ok(id) = failed.wait_for(Option::is_some) => {
                        Err(Stop::FailFast(id.clone().unwrap_or_default()))
                    }
                    p = permits.clone().acquire_owned() => Ok(p),
                },
            };
            match &permit {
                Err(Stop::Signal(sig)) => cancelled = Some(*sig),
                Err(Stop::FailFast(id)) => stopped = Some(id.clone()),
                Ok(_) => {}
            }
            let failed_tx = failed_tx.clone();
            let scope = progress.clone();
            handles[i].push(tokio::spawn(super::progress::CURRENT.scope(
                scope,
                async move {
                    let r = match (permit, &p) {
                        (_, Planned::Skip(s)) => {
                            progress.begin(&s.id);
                            let mut r = blank(s);
                            r.mark_skipped();
                            r
                        }
                        (Err(Stop::Signal(sig)), Planned::Run(s)) => {
                            super::cancel::not_started(blank(s), sig)
                        }
                        (Err(Stop::FailFast(after)), Planned::Run(s)) => {
                            progress.begin(&s.id);
                            not_started_fail_fast(blank(s), &after)
                        }
                        (Ok(_permit), Planned::Run(s)) => {
                            progress.begin(&s.id);
                            let r = run_scenario(&cfg, s).await;
                            if cfg.fail_fast
                                && matches!(r.graded_verdict(), Verdict::Fail | Verdict::Error)
                            {
                                failed_tx.send_if_modified(|first| {
                                    first.is_none() && first.replace(s.id.clone()).is_none()
                                });
                            }
                            r
                        }
                    };
                    // The latest finished attempt, for the report salvaged if cleanup is cut short.
                    cfg.interrupt.post(i, &r);
                    progress.end(&r, r.graded_verdict());
                    r
                },
            )));
        }
    }
    let mut results = Vec::with_capacity(plan.len());
    for (p, handles) in plan.iter().zip(handles) {
        let mut attempts = Vec::with_capacity(handles.len());
        for handle in handles {
            attempts.push(handle.await.unwrap_or_else(|e| {
                let mut r = blank(p.scenario());
                r.error = Some(ErrorInfo::new("harness_panic", e.to_string()));
                r
            }));
        }
        results.push(fold(attempts));
    }
    results
}

/// Why an attempt did not start.
enum Stop {
    /// SIGINT/SIGTERM.
    Signal(Signal),
    /// `--fail-fast`, after this scenario failed.
    FailFast(String),
}

/// An attempt `--fail-fast` kept from starting: skipped, saying after which failure.
fn not_started_fail_fast(mut r: ScenarioResult, after: &str) -> ScenarioResult {
    r.mark_skipped();
    r.timeline.push(reports::TimelineEvent::new(
        0,
        reports::EventKind::Step,
        format!(
            "{}--fail-fast stopped the run after {after} failed",
            reports::NOT_STARTED_LABEL
        ),
    ));
    r
}

/// One result from a scenario's attempts (in run order, at least one): a single attempt as it
/// is; several as the representative attempt with every attempt summarised in `attempts`.
pub fn fold(mut attempts: Vec<ScenarioResult>) -> ScenarioResult {
    if attempts.len() < 2 {
        return attempts.pop().unwrap_or_else(|| {
            let mut r = ScenarioResult::new("", "", reports::Profile::Core, vec![]);
            r.error = Some(ErrorInfo::new("harness_panic", "no attempt ran"));
            r
        });
    }
    let summaries: Vec<Attempt> = attempts
        .iter()
        .map(|r| Attempt::of(r, r.graded_verdict()))
        .collect();
    let at = summaries
        .iter()
        .position(|a| a.verdict != Verdict::Pass)
        .unwrap_or(0);
    let mut representative = attempts.swap_remove(at);
    representative.attempts = summaries;
    representative
}

#[cfg(test)]
mod tests;
