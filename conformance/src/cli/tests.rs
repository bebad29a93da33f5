//! Tests of flag handling: manifests from flags, timeout overrides, profiles, gate.

use clap::Parser;

use super::*;
use crate::cli::flags::{manifest, timeouts};

fn parse(args: &[&str]) -> Command {
    Cli::try_parse_from(std::iter::once("conformance").chain(args.iter().copied()))
        .unwrap()
        .command
}

#[test]
fn run_flags_build_the_manifest() {
    let Command::Run(a) = parse(&[
        "run",
        "--proxy-cmd",
        "my-proxy -proxy-id {proxy_id}",
        "--features",
        "l4,upstreams",
        "--bound",
        "reauthorize_ms=2000",
        "--profile",
        "core,l7",
        "--scenario",
        "l4-*,intention-*",
        "--skip",
        "ca-*",
    ]) else {
        panic!("not run")
    };
    let m = manifest(&a).unwrap();
    assert_eq!(m.name, "my-proxy");
    assert_eq!(m.features, ["l4", "upstreams"]);
    assert_eq!(m.bounds.reauthorize_ms, Some(2000));
    assert_eq!(a.profile, ["core", "l7"]);
    assert_eq!(a.scenario, ["l4-*", "intention-*"]);
    assert_eq!(a.report_dir, PathBuf::from("conformance-report"));

    let Command::Run(a) = parse(&["run"]) else {
        panic!("not run")
    };
    assert_eq!(manifest(&a).unwrap(), crate::Manifest::reference());
}

#[test]
fn xds_flags_and_the_example_envoy_manifest() {
    let Command::Run(a) = parse(&[
        "run",
        "--proxy-cmd",
        "envoy -c {bootstrap} --base-id {admin_port}",
        "--features",
        "l4,xds",
        "--xds-tls-mode",
        "sds",
    ]) else {
        panic!("not run")
    };
    let m = manifest(&a).unwrap();
    assert!(m.is_xds());
    assert_eq!(m.xds.tls_mode, agent_sim::xds::TlsMode::Sds);
    assert_eq!(m.base_dir, None);

    // {bootstrap} without the xds feature is refused, naming the feature.
    let Command::Run(a) = parse(&["run", "--proxy-cmd", "envoy -c {bootstrap}"]) else {
        panic!("not run")
    };
    let err = manifest(&a).unwrap_err().to_string();
    assert!(err.contains("declare the `xds` feature"), "{err}");

    // The checked-in Envoy manifest parses; --xds-tls-mode overrides its mode.
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/envoy/proxy.toml");
    let Command::Run(a) = parse(&["run", "--manifest", example, "--xds-tls-mode", "sds"]) else {
        panic!("not run")
    };
    let m = manifest(&a).unwrap();
    assert_eq!(
        (m.name.as_str(), m.version.as_deref()),
        ("envoy", Some("1.40.0"))
    );
    assert!(m.is_xds());
    assert_eq!(m.xds.tls_mode, agent_sim::xds::TlsMode::Sds);
    assert!(!m.features.iter().any(|f| f == "persistent-connections"));
    assert_eq!(m.bounds_map(), std::collections::BTreeMap::new());
    assert!(m.command.contains("--drain-time-s 1 "), "{}", m.command);
    let mut argv = crate::template::split(&m.command).unwrap();
    m.resolve_program(&mut argv);
    assert!(
        argv[0].ends_with("examples/envoy/../../.tools/envoy-1.40.0/envoy/_bin/envoy"),
        "{}",
        argv[0]
    );

    let Command::Run(a) = parse(&["run", "--manifest", example, "--xds-tls-mode", "pem"]) else {
        panic!("not run")
    };
    assert!(manifest(&a).is_err());
}

#[test]
fn timeout_overrides() {
    let t = timeouts(&["propagation=10s".into(), "stable=750ms".into()]).unwrap();
    assert_eq!(
        t.get("propagation"),
        Some(std::time::Duration::from_secs(10))
    );
    assert_eq!(t.get("stable"), Some(std::time::Duration::from_millis(750)));
    assert!(
        timeouts(&["nope=1s".into()])
            .unwrap_err()
            .to_string()
            .contains("unknown timeout")
    );
    assert!(timeouts(&["propagation".into()]).is_err());
    assert!(timeouts(&["propagation=soon".into()]).is_err());
}

#[test]
fn profiles_parse() {
    assert_eq!(parse_profile("l7").unwrap(), scenarios::Profile::L7);
    assert_eq!(parse_profile("gold").unwrap_err().kind(), "usage");
}

#[test]
fn reference_proxy_args_pass_through() {
    let Command::ReferenceProxy(a) = parse(&[
        "reference-proxy",
        "-proxy-id",
        "db-sidecar-proxy",
        "--log-level",
        "debug",
    ]) else {
        panic!("not reference-proxy")
    };
    assert_eq!(
        a.args,
        ["-proxy-id", "db-sidecar-proxy", "--log-level", "debug"]
    );
}

#[test]
fn gate_reads_reports() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    let env = reports::Environment {
        os: "linux".into(),
        arch: "x86_64".into(),
        cpus: 2,
        hostname: None,
        ci: false,
        notes: vec![],
    };
    let proxy = reports::ProxyInfo {
        name: "p".into(),
        version: None,
        command: "p".into(),
        features: vec![],
        bounds: Default::default(),
        xds_tls_mode: None,
    };
    let mut report = reports::Report::new(
        reports::Harness::new("0"),
        proxy,
        env,
        "2026-01-01T00:00:00Z",
        1,
    );
    let mut s = reports::ScenarioResult::new("a", "d", reports::Profile::Core, vec![]);
    s.checks.push(reports::CheckResult::new(
        "c",
        reports::Requirement::Must,
        reports::Verdict::Pass,
        "e",
        "o",
    ));
    report.scenarios.push(s);
    report.grade();
    std::fs::write(&path, reports::to_json(&report)).unwrap();
    let ok = GateArgs {
        report: path.clone(),
        profile: "core".into(),
        allow_flaky: false,
    };
    assert_eq!(gate(&ok).unwrap(), ExitCode::SUCCESS);
    let not_run = GateArgs {
        report: path.clone(),
        profile: "l7".into(),
        allow_flaky: false,
    };
    assert_eq!(gate(&not_run).unwrap(), ExitCode::from(EXIT_FAILED));
    let bad = GateArgs {
        report: path,
        profile: "gold".into(),
        allow_flaky: false,
    };
    assert_eq!(gate(&bad).unwrap_err().kind(), "unknown_profile");
    let missing = GateArgs {
        report: dir.path().join("nope.json"),
        profile: "core".into(),
        allow_flaky: false,
    };
    assert_eq!(gate(&missing).unwrap_err().kind(), "harness_io");
}

#[test]
fn repeat_flags_parse_and_are_bounded() {
    let Command::Run(a) = parse(&["run", "--repeat", "20", "--allow-flaky"]) else {
        panic!("not run");
    };
    assert_eq!((a.repeat, a.allow_flaky), (20, true));
    let Command::Run(a) = parse(&["run"]) else {
        panic!("not run");
    };
    assert_eq!((a.repeat, a.allow_flaky), (1, false));
    let zero = Cli::try_parse_from(["conformance", "run", "--repeat", "0"]);
    assert!(zero.is_err());
    let Command::Gate(g) = parse(&["gate", "r.json", "--profile", "core", "--allow-flaky"]) else {
        panic!("not gate");
    };
    assert!(g.allow_flaky);
}

#[test]
fn gate_fails_a_flaky_profile_unless_it_allows_flaky_itself() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    let mut report = reports::Report::new(
        reports::Harness::new("0"),
        reports::ProxyInfo {
            name: "p".into(),
            version: None,
            command: "p".into(),
            features: vec![],
            bounds: Default::default(),
            xds_tls_mode: None,
        },
        reports::Environment {
            os: "linux".into(),
            arch: "x86_64".into(),
            cpus: 2,
            hostname: None,
            ci: false,
            notes: vec![],
        },
        "2026-01-01T00:00:00Z",
        1,
    );
    let attempt = |v: reports::Verdict| {
        let mut s = reports::ScenarioResult::new("a", "d", reports::Profile::Core, vec![]);
        s.checks.push(reports::CheckResult::new(
            "c",
            reports::Requirement::Must,
            v,
            "e",
            "o",
        ));
        s
    };
    let flaky = crate::runner::fold(vec![
        attempt(reports::Verdict::Pass),
        attempt(reports::Verdict::Fail),
    ]);
    report.scenarios.push(flaky);
    report.repeat = 2;
    // The run allowed flaky; the gate still decides with its own flag.
    report.allow_flaky = true;
    report.grade();
    std::fs::write(&path, reports::to_json(&report)).unwrap();
    let strict = GateArgs {
        report: path.clone(),
        profile: "core".into(),
        allow_flaky: false,
    };
    assert_eq!(gate(&strict).unwrap(), ExitCode::from(EXIT_FAILED));
    let lenient = GateArgs {
        report: path,
        profile: "core".into(),
        allow_flaky: true,
    };
    assert_eq!(gate(&lenient).unwrap(), ExitCode::SUCCESS);
}
