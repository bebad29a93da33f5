//! What a new user meets first, end to end through the binary: mistakes found before any
//! scenario runs (one error, exit 2, naming the fix), a closed stdout ending quietly, and the
//! exit code 3 (nothing failed, but the environment could not run claimed scenarios) with its
//! last line naming the fix.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn conformance(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args(args)
        .current_dir(dir)
        .env_remove("CI")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_missing_proxy_program_is_one_error_before_any_scenario() {
    let tmp = tempfile::tempdir().unwrap();
    let out = conformance(
        &[
            "run",
            "--proxy-cmd",
            "/no/such/proxy -id {proxy_id}",
            "--features",
            "l4",
        ],
        tmp.path(),
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert_eq!(all.matches("/no/such/proxy").count(), 1, "{all}");
    assert_eq!(all.lines().count(), 1, "one error: {all}");
    assert!(!all.contains("running"), "no scenario ran: {all}");
    assert!(!tmp.path().join("conformance-report").exists());
}

#[test]
fn no_declared_feature_names_features_and_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let out = conformance(&["run", "--proxy-cmd", "sh -c 'sleep 60'"], tmp.path());
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains("--features") && all.contains("--manifest"),
        "{all}"
    );
}

#[test]
fn a_glob_matching_nothing_is_a_usage_error_with_the_closest_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let out = conformance(&["run", "--scenario", "l4-allow-deni"], tmp.path());
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(all.contains("closest: l4-allow-deny"), "{all}");
}

#[test]
fn a_closed_stdout_ends_list_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_conformance"))
        .arg("list")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read nothing: close the pipe at once, as `| head -0` would.
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
}

#[test]
fn help_lists_the_exit_codes() {
    let out = conformance(&["--help"], Path::new("."));
    let all = text(&out);
    for code in ["0 ", "1 ", "2 ", "3 ", "130"] {
        assert!(all.contains(&format!("  {code}")), "{code}: {all}");
    }
    assert!(all.contains("apt-get install iptables"), "{all}");
}

/// The sample report with every core scenario not supported by the environment (no iptables).
fn environment_only_report() -> reports::Report {
    let mut r = reports::fixture::sample_report();
    r.scenarios.retain(|s| s.profile == reports::Profile::Core);
    for s in &mut r.scenarios {
        s.checks.clear();
        s.error = None;
        s.attempts.clear();
        s.timeline.clear();
        s.mark_not_supported();
        s.checks.push(reports::CheckResult::new(
            reports::ENVIRONMENT_CHECK,
            reports::Requirement::Must,
            reports::Verdict::NotSupported,
            "iptables",
            "not supported by the environment: the `iptables` program is not installed",
        ));
    }
    r.graded()
}

#[test]
fn the_gate_answers_3_naming_the_fix_when_only_the_environment_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("report.json");
    std::fs::write(&path, reports::to_json(&environment_only_report())).unwrap();
    let out = conformance(
        &["gate", path.to_str().unwrap(), "--profile", "core"],
        tmp.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.contains("apt-get install iptables"), "{stdout}");
}

#[test]
fn a_process_group_sigint_counts_once_and_keeps_the_duration() {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    // A proxy that never listens: the run is waiting for it when the signal comes.
    let mut child = Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args([
            "run",
            "--proxy-cmd",
            "sh -c 'sleep 60'",
            "--features",
            "l4",
            "--scenario",
            "l4-allow-deny",
        ])
        .current_dir(tmp.path())
        .env_remove("CI")
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let group = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("waiting for the proxy") {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "{seen}");
        seen.push_str(&line);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // What `timeout -s INT` does: the process, then its group, at once.
    nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGINT).unwrap();
    nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGINT).unwrap();
    stderr.read_to_string(&mut seen).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(!seen.contains("second signal"), "one signal: {seen}");
    let json = std::fs::read_to_string(tmp.path().join("conformance-report/report.json")).unwrap();
    let report = reports::Report::from_json(&json).unwrap();
    assert!(report.duration_ms > 0, "{}", report.duration_ms);
    assert_eq!(report.scenarios[0].verdict, reports::Verdict::Interrupted);
}

#[test]
fn the_demo_names_its_sabotages_and_how_to_build_its_proxy() {
    let tmp = tempfile::tempdir().unwrap();
    let out = conformance(&["list", "--sabotages"], tmp.path());
    let list = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        list.contains("ignore-deny") && list.contains("l4-allow-deny"),
        "{list}"
    );
    let out = conformance(&["demo", "--sabotage", "ignore-denny"], tmp.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("closest: ignore-deny"),
        "{}",
        text(&out)
    );
    // A proxy path that does not exist: the build command is named, nothing runs.
    let out = conformance(
        &["demo", "--proxy-bin", "/no/such/sabotaged-proxy"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!tmp.path().join("conformance-demo").exists());
}

#[test]
fn failures_are_grouped_by_cause_with_each_checks_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    // A proxy that exits at once never becomes ready.
    let out = conformance(
        &[
            "run",
            "--proxy-cmd",
            "sh -c 'exit 3'",
            "--features",
            "l4",
            "--scenario",
            "l4-allow-deny",
        ],
        tmp.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stdout.contains("the proxy never became ready"), "{stdout}");
    assert!(stdout.contains("proxy ready [fail]"), "{stdout}");
}

#[test]
fn docs_compatibility_is_regenerated_from_the_committed_inputs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tmp = tempfile::tempdir().unwrap();
    let out_file = tmp.path().join("compatibility.md");
    let inputs =
        ["reference", "envoy-inline", "envoy-sds"].map(|n| format!("docs/compatibility/{n}.json"));
    let mut args = vec!["compare"];
    args.extend(inputs.iter().map(String::as_str));
    args.extend([
        "--markdown",
        out_file.to_str().unwrap(),
        "--catalogue",
        "../scenarios/catalogue",
    ]);
    let out = conformance(&args, &root);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let fresh = std::fs::read_to_string(&out_file).unwrap();
    let committed = std::fs::read_to_string(root.join("docs/compatibility.md")).unwrap();
    assert_eq!(
        fresh,
        committed,
        "docs/compatibility.md is stale: regenerate it with `conformance compare {} --markdown \
         docs/compatibility.md --catalogue ../scenarios/catalogue`",
        inputs.join(" ")
    );
    // Every scenario link resolves to its catalogue file.
    for link in committed.split("](../scenarios/catalogue/").skip(1) {
        let file = link.split(')').next().unwrap();
        assert!(
            root.join("scenarios/catalogue").join(file).is_file(),
            "{file}"
        );
    }
}

#[test]
fn fail_fast_starts_nothing_after_the_first_failure() {
    let tmp = tempfile::tempdir().unwrap();
    // A proxy that exits at once fails the first scenario; with one job, the others wait.
    let out = conformance(
        &[
            "run",
            "--proxy-cmd",
            "sh -c 'exit 3'",
            "--features",
            "l4",
            "--scenario",
            "l4-allow-deny,default-policy-deny,intention-change",
            "--jobs",
            "1",
            "--fail-fast",
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let json = std::fs::read_to_string(tmp.path().join("conformance-report/report.json")).unwrap();
    let report: reports::Report = serde_json::from_str(&json).unwrap();
    let verdicts: Vec<(String, reports::Verdict)> = report
        .scenarios
        .iter()
        .map(|s| (s.id.clone(), s.verdict))
        .collect();
    let failed: Vec<&String> = verdicts
        .iter()
        .filter(|(_, v)| *v == reports::Verdict::Fail)
        .map(|(id, _)| id)
        .collect();
    assert_eq!(failed.len(), 1, "{verdicts:?}");
    let skipped: Vec<&reports::ScenarioResult> = report
        .scenarios
        .iter()
        .filter(|s| s.verdict == reports::Verdict::Skipped)
        .collect();
    assert_eq!(skipped.len(), 2, "{verdicts:?}");
    let why = format!(
        "not started: --fail-fast stopped the run after {} failed",
        failed[0]
    );
    for s in skipped {
        assert!(
            s.timeline.iter().any(|t| t.label == why),
            "{}: {:?}",
            s.id,
            s.timeline
        );
        // The console and report.md say why, not "asked to skip".
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&format!("skipped {}: {why}", s.id)),
            "{}",
            text(&out)
        );
    }
    let md = std::fs::read_to_string(tmp.path().join("conformance-report/report.md")).unwrap();
    assert!(md.contains(&why) && !md.contains("asked to skip"), "{md}");
}
