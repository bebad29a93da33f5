//! The command line through [`run`] (what [`cli_main`] calls with the real environment):
//! Consul's usage errors, single-dash flags, `-dry-run` with and without an agent (agent-sim),
//! `-remove -dry-run`, and one-line errors.

use std::ffi::OsString;

use serde_json::json;

use super::super::*;
use crate::cli::Env;

/// Runs the CLI with `args` (program name added) and no environment; returns (status, stdout,
/// stderr).
fn run_cli(args: &[&str], env: &Env) -> (i32, String, String) {
    let argv: Vec<OsString> = std::iter::once("redirect-traffic")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = run(argv, env, None, &mut out, &mut err);
    (
        status,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn expect_error(args: &[&str], message: &str) {
    let (status, out, err) = run_cli(args, &Env::default());
    assert_eq!(status, 1, "{args:?}");
    assert!(out.is_empty(), "{args:?}: {out}");
    assert_eq!(err, format!("error: {message}\n"), "{args:?}");
}

#[test]
fn consul_usage_errors() {
    expect_error(&["-proxy-inbound-port", "21000"], "-proxy-uid is required");
    expect_error(
        &["-proxy-uid", "5995"],
        "either -proxy-id or -proxy-inbound-port are required",
    );
    let both = "-proxy-inbound-port or -proxy-outbound-port cannot be provided together with -proxy-id. Proxy's inbound and outbound ports are retrieved from the proxy's configuration instead.";
    expect_error(
        &[
            "-proxy-uid",
            "1",
            "-proxy-id",
            "x",
            "-proxy-inbound-port",
            "2",
        ],
        both,
    );
    expect_error(
        &[
            "-proxy-uid",
            "1",
            "-proxy-id",
            "x",
            "-proxy-outbound-port",
            "2",
        ],
        both,
    );
    expect_error(
        &[
            "-proxy-uid",
            "1",
            "-proxy-inbound-port",
            "2",
            "-exclude-outbound-cidr",
            "10.0.0.0/33",
        ],
        "invalid CIDR \"10.0.0.0/33\": the prefix length must be 0..=32",
    );
    expect_error(
        &["-proxy-uid", "1", "-proxy-inbound-port", "0", "-dry-run"],
        "the inbound port is required to set up traffic redirection",
    );
    expect_error(
        &[
            "-proxy-uid",
            "1",
            "-proxy-inbound-port",
            "2",
            "-comment",
            "a b",
            "-dry-run",
        ],
        "invalid comment \"a b\": use 1 to 200 letters, digits or ._:/-",
    );
}

#[test]
fn clap_rejects_bad_values_and_unknown_flags() {
    for args in [
        &["-proxy-uid", "root", "-proxy-inbound-port", "1"][..],
        &["-proxy-uid", "1", "-proxy-inbound-port", "70000"],
        &[
            "-proxy-uid",
            "1",
            "-proxy-inbound-port",
            "1",
            "-exclude-inbound-port",
            "x",
        ],
        &[
            "-proxy-uid",
            "1",
            "-proxy-inbound-port",
            "1",
            "-exclude-uid",
            "-3",
        ],
        &[
            "-proxy-uid",
            "1",
            "-proxy-inbound-port",
            "1",
            "-no-such-flag",
        ],
    ] {
        let (status, out, err) = run_cli(args, &Env::default());
        assert_eq!(status, 1, "{args:?}");
        assert!(out.is_empty());
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.ends_with(" (see -help)\n"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn help_explains_the_setup_and_exits_zero() {
    for flag in ["-help", "--help"] {
        let (status, out, err) = run_cli(&[flag], &Env::default());
        assert_eq!(status, 0);
        assert!(err.is_empty());
        for needle in [
            "Register the service",
            "as root or with CAP_NET_ADMIN",
            "Start the proxy as the given UID",
            "SO_MARK",
            "net_cls",
            "TPROXY",
            "-dry-run",
            "-remove",
        ] {
            assert!(out.contains(needle), "{flag}: no {needle:?} in\n{out}");
        }
    }
}

#[test]
fn dry_run_without_agent_prints_consul_rules() {
    let (status, out, err) = run_cli(
        &[
            "-proxy-uid=5995",
            "-proxy-inbound-port",
            "21000",
            "--proxy-outbound-port",
            "15002",
            "-exclude-inbound-port",
            "22",
            "-exclude-inbound-port=23",
            "-exclude-outbound-port",
            "8500",
            "-exclude-outbound-cidr",
            "10.0.0.0/8",
            "-exclude-uid",
            "100",
            "-dry-run",
        ],
        &Env::default(),
    );
    assert_eq!((status, err.as_str()), (0, ""));
    let want = RedirectConfig::new(5995, 21000)
        .with_outbound_port(15002)
        .with_exclusions(Exclusions {
            inbound_ports: vec![22, 23],
            outbound_ports: vec![8500],
            outbound_cidrs: vec!["10.0.0.0/8".parse().unwrap()],
            uids: vec![100],
        });
    assert_eq!(out, render(&rules(&want)));
    assert_eq!(out.lines().count(), 17);
    assert!(out.lines().all(|l| l.starts_with("iptables -t nat ")));
}

#[test]
fn remove_dry_run_needs_neither_uid_nor_agent() {
    let (status, out, err) = run_cli(&["-remove", "-dry-run"], &Env::default());
    assert_eq!((status, err.as_str()), (0, ""));
    assert_eq!(out, render(&remove_plan()));
}

#[test]
fn a_missing_iptables_is_one_line() {
    let (status, out, err) = run_cli(
        &["-remove", "-iptables", "/nonexistent/iptables"],
        &Env::default(),
    );
    assert_eq!((status, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "error: iptables not found (tried /nonexistent/iptables); install the iptables package or pass -iptables PATH\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_reads_the_registration_from_the_agent() {
    let sim = agent_sim::AgentSim::builder()
        .acls("root", agent_sim::acl::DefaultPolicy::Deny)
        .run_checks(false)
        .start()
        .await
        .unwrap();
    sim.control()
        .register(&json!({
            "Name": "web", "Port": 8080,
            "Connect": {"SidecarService": {"Port": 21000, "Proxy": {
                "Mode": "transparent",
                "TransparentProxy": {"OutboundListenerPort": 15002},
                "Config": {"metrics_bind_addr": "127.0.0.1:9102"}}}}
        }))
        .unwrap();
    let token = sim
        .control()
        .create_token(
            r#"service "web-sidecar-proxy" { policy = "read" }"#,
            "redirect",
        )
        .unwrap()
        .secret_id;
    // The address and token come from the environment, like CONSUL_HTTP_ADDR/_TOKEN.
    let env = Env {
        http_addr: Some(sim.http_addr()),
        token: Some(token),
        ..Env::default()
    };
    let args = [
        "-proxy-id",
        "web-sidecar-proxy",
        "-proxy-uid",
        "5995",
        "-exclude-inbound-port",
        "22",
        "-dry-run",
    ];
    let (status, out, err) = tokio::task::spawn_blocking(move || run_cli(&args, &env))
        .await
        .unwrap();
    assert_eq!((status, err.as_str()), (0, ""));
    let want = RedirectConfig::new(5995, 21000)
        .with_outbound_port(15002)
        .with_exclusions(Exclusions {
            inbound_ports: vec![9102, 22],
            ..Default::default()
        });
    assert_eq!(out, render(&rules(&want)));

    // Without the token: the agent's 403, in Consul's words, on one line.
    let env = Env {
        http_addr: Some(sim.http_addr()),
        ..Env::default()
    };
    let (status, _, err) = run_cli(&args, &env);
    assert_eq!(status, 1);
    assert!(
        err.starts_with(
            "error: failed to fetch proxy service from Consul Agent: Unexpected response code: 403"
        ),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);

    // The proxied service itself is not a proxy.
    let env = Env {
        http_addr: Some(sim.http_addr()),
        token: Some("root".into()),
        ..Env::default()
    };
    let (status, _, err) = run_cli(&["-proxy-id", "web", "-proxy-uid", "1", "-dry-run"], &env);
    assert_eq!(
        (status, err.as_str()),
        (1, "error: service web is not a proxy service\n")
    );
    let (status, _, err) = run_cli(&["-proxy-id", "nope", "-proxy-uid", "1", "-dry-run"], &env);
    assert_eq!(status, 1);
    assert!(err.contains("404 (unknown service ID: nope)"), "{err}");
}
