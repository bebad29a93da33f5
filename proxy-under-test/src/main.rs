//! `proxy-under-test` binary: a thin CLI over the library (flags like `consul connect proxy`).

use std::process::ExitCode;

use clap::Parser;
use proxy_under_test::cli::{self, Cli, Env, Target};
use proxy_under_test::{AgentClient, Proxy};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

fn init_logs(level: &str, json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let reg = tracing_subscriber::registry().with(filter);
    if json {
        reg.with(
            tracing_subscriber::fmt::layer()
                .json()
                .with_writer(std::io::stderr),
        )
        .init();
    } else {
        reg.with(
            tracing_subscriber::fmt::layer()
                .with_target(false)
                .with_writer(std::io::stderr),
        )
        .init();
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

async fn run(args: Cli) -> anyhow::Result<()> {
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

fn main() -> ExitCode {
    let args = match Cli::try_parse_from(cli::normalize_args(std::env::args_os())) {
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
    init_logs(&args.log_level, args.log_json);
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
