//! Executes a plan: every [`Planned`] scenario in its own world with its own proxy process,
//! `jobs` at a time (started in [`order::longest_first`] order, repeated with `--repeat`), and
//! turns what happened into a graded `reports::Report` (proxy info, environment, seeds,
//! durations, checks, timelines and artifacts). This file owns the run's configuration and the
//! report around the scenarios; one scenario is `runner/scenario.rs` (checks before it starts)
//! and `runner/play.rs` (world, proxy, steps, teardown).

mod artifacts;
mod cancel;
mod launch;
mod play;
mod progress;
mod repeat;
mod scenario;
mod transparent;
mod xds;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reports::{Harness, ProxyInfo, Report, ScenarioResult, Verdict};
use scenarios::Timeouts;
use tokio::time::Instant;

pub use self::cancel::{Interrupt, Signal};
pub use self::progress::{Lines, Progress, ProgressBar, Silent};
pub use self::repeat::fold;
pub use self::scenario::run_scenario;
use self::scenario::{blank, ms};
use crate::manifest::Manifest;
use crate::plan::{Planned, Tamper, order};

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
    /// `--fail-fast`: after the first scenario attempt graded `fail` or `error`, no other
    /// starts (running ones finish); the rest are reported skipped.
    pub fail_fast: bool,
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
            fail_fast: false,
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

/// The verdict grading will give `s` (`ScenarioResult::graded_verdict`; kept for callers of
/// this crate's API).
pub fn verdict_of(s: &ScenarioResult) -> Verdict {
    s.graded_verdict()
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
