//! `conformance reference-proxy ARGS...`: the bundled reference proxy (`proxy-under-test`),
//! run in-process with its own flags and environment handling, so `conformance run` needs no
//! second binary. SIGTERM or Ctrl-C stops it gracefully.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;
use proxy_under_test::cli::{self, Cli, Env, Target};
use proxy_under_test::{AgentClient, Proxy};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Runs the reference proxy with `args` (its flags, e.g. `-proxy-id db-sidecar-proxy`).
pub fn reference_proxy(args: Vec<String>) -> ExitCode {
    let argv = std::iter::once(OsString::from("proxy-under-test"))
        .chain(args.into_iter().map(OsString::from));
    let parsed = match Cli::try_parse_from(cli::normalize_args(argv)) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&parsed.log_level));
    let fmt = tracing_subscriber::fmt::layer()
        .with_target(false)
        .with_writer(std::io::stderr);
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .try_init();
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(run(parsed)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

async fn run(args: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let env = Env::from_lookup(|k| std::env::var(k).ok());
    let settings = args.settings(&env)?;
    let client = AgentClient::new(&settings.http_addr, settings.token.clone())?;
    let proxy_id = match settings.target {
        Target::ProxyId(id) => id,
        Target::SidecarFor(s) => {
            let services = client.services().await.map_err(|e| cli::CliError::Lookup {
                sidecar_for: s.clone(),
                error: e.to_string(),
            })?;
            cli::pick_sidecar(&services, &s)?
        }
    };
    Proxy::new(client, proxy_id).run(shutdown_signal()).await?;
    Ok(())
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}
