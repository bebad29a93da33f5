//! The `conformance` binary end to end: run (reports written, exit codes), list, gate.

use std::path::Path;
use std::process::{Command, Output};

fn conformance(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args(args)
        .current_dir(dir)
        .env_remove("CI")
        .output()
        .unwrap()
}

fn data() -> String {
    format!("{}/tests/data", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn run_writes_reports_and_the_gate_reads_them() {
    let tmp = tempfile::tempdir().unwrap();
    let out = conformance(
        &["run", "--scenario", "served-identity,l4-*", "--seed", "9"],
        tmp.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("core         success   pass 2 fail 0"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("l4-allow-deny"),
        "plain progress lines: {stderr}"
    );
    for f in reports::REPORT_FILES {
        assert!(
            tmp.path().join("conformance-report").join(f).is_file(),
            "{f}"
        );
    }
    let json = std::fs::read_to_string(tmp.path().join("conformance-report/report.json")).unwrap();
    let report = reports::Report::from_json(&json).unwrap();
    assert_eq!(report.seed, 9);
    assert_eq!(report.proxy.name, "proxy-under-test");

    let gate = conformance(
        &[
            "gate",
            "conformance-report/report.json",
            "--profile",
            "core",
        ],
        tmp.path(),
    );
    assert_eq!(gate.status.code(), Some(0));
    let gate = conformance(
        &["gate", "conformance-report/report.json", "--profile", "l7"],
        tmp.path(),
    );
    assert_eq!(gate.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&gate.stdout).contains("profile l7 was not run"));
}

#[test]
fn a_failing_proxy_exits_1_and_the_gate_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = conformance(
        &[
            "run",
            "--scenario",
            "served-identity",
            "--proxy-cmd",
            "sh -c 'echo no proxy here {proxy_id} >&2; exit 3'",
            "--features",
            "l4",
            "--report-dir",
            "out",
        ],
        tmp.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("fail served-identity"), "{stdout}");
    assert!(stdout.contains("proxy ready [fail]: expected"), "{stdout}");
    let gate = conformance(
        &["gate", "out/report.json", "--profile", "core"],
        tmp.path(),
    );
    assert_eq!(gate.status.code(), Some(1));
    let text = String::from_utf8_lossy(&gate.stdout);
    assert!(text.contains("served-identity (fail)"), "{text}");
    assert!(text.contains("the proxy exited (exit status: 3)"), "{text}");
}

#[test]
fn usage_errors_exit_2_and_list_works() {
    let tmp = tempfile::tempdir().unwrap();
    let out = conformance(&["run", "--profile", "gold"], tmp.path());
    assert_eq!(out.status.code(), Some(2));
    let out = conformance(&["run", "--nope"], tmp.path());
    assert_eq!(out.status.code(), Some(2));
    let out = conformance(&["gate", "missing.json", "--profile", "core"], tmp.path());
    assert_eq!(out.status.code(), Some(2));
    let out = conformance(&["list", "--profile", "l7"], tmp.path());
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("l7-path-method-header") && !text.contains("l4-allow-deny"),
        "{text}"
    );
    // --scenario-dir adds files to the built-in catalogue.
    let out = conformance(&["list", "--scenario-dir", &data()], tmp.path());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("extra-served-identity") && text.contains("l4-allow-deny"),
        "{text}"
    );
}

/// `run --repeat N --allow-flaky` through the binary: a proxy that alternates between the
/// reference proxy and a process that never listens (a state file in a directory the test owns)
/// is reported flaky and allowed, the run exits 0, and `gate` decides with its own flag.
#[test]
fn repeat_grades_an_alternating_proxy_flaky_and_gate_decides_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let flag = tmp.path().join("ran-once");
    let cmd = format!(
        "sh -c 'if [ -e {f} ]; then rm {f}; exec sleep 30; else : > {f}; \
         exec \"$0\" reference-proxy -proxy-id \"$1\"; fi' {{exe}} {{proxy_id}}",
        f = flag.display()
    );
    let out = conformance(
        &[
            "run",
            "--proxy-cmd",
            &cmd,
            "--features",
            "l4",
            "--scenario",
            "served-identity",
            "--repeat",
            "3",
            "--jobs",
            "1",
            "--timeout",
            "ready=1500ms",
            "--allow-flaky",
        ],
        tmp.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("repeat 3: 1 flaky scenario(s), allowed by --allow-flaky"),
        "{stdout}"
    );
    assert!(stdout.contains("flaky 1 (allowed)"), "{stdout}");
    assert!(stdout.contains("attempts: pass, fail, pass"), "{stdout}");
    let json = std::fs::read_to_string(tmp.path().join("conformance-report/report.json")).unwrap();
    let report = reports::Report::from_json(&json).unwrap();
    assert_eq!((report.repeat, report.allow_flaky), (3, true));
    assert_eq!(report.scenarios[0].attempts.len(), 3);
    let gate = |extra: &[&str]| {
        let mut args = vec![
            "gate",
            "conformance-report/report.json",
            "--profile",
            "core",
        ];
        args.extend_from_slice(extra);
        conformance(&args, tmp.path()).status.code()
    };
    assert_eq!(gate(&[]), Some(1));
    assert_eq!(gate(&["--allow-flaky"]), Some(0));
}
