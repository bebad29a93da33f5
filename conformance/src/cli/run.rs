//! `conformance run` and `conformance list`: manifest and selection from flags (and `--shard`'s
//! slice of it), the run on a multi-threaded runtime with SIGINT/SIGTERM handling (the first
//! signal cancels the run: running scenarios tear their worlds down, within [`CLEANUP_BOUND`]; a
//! second signal or the bound kills every proxy group and removes every labelled container),
//! reports written (interrupted runs too), exit code from the claimed profiles or the signal
//! (130/143).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use reports::{Outcome, Report};
use scenarios::{Profile, Scenario, Timeouts};

use super::{EXIT_FAILED, ListArgs, RunArgs, parse_profile};
use crate::plan::catalogue::{self, Selection};
use crate::plan::{Durations, Planned};
use crate::error::Error;
use crate::manifest::Manifest;
use crate::runner::{
    Lines, Progress, ProgressBar, RunConfig, Signal, default_jobs, run_all,
};
use crate::{container, exec, proxy};

/// How long the orderly cleanup after the first SIGINT/SIGTERM may take (proxies stopped with
/// their grace, worlds dropped) before the hard kill; well inside the usual 30 s between a CI
/// timeout's SIGTERM and its SIGKILL.
pub(crate) const CLEANUP_BOUND: Duration = Duration::from_secs(10);

/// SIGINT and SIGTERM, listened to from the start of the run (so an early signal is not lost
/// to the default action).
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers; needs a runtime context.
    fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    /// The next signal.
    async fn next(&mut self) -> Signal {
        tokio::select! {
            _ = self.int.recv() => Signal::Int,
            _ = self.term.recv() => Signal::Term,
        }
    }
}

/// How the run ended.
enum Ended {
    /// `run_all` returned (after a signal too: every scenario cleaned up).
    Done(Box<Report>),
    /// A second signal or the cleanup bound cut the cleanup short (why).
    Cut(&'static str),
}

/// The manifest the flags describe.
pub(crate) fn manifest(args: &RunArgs) -> Result<Manifest, Error> {
    let mut m = match (&args.manifest, &args.proxy_cmd) {
        (Some(path), cmd) => {
            let bytes = std::fs::read(path)
                .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
            let mut m = Manifest::parse_bytes(path, &bytes)?;
            if let Some(cmd) = cmd {
                crate::template::check(cmd)?;
                m.set_command(cmd);
            }
            m
        }
        (None, Some(cmd)) => Manifest::from_command(cmd)?,
        (None, None) => Manifest::reference(),
    };
    if let Some(f) = &args.features {
        m.set_features(f)?;
    }
    for b in &args.bound {
        m.set_bound(b)?;
    }
    if let Some(mode) = &args.xds_tls_mode {
        m.set_xds_tls_mode(mode)?;
    }
    if let Some(image) = &args.proxy_image {
        m.set_image(image)?;
    }
    m.validate("flags")?;
    Ok(m)
}

/// The named timeouts with `--timeout name=duration` overrides.
pub(crate) fn timeouts(overrides: &[String]) -> Result<Timeouts, Error> {
    let mut t = Timeouts::default();
    for o in overrides {
        let (name, value) = o
            .split_once('=')
            .ok_or_else(|| Error::Usage(format!("--timeout {o:?}: expected name=duration")))?;
        let d = agent_sim::duration::GoDuration::parse(value.trim())
            .map_err(|e| Error::Usage(format!("--timeout {name}: {e}")))?;
        t.set(name.trim(), d.to_std()).map_err(Error::Usage)?;
    }
    Ok(t)
}

/// Every known scenario: the catalogue plus `--scenario-dir` files.
fn scenarios(dirs: &[std::path::PathBuf]) -> Result<Vec<Scenario>, Error> {
    let mut all = catalogue::builtin();
    for d in dirs {
        all.extend(catalogue::load_dir(d)?);
    }
    catalogue::check_unique(&all)?;
    Ok(all)
}

fn profiles(names: &[String]) -> Result<Vec<Profile>, Error> {
    names
        .iter()
        .filter(|n| !n.trim().is_empty())
        .map(|n| parse_profile(n))
        .collect()
}

fn print_list(plan: &[(Scenario, bool)]) {
    for (s, skipped) in plan {
        let p = match s.profile {
            Profile::Core => "core",
            Profile::L7 => "l7",
            Profile::Extended => "extended",
            Profile::Transparent => "transparent",
        };
        let skip = if *skipped { "  (skipped)" } else { "" };
        println!("{:<34} {:<11} {}{skip}", s.id, p, s.features.join(","));
    }
}

/// `conformance list`.
pub fn list(args: &ListArgs) -> Result<ExitCode, Error> {
    let sel = Selection {
        profiles: profiles(&args.profile)?,
        ..Selection::default()
    };
    let plan: Vec<(Scenario, bool)> = catalogue::select(scenarios(&args.scenario_dir)?, &sel)
        .into_iter()
        .map(|p| (p.scenario().clone(), false))
        .collect();
    print_list(&plan);
    Ok(ExitCode::SUCCESS)
}

/// `conformance run`.
pub fn run(args: &RunArgs) -> Result<ExitCode, Error> {
    let claimed = profiles(&args.profile)?;
    let sel = Selection {
        include: args.scenario.clone(),
        skip: args.skip.clone(),
        profiles: claimed.clone(),
    };
    let plan = catalogue::select(scenarios(&args.scenario_dir)?, &sel);
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
    let mut cfg = RunConfig::new(manifest(args)?, exe);
    cfg.timeouts = timeouts(&args.timeout)?;
    if let Some(seed) = args.seed {
        cfg.seed = seed;
    }
    cfg.jobs = args.jobs.unwrap_or_else(default_jobs).max(1);
    cfg.shard = shard;
    cfg.repeat = args.repeat.max(1);
    cfg.allow_flaky = args.allow_flaky;
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
    let report = match ended {
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
            let Some(report) = interrupt.salvage(why) else {
                proxy::kill_orphans();
                return Ok(ExitCode::from(Signal::Int.exit_code()));
            };
            report
        }
    };
    let n = proxy::kill_orphans();
    if n > 0 {
        eprintln!("killed {n} process(es) the proxies left behind (outside their process groups)");
    }
    let written =
        reports::write_all(&report, &args.report_dir).map_err(|source| Error::ReportDir {
            path: args.report_dir.clone(),
            source,
        })?;
    summarize(&report, &claimed);
    for p in written {
        println!("wrote {}", p.display());
    }
    if let Some(sig) = interrupt.signal() {
        return Ok(ExitCode::from(sig.exit_code()));
    }
    Ok(exit_code(&report, &claimed))
}

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

/// Removes every container this process started (by label), on a fresh runtime.
fn sweep_containers() -> usize {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return 0;
    };
    rt.block_on(container::remove_labelled(std::process::id()))
}

fn report_profile(p: Profile) -> reports::Profile {
    match p {
        Profile::Core => reports::Profile::Core,
        Profile::L7 => reports::Profile::L7,
        Profile::Extended => reports::Profile::Extended,
        Profile::Transparent => reports::Profile::Transparent,
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
