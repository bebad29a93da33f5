//! Nothing left behind: real `conformance run`s (a normal one, a failed one, and ones
//! interrupted by SIGINT/SIGTERM before the first scenario, mid-scenario, during teardown, twice,
//! in a network namespace, in a container) must leave no process, listening socket, named
//! network namespace, temporary file or container, and interrupted runs must still write their
//! reports with the unfinished scenarios marked `interrupted`.
//!
//! Every run gets an empty `TMPDIR` and a unique marker variable in its environment (set on the
//! child's `Command`); every descendant inherits the marker, so survivors are found by scanning
//! `/proc/*/environ`. Signals are sent on events (a progress line, the proxy process appearing,
//! the proxy noting SIGTERM), never after a fixed sleep. The transparent trial is ignored where
//! namespaces cannot be made (not root, tools missing) unless `CONFORMANCE_REQUIRE_NETNS=1`; the
//! Envoy trial where there is no Envoy (`ENVOY_BIN`, else `.tools/`) unless
//! `CONFORMANCE_REQUIRE_ENVOY=1`; the image trial where Docker or the image is missing unless
//! `CONFORMANCE_REQUIRE_DOCKER=1`.

#[path = "leaks/probe.rs"]
mod probe;

use std::path::{Path, PathBuf};
use std::time::Duration;

use libtest_mimic::{Arguments, Failed, Trial};
use nix::sys::signal::Signal::{self, SIGINT, SIGTERM};
use reports::Verdict;

use self::probe::{Run, Waited};

/// How long any one event may take to show (generous: a busy 2-core machine).
const EVENT: Duration = Duration::from_secs(60);

fn normal() -> Result<(), Failed> {
    let run = Run::start(&["--scenario", "served-identity,l4-allow-deny"], &[])?;
    let out = run.wait_exit()?;
    out.expect_code(0)?;
    out.expect_clean()?;
    let r = out.report()?;
    out.expect(
        r.scenarios.iter().all(|s| s.verdict == Verdict::Pass),
        "all pass",
    )
}

fn failed() -> Result<(), Failed> {
    let cmd = "{exe} reference-proxy --sabotage ignore-deny -proxy-id {proxy_id}";
    let args = [
        "--scenario",
        "l4-allow-deny",
        "--proxy-cmd",
        cmd,
        "--features",
        "l4",
    ];
    let run = Run::start(&args, &[])?;
    let out = run.wait_exit()?;
    out.expect_code(1)?;
    out.expect_clean()?;
    let r = out.report()?;
    out.expect(
        r.scenarios[0].verdict == Verdict::Fail,
        "the sabotage fails",
    )
}

/// A proxy that never gets ready (so a scenario lasts as long as the `ready` timeout, 30 s).
const NEVER_READY: &str = "sh -c 'while :; do sleep 0.1; done' {proxy_id}";

/// A proxy that starts a helper in a session of its own (out of its process group, which the
/// teardown kills): the harness, its subreaper, kills it at the end.
fn escaped() -> Result<(), Failed> {
    let cmd = "sh -c 'setsid sleep 300 & exec {exe} reference-proxy -proxy-id {proxy_id}'";
    let args = [
        "--scenario",
        "served-identity",
        "--proxy-cmd",
        cmd,
        "--features",
        "l4",
    ];
    let run = Run::start(&args, &[])?;
    let out = run.wait_exit()?;
    out.expect_code(0)?;
    out.expect_clean()?;
    out.expect(
        out.stderr()
            .contains("killed 1 process(es) the proxies left behind"),
        "the harness says it killed the escaped helper",
    )
}

/// Signalled as soon as the run says it starts: one at a time, the first scenario (whichever it
/// is) is cut short while it waits for its never-ready proxy, the other two never start.
fn early(sig: Signal) -> Result<(), Failed> {
    let scenarios = "served-identity,l4-allow-deny,upstream-basic";
    let args = [
        "--scenario",
        scenarios,
        "--jobs",
        "1",
        "--proxy-cmd",
        NEVER_READY,
        "--features",
        "l4,upstreams",
    ];
    let run = Run::start(&args, &[])?;
    run.wait_for("the progress line", |r| {
        r.stderr().contains("running 3 scenarios")
    })?;
    run.signal(sig)?;
    let out = run.wait_exit()?;
    out.expect_interrupted(sig)?;
    let r = out.report()?;
    let before = format!("interrupted by {} before it started", name(sig));
    let not_started: Vec<_> = r
        .scenarios
        .iter()
        .filter(|s| s.timeline.iter().any(|e| e.label == before))
        .collect();
    out.expect(not_started.len() == 2, "two scenarios never started")?;
    out.expect(
        not_started
            .iter()
            .all(|s| s.checks.is_empty() && s.verdict == Verdict::Interrupted),
        "not-started scenarios are interrupted, with no checks",
    )?;
    out.expect(
        r.scenarios
            .iter()
            .all(|s| s.verdict == Verdict::Interrupted),
        "the one that had started is interrupted too",
    )
}

/// Signalled once the proxy of a long scenario is up: that scenario is cut short (its world torn
/// down), the one that finished before keeps its result.
fn mid_scenario(sig: Signal) -> Result<(), Failed> {
    // Two at a time: served-identity (tens of ms) ends while leaf-renewal (seconds) runs.
    let run = Run::start(
        &["--scenario", "served-identity,leaf-renewal", "--jobs", "2"],
        &[],
    )?;
    run.wait_for("served-identity to finish", |r| {
        r.stderr().contains("served-identity")
    })?;
    run.wait_for("the second proxy", |r| r.descendants("reference-proxy") > 0)?;
    run.signal(sig)?;
    let out = run.wait_exit()?;
    out.expect_interrupted(sig)?;
    let r = out.report()?;
    let by_id = |id: &str| r.scenarios.iter().find(|s| s.id == id);
    let first = by_id("served-identity").ok_or("served-identity missing")?;
    out.expect(
        first.verdict == Verdict::Pass,
        "the finished scenario keeps its pass",
    )?;
    let cut = by_id("leaf-renewal").ok_or("leaf-renewal missing")?;
    out.expect(
        cut.verdict == Verdict::Interrupted,
        "leaf-renewal is interrupted",
    )?;
    let label = format!("interrupted by {}", name(sig));
    out.expect(
        cut.timeline.iter().any(|e| e.label == label),
        "the timeline says when it was interrupted",
    )?;
    out.expect(
        cut.timeline.iter().any(|e| e.label == "proxy stopped"),
        "the proxy was stopped as at any scenario's end",
    )?;
    out.expect(
        cut.artifacts.iter().any(|a| a.name == "agent-requests"),
        "artifacts captured up to the cancel",
    )
}

/// A proxy that notes SIGTERM in a file and lingers until SIGKILL; the harness is signalled
/// while it waits out the grace (teardown). `twice`: a second signal cuts the cleanup short.
fn teardown(sig: Signal, twice: bool) -> Result<(), Failed> {
    let notes = tempfile::tempdir().map_err(|e| e.to_string())?;
    let flag = notes.path().join("term");
    let cmd = format!(
        "sh -c 'trap \"touch {}\" TERM; while :; do sleep 0.1; done' {{proxy_id}}",
        flag.display()
    );
    let args = [
        "--scenario",
        "served-identity,l4-allow-deny",
        "--jobs",
        "1",
        "--proxy-cmd",
        &cmd,
        "--features",
        "l4",
        "--timeout",
        "ready=1s",
    ];
    let run = Run::start(&args, &[])?;
    run.wait_for("the proxy to get SIGTERM", |_| flag.exists())?;
    run.signal(sig)?;
    if twice {
        run.wait_for("the cleanup to begin", |r| {
            r.stderr().contains("stopping the running")
        })?;
        // A second signal of its own, not the same one delivered twice at once (to the process
        // and its group), which the run counts once.
        std::thread::sleep(Duration::from_millis(400));
        run.signal(sig)?;
    }
    let out = run.wait_exit()?;
    out.expect_interrupted(sig)?;
    let r = out.report()?;
    let first = &r.scenarios[0];
    out.expect(
        first.verdict == Verdict::Fail || first.verdict == Verdict::Interrupted,
        "the scenario in teardown keeps its result (never ready: fail) or is interrupted",
    )?;
    if twice {
        out.expect(
            r.environment.notes.iter().any(|n| n.contains("cut short")),
            "the report says the cleanup was cut short",
        )?;
    }
    Ok(())
}

/// SIGINT while a transparent scenario's proxy runs in its pod namespace.
fn transparent() -> Result<(), Failed> {
    let run = Run::start(&["--scenario", "tproxy-inbound-capture"], &[])?;
    let run = match run.wait_for_or_exit("the proxy in its pod", |r| {
        r.descendants("reference-proxy") > 0
    })? {
        Waited::Seen(run) => run,
        Waited::Exited(out) => {
            return Err(format!("the transparent run ended before its proxy ran:\n{out}").into());
        }
    };
    run.signal(SIGINT)?;
    let out = run.wait_exit()?;
    out.expect_interrupted(SIGINT)?;
    out.expect(
        out.report()?.scenarios[0].verdict == Verdict::Interrupted,
        "the transparent scenario is interrupted",
    )
}

/// SIGTERM while Envoy (bootstrapped like `consul connect envoy`) serves a scenario; no Envoy,
/// bootstrap or hot-restart shared memory may outlive the run.
fn envoy(bin: &Path) -> Result<(), Failed> {
    let manifest = workspace().join("examples/envoy/proxy.toml");
    let cmd = format!(
        "{} -c {{bootstrap}} --drain-time-s 1 --disable-hot-restart --concurrency 1",
        bin.display()
    );
    let manifest = manifest.display().to_string();
    let args = [
        "--manifest",
        &manifest,
        "--proxy-cmd",
        &cmd,
        "--scenario",
        "served-identity,leaf-renewal",
        "--jobs",
        "2",
    ];
    let shm_before = shm();
    let run = Run::start(&args, &[])?;
    run.wait_for("served-identity to finish", |r| {
        r.stderr().contains("served-identity")
    })?;
    run.wait_for("the second Envoy", |r| r.descendants("bootstrap") > 0)?;
    run.signal(SIGTERM)?;
    let out = run.wait_exit()?;
    out.expect_interrupted(SIGTERM)?;
    let new: Vec<String> = shm()
        .into_iter()
        .filter(|f| !shm_before.contains(f))
        .collect();
    out.expect(
        new.is_empty(),
        &format!("no new /dev/shm entry; new: {new:?}"),
    )
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf)
}

/// `ENVOY_BIN`, else the workspace's `.tools` Envoy, if it is there.
fn envoy_bin() -> Result<PathBuf, String> {
    let bin = std::env::var_os("ENVOY_BIN").map_or_else(
        || workspace().join(".tools/envoy-1.40.0/envoy/_bin/envoy"),
        PathBuf::from,
    );
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!("no Envoy at {} (set ENVOY_BIN)", bin.display()))
    }
}

fn shm() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect()
}

/// SIGTERM once the proxy container of a long scenario exists.
fn image(image: &str) -> Result<(), Failed> {
    let run = Run::start(
        &[
            "--proxy-image",
            image,
            "--scenario",
            "served-identity,l4-allow-deny",
        ],
        &[],
    )?;
    run.wait_for("a proxy container", |r| r.containers() > 0)?;
    run.signal(SIGTERM)?;
    let out = run.wait_exit()?;
    out.expect_interrupted(SIGTERM)?;
    out.expect_no_containers()
}

fn name(sig: Signal) -> &'static str {
    if sig == SIGINT { "SIGINT" } else { "SIGTERM" }
}

fn main() {
    let args = Arguments::from_args();
    let env_is = |k: &str| std::env::var(k).is_ok_and(|v| v == "1");
    let netns_required = env_is("CONFORMANCE_REQUIRE_NETNS");
    let mut trials = vec![
        Trial::test("leaks::normal_run", normal),
        Trial::test("leaks::failed_run", failed),
        Trial::test("leaks::escaped_helper", escaped),
        Trial::test("leaks::sigint_at_start", || early(SIGINT)),
        Trial::test("leaks::sigterm_at_start", || early(SIGTERM)),
        Trial::test("leaks::sigint_mid_scenario", || mid_scenario(SIGINT)),
        Trial::test("leaks::sigterm_mid_scenario", || mid_scenario(SIGTERM)),
        Trial::test("leaks::sigint_during_teardown", || teardown(SIGINT, false)),
        Trial::test("leaks::sigterm_twice_during_teardown", || {
            teardown(SIGTERM, true)
        }),
    ];
    let name = "leaks::sigint_in_a_network_namespace";
    match conformance::transparent_support() {
        Ok(()) => trials.push(Trial::test(name, transparent)),
        Err(why) if netns_required => {
            let why = format!("CONFORMANCE_REQUIRE_NETNS=1 but {why}");
            trials.push(Trial::test(name, move || Err(why.into())));
        }
        Err(why) => {
            eprintln!("note: {name} is ignored: {why}");
            trials.push(Trial::test(name, move || Err(why.into())).with_ignored_flag(true));
        }
    }
    match envoy_bin() {
        Ok(bin) => trials.push(Trial::test("leaks::sigterm_with_envoy", move || {
            envoy(&bin)
        })),
        Err(why) if env_is("CONFORMANCE_REQUIRE_ENVOY") => {
            let why = format!("CONFORMANCE_REQUIRE_ENVOY=1 but {why}");
            trials.push(Trial::test("leaks::sigterm_with_envoy", move || {
                Err(why.into())
            }));
        }
        Err(why) => {
            eprintln!("note: leaks::sigterm_with_envoy is ignored: {why}");
            // Run anyway (--include-ignored), it fails with the reason: never an empty pass.
            trials.push(
                Trial::test("leaks::sigterm_with_envoy", move || Err(why.into()))
                    .with_ignored_flag(true),
            );
        }
    }
    match probe::image() {
        Ok(img) => trials.push(Trial::test("leaks::sigterm_in_an_image_run", move || {
            image(&img)
        })),
        Err(why) if env_is("CONFORMANCE_REQUIRE_DOCKER") => {
            let why = format!("CONFORMANCE_REQUIRE_DOCKER=1 but Docker cannot run: {why}");
            trials.push(Trial::test("leaks::sigterm_in_an_image_run", move || {
                Err(why.into())
            }));
        }
        Err(why) => {
            eprintln!("note: leaks::sigterm_in_an_image_run is ignored: {why}");
            trials.push(
                Trial::test("leaks::sigterm_in_an_image_run", move || Err(why.into()))
                    .with_ignored_flag(true),
            );
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
