//! The command-line entry point, shared by the `proxy-under-test` binary and the conformance
//! harness (which bundles the reference proxy): parse the flags, read the environment (here and
//! nowhere else), set up logging, build the runtime, resolve `-sidecar-for`, run until SIGTERM or
//! Ctrl-C.

use std::ffi::OsString;
use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{CommandFactory, FromArgMatches};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use super::{Cli, CliError, Env, Target, normalize_args, pick_sidecar};
use crate::agent::{AgentClient, AgentError};
use crate::dataplane::Workers;
use crate::proxy::{Proxy, ProxyError};
use crate::seam::{ClientHooks, HookSet};

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The flags.
    pub cli: Cli,
    /// The hooks chosen on the command line (none in the default build; see
    /// [`seam`](crate::seam)).
    pub hooks: HookSet,
}

/// Why a parsed invocation stopped with an error (exit status 1).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Flags, environment, token file or sidecar lookup.
    #[error(transparent)]
    Cli(#[from] CliError),
    /// The agent address is unusable.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The proxy could not start.
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    /// The connection worker threads could not start.
    #[error("cannot start the connection workers: {0}")]
    Workers(std::io::Error),
    /// The runtime's threads could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

/// Parses `args` (program name first, like `std::env::args`), accepting Go-style single-dash
/// long flags (see [`normalize_args`]).
pub fn parse_args<I, T>(args: I) -> Result<Invocation, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let command = HookSet::args(Cli::command());
    let matches = command.try_get_matches_from(normalize_args(args.into_iter().map(Into::into)))?;
    Ok(Invocation {
        cli: Cli::from_arg_matches(&matches)?,
        hooks: HookSet::from_matches(&matches),
    })
}

/// Runs the proxy like the `proxy-under-test` binary does with `args` (program name first):
/// flags and environment, logs on stderr, on a multi-threaded Tokio runtime of its own with
/// [`runtime_threads`] threads, until SIGTERM or Ctrl-C. Usage errors and failures print a
/// message and return status 1; `--help` and `--version` return 0. Call it outside any runtime.
pub fn cli_main(args: Vec<String>) -> ExitCode {
    let invocation = match parse_args(args) {
        Ok(i) => i,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    init_logs(&invocation.cli.log_level, invocation.cli.log_json);
    let env = Env::from_lookup(|k| std::env::var(k).ok());
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let runtime = runtime_threads(invocation.cli.threads, env.worker_threads.as_deref(), cores)
        .map_err(RunError::from)
        .and_then(|threads| runtime(threads).map_err(RunError::Runtime));
    let result = runtime.and_then(|rt| rt.block_on(run(invocation, &env, shutdown_signal())));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", error_chain(&e));
            ExitCode::from(1)
        }
    }
}

/// The binary's runtime: `threads` workers, each making TLS key shares ahead whenever it is
/// about to park ([`crate::tls::make_key_share_ahead`]).
pub fn runtime(threads: usize) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .on_thread_park(crate::tls::make_key_share_ahead)
        .enable_all()
        .build()
}

/// The runtime's thread count: `--threads` if given, else `TOKIO_WORKER_THREADS` (`env`), else
/// half of the machine's `cores`, at least one. A sidecar shares its machine with the
/// application it fronts; on the 2-core benchmark machine one thread had lower CPU per
/// connection and per request than two and the same per byte, and as many or more connections and
/// requests per second on every `hop_bench` path but the 64 B round trip's median
/// (docs/benchmarks.md, issue 23's sixth pass).
pub fn runtime_threads(
    flag: Option<u16>,
    env: Option<&str>,
    cores: usize,
) -> Result<usize, CliError> {
    if let Some(n) = flag {
        return Ok(usize::from(n));
    }
    match env {
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(CliError::WorkerThreads(v.to_owned())),
        },
        None => Ok((cores / 2).max(1)),
    }
}

/// Runs a parsed invocation against `env` until `shutdown` resolves.
pub async fn run(
    invocation: Invocation,
    env: &Env,
    shutdown: impl Future<Output = ()>,
) -> Result<(), RunError> {
    let invocation = HookSet::adjust(invocation);
    let settings = invocation.cli.settings(env)?;
    let tls = invocation.hooks.agent_tls(settings.tls.clone());
    let client = AgentClient::with_tls(&settings.http_addr, settings.token.clone(), &tls)?
        .with_hooks(ClientHooks::new(invocation.hooks));
    let proxy_id = match settings.target {
        Target::ProxyId(id) => id,
        Target::SidecarFor(s) => {
            let services = client.services().await.map_err(|e| CliError::Lookup {
                sidecar_for: s.clone(),
                error: e.to_string(),
            })?;
            pick_sidecar(&services, &s)?
        }
    };
    let mut proxy = Proxy::new(client, proxy_id);
    // No workers unless asked for: on the idle 2-core machine the per-core workers cost the L4
    // hop throughput, CPU per GB and round trips (docs/benchmarks.md, the idle re-run).
    let workers = match invocation.cli.workers {
        None | Some(0) => None,
        Some(n) => Some(Workers::start(n)),
    };
    if let Some(workers) = workers {
        proxy = proxy.with_workers(Arc::new(workers.map_err(RunError::Workers)?));
    }
    proxy.run(shutdown).await?;
    Ok(())
}

/// `error`, then each of its sources, separated by `: `.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// Logs on stderr at `level` (`RUST_LOG` overrides); keeps an already installed subscriber.
fn init_logs(level: &str, json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let reg = tracing_subscriber::registry().with(filter);
    let _ = if json {
        reg.with(
            tracing_subscriber::fmt::layer()
                .json()
                .with_writer(std::io::stderr),
        )
        .try_init()
    } else {
        reg.with(
            tracing_subscriber::fmt::layer()
                .with_target(false)
                .with_writer(std::io::stderr),
        )
        .try_init()
    };
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

#[cfg(test)]
mod tests;
