//! `conformance run`: the plan from flags (selection, claimed profiles, `--durations`,
//! `--shard`'s slice), handed with the run's configuration to the runner on a multi-threaded
//! runtime with SIGINT/SIGTERM handling (the first signal cancels the run: running scenarios
//! tear their worlds down, within [`CLEANUP_BOUND`]; a second signal or the bound kills every
//! proxy group and removes every labelled container), reports written (interrupted runs too),
//! exit code from the claimed profiles or the signal (130/143).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use reports::Report;
use scenarios::Scenario;

use super::RunArgs;
use super::flags::{manifest, profiles, report_profile, scenarios, timeouts};
use super::list::print_list;
use super::out::outln;
use super::preflight;
use super::signals::{Signals, reap_children};
use super::summary::{environment_hint, exit_code, summarize};
use crate::error::Error;
use crate::plan::catalogue::{self, Selection};
use crate::plan::{Durations, Planned};
use crate::runner::{Lines, Progress, ProgressBar, RunConfig, Signal, default_jobs, run_all};
use crate::{container, proxy};

/// How long the orderly cleanup after the first SIGINT/SIGTERM may take (proxies stopped with
/// their grace, worlds dropped) before the hard kill; well inside the usual 30 s between a CI
/// timeout's SIGTERM and its SIGKILL.
pub(crate) const CLEANUP_BOUND: Duration = Duration::from_secs(10);

/// How the run ended.
enum Ended {
    /// `run_all` returned (after a signal too: every scenario cleaned up).
    Done(Box<Report>),
    /// A second signal or the cleanup bound cut the cleanup short (why).
    Cut(&'static str),
}

/// `conformance run`.
pub fn run(args: &RunArgs) -> Result<ExitCode, Error> {
    let claimed = profiles(&args.profile)?;
    let sel = Selection {
        include: args.scenario.clone(),
        skip: args.skip.clone(),
        profiles: claimed.clone(),
    };
    let all = scenarios(&args.scenario_dir)?;
    preflight::globs(&all, &args.scenario)?;
    let plan = catalogue::select(all, &sel);
    let manifest = manifest(args)?;
    if !args.list {
        // Before sharding: a shard may hold none of the scenarios the proxy can run.
        preflight::program(&manifest)?;
        preflight::features(&plan, &manifest)?;
    }
    // Claimed = asked for, or every profile with a selected scenario (of the whole plan).
    let mut claimed: Vec<reports::Profile> = claimed.into_iter().map(report_profile).collect();
    if claimed.is_empty() {
        claimed = plan
            .iter()
            .map(|p| report_profile(p.scenario().profile))
            .collect();
        claimed.sort();
        claimed.dedup();
    }
    // `--durations` or the built-in table: read once, for the shard split and the start order.
    let durations = match &args.durations {
        Some(path) => Durations::read(path)?,
        None => Durations::recorded()?,
    };
    let (plan, shard) = match args.shard {
        Some(spec) => {
            let (mine, info) = super::merge::shard_plan(plan, spec, &durations, &claimed);
            (mine, Some(info))
        }
        None => (plan, None),
    };
    if args.list {
        let list: Vec<(Scenario, bool)> = plan
            .iter()
            .map(|p| (p.scenario().clone(), matches!(p, Planned::Skip(_))))
            .collect();
        print_list(&list);
        return Ok(ExitCode::SUCCESS);
    }
    let exe = std::env::current_exe().map_err(|e| Error::io("find the conformance binary", e))?;
    let mut cfg = RunConfig::new(manifest, exe);
    cfg.timeouts = timeouts(&args.timeout)?;
    if let Some(seed) = args.seed {
        cfg.seed = seed;
    }
    cfg.jobs = args.jobs.unwrap_or_else(default_jobs).max(1);
    cfg.shard = shard;
    cfg.repeat = args.repeat.max(1);
    cfg.allow_flaky = args.allow_flaky;
    cfg.fail_fast = args.fail_fast;
    cfg.durations = durations.0;
    let progress: Arc<dyn Progress> = if std::io::stderr().is_terminal() {
        Arc::new(ProgressBar::default())
    } else {
        Arc::new(Lines::default())
    };
    // Descendants that leave their proxy's process group come back to us, to be killed at the end.
    proxy::adopt_orphans();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("start the runtime", e))?;
    let mut signals = {
        let _in_rt = rt.enter();
        Signals::install().map_err(|e| Error::io("install the signal handlers", e))?
    };
    let image = cfg.manifest.image_ref()?;
    let interrupt = cfg.interrupt.clone();
    let ended = rt.block_on(async {
        if let Some(image) = &image {
            // A missing daemon or image is a usage error now, not an error in every scenario.
            tokio::select! {
                r = container::preflight(image) => r?,
                sig = signals.next() => interrupt.trigger(sig),
            }
        }
        let run = run_all(&cfg, plan, progress);
        tokio::pin!(run);
        if interrupt.signal().is_none() {
            tokio::select! {
                r = &mut run => return Ok(Ended::Done(Box::new(r))),
                sig = signals.next() => interrupt.trigger(sig),
            }
        }
        eprintln!(
            "interrupted by {}: stopping the running scenarios (at most {} s; signal again to \
             kill at once)",
            interrupt.signal().map_or("a signal", Signal::name),
            CLEANUP_BOUND.as_secs()
        );
        Ok::<_, Error>(tokio::select! {
            r = &mut run => Ended::Done(Box::new(r)),
            _ = signals.next() => Ended::Cut("a second signal"),
            () = tokio::time::sleep(CLEANUP_BOUND) => Ended::Cut("the cleanup bound ran out"),
        })
    })?;
    let mut report = match ended {
        Ended::Done(report) => {
            drop(rt);
            if interrupt.signal().is_some() {
                // Every scenario tore its proxy down; anything still registered is a bug, and is
                // killed rather than left behind.
                let n = proxy::kill_all_live();
                if n > 0 {
                    eprintln!("interrupted: killed {n} leftover proxy process group(s)");
                }
                if image.is_some() {
                    sweep_containers();
                }
            }
            *report
        }
        Ended::Cut(why) => {
            let n = proxy::kill_all_live();
            eprintln!("interrupted ({why}): killed {n} proxy process group(s)");
            // Stop every scenario (no container can be created after this), then remove every
            // container this run labelled, including any caught between create and start.
            rt.shutdown_timeout(Duration::from_secs(2));
            if image.is_some() {
                let n = sweep_containers();
                eprintln!("interrupted: removed {n} proxy container(s)");
            }
            let reaped = reap_children(Duration::from_secs(2));
            if reaped > 0 {
                tracing::debug!(reaped, "reaped killed children");
            }
            let Some(report) = interrupt.salvage(why) else {
                proxy::kill_orphans();
                reap_children(Duration::from_secs(1));
                return Ok(ExitCode::from(Signal::Int.exit_code()));
            };
            report
        }
    };
    let n = proxy::kill_orphans();
    if n > 0 {
        eprintln!("killed {n} process(es) the proxies left behind (outside their process groups)");
    }
    // No defunct child is left behind: what was killed is waited for.
    reap_children(Duration::from_millis(if n > 0 { 1000 } else { 0 }));
    super::links::annotate(&mut report, &args.report_dir);
    let written =
        reports::write_all(&report, &args.report_dir).map_err(|source| Error::ReportDir {
            path: args.report_dir.clone(),
            source,
        })?;
    summarize(&report, &claimed);
    for p in written {
        outln!("wrote {}", p.display());
    }
    if let Some(sig) = interrupt.signal() {
        return Ok(ExitCode::from(sig.exit_code()));
    }
    if let Some(hint) = environment_hint(&report, &claimed) {
        outln!("{hint}");
    }
    Ok(exit_code(&report, &claimed))
}

/// Removes every container this process started (by label), on a fresh runtime. A create request
/// that was already on its way to the daemon when the scenarios stopped can still produce a
/// container after the first pass, so the label is looked up again until two lookups
/// [`SWEEP_RECHECK`] apart find nothing (bounded by [`SWEEP_BOUND`]).
fn sweep_containers() -> usize {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return 0;
    };
    rt.block_on(async {
        let pid = std::process::id();
        let deadline = tokio::time::Instant::now() + SWEEP_BOUND;
        let mut removed = container::remove_labelled(pid).await;
        let mut quiet = 0;
        while quiet < 2 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(SWEEP_RECHECK).await;
            match container::remove_labelled(pid).await {
                0 => quiet += 1,
                n => {
                    removed += n;
                    quiet = 0;
                }
            }
        }
        removed
    })
}

/// How long after a sweep the label is looked up again.
const SWEEP_RECHECK: Duration = Duration::from_millis(250);
/// The most a sweep waits for late creations.
const SWEEP_BOUND: Duration = Duration::from_secs(3);
