//! The proxy under test from a container image (`conformance run --proxy-image`), end to end
//! through the CLI binary: the core profile graded against the reference proxy's image, an
//! interrupted containerized run that leaves no container, a missing image as a usage error,
//! and transparent scenarios reported not supported for images.
//!
//! Image: `CONFORMANCE_PROXY_IMAGE`, else `proxy-under-test:latest` (`scripts/build-images.sh
//! proxy`). Where no Docker daemon answers or the image is missing, every trial is ignored with
//! the reason, never passed, unless `CONFORMANCE_REQUIRE_DOCKER=1` (set by `.ci/run`) makes that
//! a failure.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use conformance::container::{self, ImageRef};
use libtest_mimic::{Arguments, Failed, Trial};
use reports::{Report, Verdict};

const DEFAULT_IMAGE: &str = "proxy-under-test:latest";

/// A trial's body, given the image.
type Body = Box<dyn FnOnce(&str) -> Result<(), Failed> + Send>;

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_conformance"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

/// The image, or why the trials cannot run here.
fn image() -> Result<String, String> {
    let image = std::env::var("CONFORMANCE_PROXY_IMAGE").unwrap_or_else(|_| DEFAULT_IMAGE.into());
    let r = ImageRef::parse(&image).map_err(|e| e.to_string())?;
    runtime()
        .block_on(container::preflight(&r))
        .map_err(|e| e.to_string())?;
    Ok(image)
}

/// Containers a harness with process id `pid` started that still exist.
fn left_by(pid: u32) -> Result<Vec<String>, Failed> {
    runtime()
        .block_on(container::labelled(Some(pid)))
        .map_err(|e| Failed::from(e.to_string()))
}

fn conformance(args: &[&str]) -> Command {
    let mut c = Command::new(exe());
    c.args(args).stdin(Stdio::null());
    c
}

fn text(o: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn report(dir: &std::path::Path) -> Result<Report, Failed> {
    let path = dir.join("report.json");
    let json = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Report::from_json(&json).map_err(|e| e.to_string())?)
}

/// The core profile passes against the reference proxy running in a container, and the run
/// leaves no container behind.
fn core_profile(image: &str) -> Result<(), Failed> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let report_dir = dir.path().display().to_string();
    let child = conformance(&[
        "run",
        "--proxy-image",
        image,
        "--profile",
        "core",
        "--report-dir",
        &report_dir,
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .map_err(|e| e.to_string())?;
    let pid = child.id();
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "the core profile did not pass in a container:\n{}",
            text(&out)
        )
        .into());
    }
    let r = report(dir.path())?;
    if !r.proxy.command.contains(&format!("(in image {image})")) {
        return Err(format!("report's proxy command names no image: {}", r.proxy.command).into());
    }
    let passed = r
        .scenarios
        .iter()
        .filter(|s| s.verdict == Verdict::Pass)
        .count();
    if passed == 0 {
        return Err("no core scenario passed".into());
    }
    // A container's output is kept like a process's: stdout/stderr artifacts with times.
    let with_logs = r.scenarios.iter().any(|s| {
        s.artifacts
            .iter()
            .any(|a| a.name.starts_with("proxy-std") && a.content.contains("ms] "))
    });
    if !with_logs {
        return Err("no scenario kept the container's output as an artifact".into());
    }
    let left = left_by(pid)?;
    if !left.is_empty() {
        return Err(format!("containers left after the run: {left:?}").into());
    }
    Ok(())
}

/// SIGINT to a containerized run while a proxy container runs: exit 130, no container left.
fn interrupted(image: &str) -> Result<(), Failed> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let report_dir = dir.path().display().to_string();
    let child = conformance(&[
        "run",
        "--proxy-image",
        image,
        "--profile",
        "core",
        "--jobs",
        "2",
        "--report-dir",
        &report_dir,
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .map_err(|e| e.to_string())?;
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut child = Some(child);
    let seen = loop {
        let live = left_by(pid)?;
        if !live.is_empty() {
            break live;
        }
        if let Some(c) = child.as_mut()
            && let Ok(Some(status)) = c.try_wait()
        {
            return Err(format!("the run ended ({status}) before a container was seen").into());
        }
        if Instant::now() > deadline {
            return Err("no proxy container appeared within 120 s".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let raw = i32::try_from(pid).map_err(|e| e.to_string())?;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(raw),
        nix::sys::signal::Signal::SIGINT,
    )
    .map_err(|e| e.to_string())?;
    let out = child
        .take()
        .ok_or("no child")?
        .wait_with_output()
        .map_err(|e| e.to_string())?;
    if out.status.code() != Some(130) {
        return Err(format!("expected exit 130 after SIGINT:\n{}", text(&out)).into());
    }
    let left = left_by(pid)?;
    if !left.is_empty() {
        return Err(format!(
            "containers left after an interrupted run (saw {seen:?} running): {left:?}\n{}",
            text(&out)
        )
        .into());
    }
    Ok(())
}

/// A missing image is a usage error naming what to do, quickly.
fn missing_image() -> Result<(), Failed> {
    let started = Instant::now();
    let out = conformance(&[
        "run",
        "--proxy-image",
        "conformance-no-such-image:never-built",
        "--scenario",
        "l4-allow-deny",
    ])
    .output()
    .map_err(|e| e.to_string())?;
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(2)
        || !err.contains("docker_unavailable")
        || !err.contains("scripts/build-images.sh")
    {
        return Err(format!("expected a usage error naming the fix:\n{}", text(&out)).into());
    }
    if started.elapsed() > Duration::from_secs(30) {
        return Err(format!("took {:?}", started.elapsed()).into());
    }
    Ok(())
}

/// Transparent scenarios are not supported for images, with the reason.
fn transparent(image: &str) -> Result<(), Failed> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let report_dir = dir.path().display().to_string();
    let out = conformance(&[
        "run",
        "--proxy-image",
        image,
        "--profile",
        "transparent",
        "--report-dir",
        &report_dir,
    ])
    .output()
    .map_err(|e| e.to_string())?;
    let r =
        report(dir.path()).map_err(|e| format!("{}\n{}", e.message().unwrap_or(""), text(&out)))?;
    // Those that put the proxy in a pod namespace (the profile also has plain ones).
    let in_pod: Vec<String> = conformance::catalogue::builtin()
        .into_iter()
        .filter(|s| s.setup.transparent.is_some())
        .map(|s| s.id)
        .collect();
    let transparent: Vec<_> = r
        .scenarios
        .iter()
        .filter(|s| in_pod.contains(&s.id))
        .collect();
    if transparent.is_empty() {
        return Err("no transparent scenario in the report".into());
    }
    for s in transparent {
        let why = s
            .checks
            .iter()
            .find(|c| c.name == reports::ENVIRONMENT_CHECK)
            .map(|c| c.observed.clone());
        if s.verdict != Verdict::NotSupported
            || !why.as_deref().is_some_and(|w| w.contains("proxy image"))
        {
            return Err(format!("{}: {} ({why:?})", s.id, s.verdict).into());
        }
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let required = std::env::var("CONFORMANCE_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
    let here = image();
    let trial = |name: &str, f: Body| match &here {
        Ok(image) => {
            let image = image.clone();
            Trial::test(name, move || f(&image))
        }
        Err(why) if required => {
            let why = format!("CONFORMANCE_REQUIRE_DOCKER=1 but Docker cannot run: {why}");
            Trial::test(name, move || Err(why.into()))
        }
        Err(why) => {
            eprintln!("note: {name} is ignored: {why}");
            // Run anyway (--include-ignored), it fails with the reason: never an empty pass.
            let why = why.clone();
            Trial::test(name, move || Err(why.into())).with_ignored_flag(true)
        }
    };
    let trials = vec![
        trial(
            "docker::core_profile_in_a_container",
            Box::new(core_profile),
        ),
        trial(
            "docker::interrupted_run_leaves_no_container",
            Box::new(interrupted),
        ),
        trial(
            "docker::transparent_not_supported_for_images",
            Box::new(transparent),
        ),
        trial(
            "docker::missing_image_is_a_usage_error",
            Box::new(|_| missing_image()),
        ),
    ];
    libtest_mimic::run(&args, trials).exit();
}
