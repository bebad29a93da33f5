//! Entry-point tests: the parser matches the flags of [`Cli`], the default build has no
//! `--sabotage` flag and only no-op (zero-sized) hooks, and `run` reports errors with their
//! causes. (The `sabotage` build's flag is tested in `sabotage::tests`.)

use std::time::Duration;

use agent_sim::AgentSim;
use clap::Parser;

use super::*;

fn argv(args: &[&str]) -> Vec<String> {
    std::iter::once("proxy-under-test")
        .chain(args.iter().copied())
        .map(str::to_owned)
        .collect()
}

#[test]
fn parse_args_reads_the_same_flags_as_the_cli() {
    let args = [
        "-proxy-id",
        "db-sidecar-proxy",
        "-http-addr=127.0.0.1:9",
        "-log-json",
    ];
    let inv = parse_args(argv(&args)).unwrap();
    let direct = Cli::try_parse_from(normalize_args(argv(&args).into_iter().map(Into::into)));
    assert_eq!(inv.cli, direct.unwrap());
    assert!(parse_args(argv(&["-bogus"])).is_err());
    let help = parse_args(argv(&["--help"])).unwrap_err();
    assert!(!help.use_stderr(), "help is not an error");
}

/// The guard of the release build: no `--sabotage` flag, and hooks that hold nothing (zero-sized
/// no-ops, see `src/seam.rs`).
#[cfg(not(feature = "sabotage"))]
#[test]
fn the_default_build_has_no_sabotage_flag() {
    use std::mem::size_of;

    use crate::seam;

    let err = parse_args(argv(&["-proxy-id", "p", "--sabotage", "ignore-deny"])).unwrap_err();
    assert_eq!(err.kind(), clap::error::ErrorKind::UnknownArgument, "{err}");
    let help = Cli::command().render_long_help().to_string();
    assert!(!help.contains("sabotage"), "{help}");
    let full_help = HookSet::args(Cli::command()).render_long_help().to_string();
    assert!(!full_help.contains("sabotage"), "{full_help}");
    let sizes = [
        size_of::<HookSet>(),
        size_of::<ClientHooks>(),
        size_of::<seam::Hooks>(),
        size_of::<seam::AuthzHooks>(),
        size_of::<seam::OpenConnection>(),
        size_of::<seam::PerConnection>(),
    ];
    assert_eq!(sizes, [0; 6], "the default build's hooks hold nothing");
}

#[test]
fn errors_print_with_their_causes() {
    let e = RunError::Proxy(ProxyError::MissingRegistration {
        id: "x".into(),
        source: AgentError::Status {
            status: 404,
            body: "unknown service ID: x".into(),
        },
    });
    assert_eq!(
        error_chain(&e),
        "no service registered with ID \"x\" on the agent (Unexpected response code: 404 \
         (unknown service ID: x)): Unexpected response code: 404 (unknown service ID: x)"
    );
}

#[tokio::test]
async fn run_fails_clearly_without_a_registration_or_a_token_file() {
    let sim = AgentSim::builder().start().await.unwrap();
    let env = Env {
        http_addr: Some(sim.http_addr()),
        ..Env::default()
    };
    let bounded = |inv| {
        let fut = run(inv, &env, std::future::pending());
        async {
            tokio::time::timeout(Duration::from_secs(10), fut)
                .await
                .unwrap()
        }
    };
    let err = bounded(parse_args(argv(&["-proxy-id", "nope"])).unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::Proxy(ProxyError::MissingRegistration { .. })),
        "{err}"
    );
    let inv = parse_args(argv(&["-proxy-id", "p", "-token-file", "/nonexistent/t"])).unwrap();
    let err = bounded(inv).await.unwrap_err();
    assert!(
        matches!(err, RunError::Cli(CliError::TokenFile { .. })),
        "{err}"
    );
    let err = bounded(parse_args(argv(&["-sidecar-for", "db"])).unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "No sidecar proxy registered for db");
}

#[test]
fn runtime_threads_flag_then_env_then_half_the_cores() {
    assert_eq!(runtime_threads(Some(3), Some("8"), 2).unwrap(), 3);
    assert_eq!(runtime_threads(None, Some("8"), 2).unwrap(), 8);
    assert_eq!(runtime_threads(None, Some(" 2 "), 16).unwrap(), 2);
    for (cores, threads) in [(1, 1), (2, 1), (3, 1), (4, 2), (16, 8)] {
        assert_eq!(
            runtime_threads(None, None, cores).unwrap(),
            threads,
            "{cores} cores"
        );
    }
    for bad in ["0", "-1", "two", "1.5"] {
        let err = runtime_threads(None, Some(bad), 2).unwrap_err().to_string();
        assert!(
            err.contains(&format!("TOKIO_WORKER_THREADS={bad:?}")),
            "{err}"
        );
        assert!(err.contains("--threads N"), "{err}");
    }
}

#[test]
fn threads_flag_takes_a_positive_count() {
    let inv = parse_args(argv(&["-proxy-id", "p", "--threads", "2"])).unwrap();
    assert_eq!(inv.cli.threads, Some(2));
    assert_eq!(
        parse_args(argv(&["-proxy-id", "p"])).unwrap().cli.threads,
        None
    );
    for bad in ["0", "x", "-3"] {
        let err = parse_args(argv(&["-proxy-id", "p", "--threads", bad])).unwrap_err();
        assert!(err.use_stderr(), "{bad}");
    }
}
