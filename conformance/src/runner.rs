//! Runs scenarios: each in its own world with its own proxy process, `jobs` at a time, and
//! turns what happened into a graded `reports::Report` (proxy info, environment, seeds,
//! durations, checks, timelines and artifacts).

mod artifacts;
mod cancel;
mod launch;
mod progress;
mod repeat;
mod transparent;
mod xds;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reports::{
    CheckResult, ErrorInfo, EventKind, Harness, ProxyInfo, Report, Requirement, ScenarioResult,
    TimelineEvent, Verdict,
};
use scenarios::{Scenario, Timeouts};
use tokio::time::Instant;

pub use self::cancel::{Interrupt, Signal};
pub use self::progress::{Lines, Progress, ProgressBar, Silent};
pub use self::repeat::fold;
use crate::plan::{Planned, Tamper, catalogue, order};
use crate::error::Error;
use crate::exec::Exec;
use crate::manifest::Manifest;
use crate::world::World;

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The proxy's declarations.
    pub manifest: Manifest,
    /// What `{exe}` stands for (the conformance binary, for the bundled reference proxy).
    pub exe: PathBuf,
    /// Named timeouts, with overrides applied.
    pub timeouts: Timeouts,
    /// The run's base seed.
    pub seed: u64,
    /// Scenarios run at the same time.
    pub jobs: usize,
    /// SIGTERM grace before SIGKILL at teardown.
    pub grace: Duration,
    /// A deliberately broken environment (the self-test's; `None` in real runs).
    pub tamper: Option<Tamper>,
    /// With `--shard K/N`: this shard's slice of the plan, recorded in the report.
    pub shard: Option<reports::ShardInfo>,
    /// Expected durations (ms) by scenario id: scenarios start longest first
    /// ([`order::longest_first`]); the report keeps the planned order.
    pub durations: BTreeMap<String, u64>,
    /// How many times each scenario runs (`--repeat N`, at least 1).
    pub repeat: u32,
    /// Whether a `flaky` scenario may leave its profile a success (`--allow-flaky`).
    pub allow_flaky: bool,
    /// Cancels the run (the CLI triggers it on SIGINT/SIGTERM): running scenarios tear their
    /// worlds down and are recorded `interrupted`, the ones not started too.
    pub interrupt: Interrupt,
}

// === impl RunConfig ===

impl RunConfig {
    /// Defaults: named timeouts as documented, a random seed, [`default_jobs`], 2 s grace,
    /// the catalogue's recorded durations.
    pub fn new(manifest: Manifest, exe: PathBuf) -> Self {
        Self {
            manifest,
            exe,
            timeouts: Timeouts::default(),
            seed: rand::random(),
            jobs: default_jobs(),
            grace: Duration::from_secs(2),
            tamper: None,
            shard: None,
            durations: order::recorded(),
            repeat: 1,
            allow_flaky: false,
            interrupt: Interrupt::default(),
        }
    }
}

/// Four per core, at most 8 (8 on a 2-core machine): a scenario spends most of its time
/// waiting (for a change to propagate, through an observation window, for a leaf to renew),
/// not computing, so scenarios overlap well beyond the core count.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(8, |n| n.get().saturating_mul(4).min(8))
}

/// The seed of one scenario: the run's seed mixed with the scenario id (FNV-1a).
pub fn scenario_seed(base: u64, id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^ base
}

/// The report's profile for a scenario's.
fn profile(p: scenarios::Profile) -> reports::Profile {
    match p {
        scenarios::Profile::Core => reports::Profile::Core,
        scenarios::Profile::L7 => reports::Profile::L7,
        scenarios::Profile::Extended => reports::Profile::Extended,
        scenarios::Profile::Transparent => reports::Profile::Transparent,
    }
}

/// The verdict grading will give `s` (`ScenarioResult::graded_verdict`; kept for callers of
/// this crate's API).
pub fn verdict_of(s: &ScenarioResult) -> Verdict {
    s.graded_verdict()
}

/// Runs one scenario in a fresh world. Never fails: harness problems become the result's
/// `error`.
pub async fn run_scenario(cfg: &RunConfig, scenario: &Scenario) -> ScenarioResult {
    let mut result = ScenarioResult::new(
        &scenario.id,
        &scenario.description,
        profile(scenario.profile),
        scenario.features.clone(),
    );
    if let Err(missing) = cfg.manifest.supports(&scenario.features) {
        result.mark_not_supported();
        result.checks.push(CheckResult::new(
            "features",
            Requirement::Must,
            Verdict::NotSupported,
            format!("the proxy declares {}", scenario.features.join(", ")),
            format!("not declared: {}", missing.join(", ")),
        ));
        return result;
    }
    let started = Instant::now();
    let seed = scenario_seed(cfg.seed, &scenario.id);
    let scenario = if scenario.generate.is_some() {
        result.seed = Some(seed);
        match catalogue::expand(scenario, seed) {
            Ok(s) => s,
            Err(e) => return harness_error(result, &e, started),
        }
    } else {
        scenario.clone()
    };
    if cfg.manifest.is_xds() && crate::exec::only_request_log_checks(&scenario.steps) {
        xds::not_supported(&mut result);
        return result;
    }
    if scenario.setup.transparent.is_some() && cfg.manifest.image.is_some() {
        launch::transparent_not_supported(&mut result);
        return result;
    }
    if scenario.setup.transparent.is_some() {
        let tools = match crate::netns::support() {
            Ok(t) => t,
            Err(why) => {
                transparent::not_supported_here(&mut result, &why);
                return result;
            }
        };
        let cfg = cfg.clone();
        let iptables = tools.iptables.clone();
        let blank = result.clone();
        let in_pod = crate::netns::run_in_pod(tools, move |node| async move {
            let r = play(
                &cfg,
                &scenario,
                seed,
                started,
                &mut result,
                Some((node, iptables)),
            )
            .await;
            finish(result, r, started)
        })
        .await;
        return in_pod.unwrap_or_else(|e| harness_error(blank, &e, started));
    }
    let r = play(cfg, &scenario, seed, started, &mut result, None).await;
    finish(result, r, started)
}

/// A played scenario's result, with its harness error (if any) and its duration.
fn finish(mut result: ScenarioResult, r: Result<(), Error>, started: Instant) -> ScenarioResult {
    match r {
        Ok(()) => {
            result.duration_ms = ms(started.elapsed());
            result
        }
        Err(e) => harness_error(result, &e, started),
    }
}

fn harness_error(mut result: ScenarioResult, e: &Error, started: Instant) -> ScenarioResult {
    result.error = Some(ErrorInfo::new(e.kind(), e.to_string()));
    result.duration_ms = ms(started.elapsed());
    result
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

async fn play(
    cfg: &RunConfig,
    scenario: &Scenario,
    seed: u64,
    started: Instant,
    result: &mut ScenarioResult,
    pod: Option<(crate::netns::Node, PathBuf)>,
) -> Result<(), Error> {
    let (node, iptables) = pod.unzip();
    let interrupt = &cfg.interrupt;
    let cut = |result: &mut ScenarioResult, sig: Signal, what: &str| {
        let detail = format!("the run was cancelled {what}; its world was torn down");
        cancel::mark(result, sig, ms(started.elapsed()), &detail);
    };
    let build = World::build(&scenario.setup, &cfg.manifest, &cfg.timeouts, seed, node);
    let mut world = match until_cancelled(interrupt, build).await {
        Ok(w) => w?,
        Err(sig) => {
            cut(result, sig, "while its world was being built");
            return Ok(());
        }
    };
    if let (Some(cmd), Some(iptables)) = (
        world.redirect_command(&cfg.manifest, &cfg.exe, cfg.tamper)?,
        iptables,
    ) {
        transparent::redirect(&cmd, &iptables, &mut result.artifacts).await?;
        result.timeline.push(TimelineEvent::new(
            ms(started.elapsed()),
            EventKind::Step,
            "redirect rules installed",
        ));
    }
    let command = world.proxy_command(&cfg.manifest, &cfg.exe)?;
    result.artifacts.push(reports::Artifact::text(
        "proxy-command",
        command.argv.join(" "),
    ));
    let at = |t: Instant| ms(t.saturating_duration_since(started));
    let image = cfg.manifest.image_ref()?;
    let launch = launch::Launched::start(&command, image.as_ref(), world.dir());
    let mut proxy = match until_cancelled(interrupt, launch).await {
        Ok(p) => p?,
        Err(sig) => {
            cut(result, sig, "while the proxy was being started");
            return Ok(());
        }
    };
    let spawned_ms = at(Instant::now());
    let mut event = TimelineEvent::new(spawned_ms, EventKind::Step, "proxy started");
    if let Some(detail) = proxy.started_detail() {
        event = event.detail(detail);
    }
    result.timeline.push(event);
    let ready_timeout = cfg.timeouts.get("ready").unwrap_or(Duration::from_secs(30));
    let targets = world.ready_addrs();
    let ready = match until_cancelled(interrupt, proxy.wait_ready(&targets, ready_timeout)).await {
        Ok(r) => Some(r),
        Err(sig) => {
            cut(result, sig, "while it waited for the proxy to be ready");
            None
        }
    };
    let outcome = match ready {
        None => Ok(()),
        Some(Err(not_ready)) => {
            let check = CheckResult::new(
                "proxy ready",
                Requirement::Must,
                Verdict::Fail,
                format!(
                    "the inbound listener and every upstream listener accept connections within \
                     ready ({} ms)",
                    ready_timeout.as_millis()
                ),
                not_ready.to_string(),
            )
            .at(at(Instant::now()));
            result.checks.push(check);
            Ok(())
        }
        Some(Ok(took)) => {
            result.timeline.push(
                TimelineEvent::new(at(Instant::now()), EventKind::Observation, "proxy ready")
                    .detail(format!("ports accepted after {} ms", took.as_millis()))
                    .ok(true),
            );
            if world.xds.is_some() {
                // Envoy opens listeners from LDS; let it answer every push before step one.
                let settle = xds::settle(world.control().xds_log(), ready_timeout);
                if let Ok((settled, _)) = until_cancelled(interrupt, settle).await {
                    result
                        .timeline
                        .push(xds::answered_event(at(Instant::now()), settled));
                }
            }
            let mut exec = Exec::new(&mut world, &cfg.timeouts, cfg.manifest.bounds, started);
            let r = match until_cancelled(interrupt, exec.run(&scenario.steps)).await {
                Ok(r) => r,
                Err(sig) => {
                    // Dropping the steps' future drops their clients, probes and fault guards.
                    cut(result, sig, "while its steps ran");
                    Ok(())
                }
            };
            result.timeline.append(&mut exec.timeline);
            result.checks.append(&mut exec.checks);
            r
        }
    };
    // The xDS log as it stands while the proxy still runs (its streams count as open).
    let xds_entries = match &world.xds {
        Some(_) => {
            let log = world.control().xds_log();
            let propagation = cfg
                .timeouts
                .get("propagation")
                .unwrap_or(Duration::from_secs(5));
            // Cancelled: take the log as it stands, without waiting for it to settle.
            let wait = if interrupt.signal().is_some() {
                Duration::ZERO
            } else {
                propagation
            };
            Some(xds::settle(log, wait).await.1)
        }
        None => None,
    };
    let down = proxy.teardown(cfg.grace).await;
    let mut stopped = TimelineEvent::new(at(Instant::now()), EventKind::Step, "proxy stopped")
        .detail(format!("exit: {}", down.exit));
    if down.killed {
        stopped = stopped.detail(format!(
            "exit: {} (SIGKILL after {:?} grace)",
            down.exit, cfg.grace
        ));
    }
    result.timeline.push(stopped);
    result.timeline.extend(artifacts::log_events(
        proxy.stdout(),
        proxy.stderr(),
        spawned_ms,
    ));
    result.timeline.sort_by_key(|e| e.at_ms);
    result.artifacts.extend(artifacts::collect(
        proxy.stdout(),
        proxy.stderr(),
        &world.control().request_log(),
    ));
    let Some(entries) = xds_entries else {
        return outcome;
    };
    let log = world.control().xds_log();
    let error = xds::record(result, &entries, log, &world.token, at(Instant::now()));
    match (outcome, error) {
        (Ok(()), Some(e)) => Err(e),
        (outcome, _) => outcome,
    }
}

/// `fut`'s output, or the signal that cancelled the run first (`fut` is then dropped).
async fn until_cancelled<T>(
    interrupt: &Interrupt,
    fut: impl Future<Output = T>,
) -> Result<T, Signal> {
    tokio::select! {
        biased;
        t = fut => Ok(t),
        sig = interrupt.cancelled() => Err(sig),
    }
}

/// A result with nothing recorded yet for `s`.
pub(super) fn blank(s: &Scenario) -> ScenarioResult {
    ScenarioResult::new(
        &s.id,
        &s.description,
        profile(s.profile),
        s.features.clone(),
    )
}

/// Runs every planned scenario (`cfg.jobs` at a time) and returns the graded report, scenarios
/// in plan order. Runs on the current tokio runtime.
pub async fn run_all(cfg: &RunConfig, plan: Vec<Planned>, progress: Arc<dyn Progress>) -> Report {
    let started_at = artifacts::now_rfc3339();
    let clock = Instant::now();
    let m = &cfg.manifest;
    let proxy = ProxyInfo {
        name: m.name.clone(),
        version: m.version.clone(),
        command: match &m.image {
            Some(image) => format!("{} (in image {image})", m.command),
            None => m.command.clone(),
        },
        features: m.features.clone(),
        bounds: m.bounds_map(),
        xds_tls_mode: m.is_xds().then(|| m.xds.tls_mode.as_str().to_owned()),
    };
    let mut env = artifacts::environment();
    let timeouts: Vec<String> = cfg
        .timeouts
        .iter()
        .map(|(k, v)| format!("{k}={}ms", v.as_millis()))
        .collect();
    env.notes
        .push(format!("named timeouts: {}", timeouts.join(", ")));
    env.notes.push(format!(
        "declared bounds are given {} ms of slack; {} job(s) in parallel",
        crate::exec::BOUND_SLACK.as_millis(),
        cfg.jobs
    ));
    let mut report = Report::new(
        Harness::new(env!("CARGO_PKG_VERSION")),
        proxy,
        env,
        started_at,
        cfg.seed,
    );
    if let Some(shard) = &cfg.shard {
        report.environment.notes.push(shard.note());
        report.shard = Some(shard.clone());
    }
    if cfg.repeat > 1 {
        report.environment.notes.push(format!(
            "every scenario ran {} times (a fresh world and proxy per attempt, the same seed)",
            cfg.repeat
        ));
    }
    report.repeat = cfg.repeat.max(1);
    report.allow_flaky = cfg.allow_flaky;
    cfg.interrupt.open_board(
        report.clone(),
        plan.iter().map(|p| blank(p.scenario())).collect(),
    );
    report.scenarios = repeat::run_plan(cfg, plan, progress.clone()).await;
    report.duration_ms = ms(clock.elapsed());
    if let Some(sig) = cfg.interrupt.signal() {
        let n = report
            .scenarios
            .iter()
            .filter(|s| s.verdict == Verdict::Interrupted)
            .count();
        report.environment.notes.push(format!(
            "run interrupted by {}: {n} scenario(s) interrupted or not started",
            sig.name()
        ));
    }
    report.grade();
    progress.finish(&report);
    report
}
