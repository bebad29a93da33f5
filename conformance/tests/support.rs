//! Shared by the suite and the self-test: which scenarios to run, a runtime per trial, and a
//! readable failure message (failed checks with expected/observed/when, and the proxy's
//! output tail).

use std::path::PathBuf;
use std::time::Duration;

use conformance::{Manifest, RunConfig, catalogue};
use reports::{ScenarioResult, Verdict};
use scenarios::Scenario;

/// The scenarios under test: the built-in catalogue, longest recorded duration first (trials
/// start in this order, so the longest does not start last), unrecorded ones last.
pub(crate) fn scenarios() -> Vec<Scenario> {
    let durations = config("").durations;
    let mut all = catalogue::builtin();
    all.sort_by_key(|s| std::cmp::Reverse(durations.get(&s.id).copied()));
    all
}

/// Trials run [`conformance::default_jobs`] at a time unless `--test-threads` says otherwise:
/// like `conformance run`, a trial mostly waits, so more of them than cores overlap well.
pub(crate) fn default_threads(args: &mut libtest_mimic::Arguments) {
    if args.test_threads.is_none() {
        args.test_threads = Some(conformance::default_jobs());
    }
}

/// Why `s` cannot run here, when it needs transparent mode and this machine cannot do it.
pub(crate) fn unsupported_here(s: &Scenario) -> Option<String> {
    s.setup.transparent.as_ref()?;
    conformance::transparent_support()
        .err()
        .map(|why| format!("transparent scenarios cannot run here: {why}"))
}

/// Whether to ignore `s`'s trial: it cannot run here and the environment does not require it
/// (`CONFORMANCE_REQUIRE_NETNS=1`, set by CI, turns that into a failure instead).
pub(crate) fn skip_here(s: &Scenario) -> bool {
    let required = std::env::var("CONFORMANCE_REQUIRE_NETNS").is_ok_and(|v| v == "1");
    match unsupported_here(s) {
        Some(why) if !required => {
            eprintln!("note: {} is ignored: {why}", s.id);
            true
        }
        _ => false,
    }
}

/// A run config for the bundled reference proxy started as
/// `conformance reference-proxy [extra args] -proxy-id {proxy_id}`.
pub(crate) fn config(extra: &str) -> RunConfig {
    let mut manifest = Manifest::reference();
    if !extra.is_empty() {
        manifest.command = format!("{{exe}} reference-proxy {extra} -proxy-id {{proxy_id}}");
    }
    let mut cfg = RunConfig::new(manifest, PathBuf::from(env!("CARGO_BIN_EXE_conformance")));
    cfg.seed = 0x5eed;
    cfg.grace = Duration::from_secs(2);
    cfg
}

/// Runs one scenario on its own runtime.
pub(crate) fn run(cfg: &RunConfig, scenario: &Scenario) -> (ScenarioResult, Verdict) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let result = rt.block_on(conformance::run_scenario(cfg, scenario));
    let verdict = conformance::verdict_of(&result);
    (result, verdict)
}

/// What went wrong, for a failing trial.
pub(crate) fn explain(r: &ScenarioResult, verdict: Verdict) -> String {
    let mut out = format!("scenario {} ended {verdict}\n", r.id);
    if let Some(e) = &r.error {
        out.push_str(&format!("  harness error [{}]: {}\n", e.kind, e.message));
    }
    for c in &r.checks {
        if c.verdict == Verdict::Pass {
            continue;
        }
        out.push_str(&format!(
            "  check {:?} {}: expected {}; observed {} (at {:?} ms, took {:?} ms, bound {:?} ms)\n",
            c.name, c.verdict, c.expected, c.observed, c.at_ms, c.took_ms, c.bound_ms
        ));
    }
    out.push_str("  timeline:\n");
    for t in &r.timeline {
        out.push_str(&format!(
            "    {:>6} {:?} {} {} {:?}\n",
            t.at_ms,
            t.kind,
            t.label,
            t.detail.as_deref().unwrap_or(""),
            t.ok
        ));
    }
    for a in &r.artifacts {
        if a.name == "proxy-stderr" || a.name == "proxy-stdout" {
            let tail: Vec<&str> = a.content.lines().rev().take(40).collect();
            out.push_str(&format!("  {} (last {} lines):\n", a.name, tail.len()));
            for l in tail.into_iter().rev() {
                out.push_str(&format!("    {l}\n"));
            }
        }
    }
    out
}
