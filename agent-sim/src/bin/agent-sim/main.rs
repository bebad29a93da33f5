//! `agent-sim`: serve a simulated Consul agent on 127.0.0.1:8500 (by default) until Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use agent_sim::acl::{AclConfig, DefaultPolicy};
use agent_sim::ca::KeyKind;
use agent_sim::config::{IntentionDefault, SimConfig};
use agent_sim::duration::GoDuration;
use agent_sim::xds::{TlsMode, XdsConfig};
use agent_sim::{AgentSim, preload};
use anyhow::Context;
use clap::{Parser, ValueEnum};

mod connect_envoy;
mod scenario;
mod tls;

/// A wire-faithful simulated Consul agent (Connect endpoints) with fault injection.
///
/// Faults and state changes are driven through the control API under `/_sim/` (see README).
#[derive(Debug, Parser)]
#[command(name = "agent-sim", version)]
struct Cli {
    /// Address to serve the agent HTTP API on (loopback unless --allow-non-loopback).
    #[arg(long, default_value = "127.0.0.1:8500", value_name = "ADDR")]
    listen: SocketAddr,
    /// Allow --listen, --control-listen or --grpc-listen on a non-loopback address. Anyone who
    /// reaches the agent can then read its leaf keys and, without --acl, drive the /_sim/
    /// control API (rotate the CA, forge identities, inject faults): a warning is printed.
    #[arg(long)]
    allow_non_loopback: bool,
    /// Also serve the control API on this separate address (reachable while the agent is down).
    #[arg(long, value_name = "ADDR")]
    control_listen: Option<SocketAddr>,
    /// Address of the gRPC xDS server (delta ADS for Envoy, like a dev agent's 8502); `off`
    /// serves no gRPC port.
    #[arg(long, default_value = "127.0.0.1:8502", value_name = "ADDR|off", value_parser = grpc_listen)]
    grpc_listen: GrpcListen,
    /// How the sidecar's leaf and roots reach Envoy: `inline` in every TLS context (Consul before
    /// the SDS change) or `sds` secrets `connect-leaf`/`connect-root` (newest Consul).
    #[arg(long, default_value = "inline", value_name = "MODE", value_parser = tls_mode)]
    xds_tls_mode: TlsMode,
    /// Not Consul's rendering, for benchmarks: session resumption off in every xDS TLS context
    /// (`disable_stateless/stateful_session_resumption`, `max_session_keys: 0`).
    #[arg(long)]
    xds_no_tls_resumption: bool,
    /// Not Consul's rendering, for benchmarks: `tls_params.ecdh_curves` of every xDS TLS context
    /// (comma-separated, e.g. `X25519`).
    #[arg(long, value_delimiter = ',', value_name = "CURVE,...")]
    xds_tls_ecdh_curves: Vec<String>,
    /// Datacenter name.
    #[arg(long, default_value = "dc1")]
    datacenter: String,
    /// The agent's node name.
    #[arg(long, default_value = "agent-sim")]
    node_name: String,
    /// Cluster ID (the trust domain is `<id>.consul`); random when absent.
    #[arg(long)]
    cluster_id: Option<String>,
    /// Enable ACLs.
    #[arg(long)]
    acl: bool,
    /// `acl.default_policy` (with --acl).
    #[arg(long, value_enum, default_value_t = Policy::Allow)]
    default_policy: Policy,
    /// SecretID of the management token (with --acl); a random one is printed when absent.
    #[arg(long, value_name = "SECRET")]
    management_token: Option<String>,
    /// `default_intention_policy`; unset follows the ACL default.
    #[arg(long, value_enum)]
    default_intention_policy: Option<Policy>,
    /// Leaf certificate TTL as a Go duration (`72h`, `30s`).
    #[arg(long, default_value = "72h", value_parser = go_duration)]
    leaf_ttl: Duration,
    /// The CA's key type (`PrivateKeyType`) for the root and the leaves: `ec` or `rsa`.
    #[arg(long, value_enum, value_name = "TYPE")]
    ca_key_type: Option<CaKeyType>,
    /// The CA's key size (`PrivateKeyBits`): 256 or 384 for `ec`, 2048 or 4096 for `rsa`;
    /// defaults to 256 (`ec`) or 2048 (`rsa`).
    #[arg(long, value_name = "N")]
    ca_key_bits: Option<u32>,
    /// Sim-only chain mode: leaves are signed by an intermediate under the root, as with Vault or
    /// in a secondary datacenter (roots list `IntermediateCerts`, `CertPEM` carries the chain).
    #[arg(long)]
    ca_intermediate: bool,
    /// Issue the roots and intermediates without the `spiffe://<trust domain>` URI SAN, as some
    /// external CA providers do (leaves still carry their SPIFFE ID).
    #[arg(long)]
    ca_without_spiffe_san: bool,
    #[command(flatten)]
    tls: tls::TlsArgs,
    /// Max random delay before blocked leaf queries see a leaf from a rotated CA.
    #[arg(long, default_value = "30s", value_parser = go_duration)]
    ca_change_jitter: Duration,
    /// Preload file(s) of services, catalog entries, config entries and tokens (JSON or HCL).
    #[arg(long, value_name = "FILE")]
    preload: Vec<PathBuf>,
    /// Seed for the sim's random choices.
    #[arg(long)]
    seed: Option<u64>,
    /// Do not run TCP/TTL/alias health checks.
    #[arg(long)]
    no_checks: bool,
    /// Play the agent side of a catalogue scenario for a proxy started by hand (see
    /// `--list-scenarios`); ACLs and agent settings come from the scenario.
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    /// Pause between the scenario's steps.
    #[arg(long, default_value = "2s", value_parser = go_duration)]
    scenario_pace: Duration,
    /// Stop once the scenario's timeline has been played (instead of serving until Ctrl-C).
    #[arg(long, requires = "scenario")]
    exit_after_scenario: bool,
    /// List the catalogue's scenarios and exit.
    #[arg(long)]
    list_scenarios: bool,
    /// Log filter (tracing `EnvFilter` syntax); `RUST_LOG` wins when set.
    #[arg(long, default_value = "info")]
    log_level: String,
    /// Log as JSON lines.
    #[arg(long)]
    log_json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Policy {
    Allow,
    Deny,
}

/// `--ca-key-type`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum CaKeyType {
    Ec,
    Rsa,
}

/// `--ca-key-type` / `--ca-key-bits` as a key kind; a type alone takes its usual size, bits
/// alone mean `ec`.
fn ca_key_kind(key_type: Option<CaKeyType>, bits: Option<u32>) -> anyhow::Result<KeyKind> {
    let (name, default_bits) = match key_type {
        Some(CaKeyType::Rsa) => ("rsa", 2048),
        Some(CaKeyType::Ec) | None => ("ec", 256),
    };
    let bits = bits.unwrap_or(default_bits);
    KeyKind::from_config(name, i64::from(bits)).ok_or_else(|| {
        anyhow::anyhow!(
            "--ca-key-bits {bits} is not valid for --ca-key-type {name} \
             (ec: 256 or 384; rsa: 2048 or 4096)"
        )
    })
}

/// The listen addresses that are not loopback.
fn non_loopback(cli: &Cli) -> Vec<SocketAddr> {
    [Some(cli.listen), cli.control_listen, cli.grpc_listen.0]
        .into_iter()
        .flatten()
        .filter(|a| !a.ip().is_loopback())
        .collect()
}

/// `--grpc-listen`: an address, or `off`.
#[derive(Debug, Clone, Copy)]
struct GrpcListen(Option<SocketAddr>);

fn grpc_listen(s: &str) -> Result<GrpcListen, String> {
    if s == "off" {
        return Ok(GrpcListen(None));
    }
    s.parse()
        .map(|a| GrpcListen(Some(a)))
        .map_err(|e| format!("{e} (expected ADDR:PORT or off)"))
}

fn tls_mode(s: &str) -> Result<TlsMode, String> {
    s.parse()
}

fn go_duration(s: &str) -> Result<Duration, String> {
    let d = GoDuration::parse(s).map_err(|e| e.to_string())?;
    if d.0 <= 0 {
        return Err("must be positive".into());
    }
    Ok(d.to_std())
}

fn init_tracing(level: &str, json: bool) {
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::prelude::*;
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
                // Colour only on a terminal: a log file or a pipe gets plain text.
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_writer(std::io::stderr),
        )
        .init();
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    // `agent-sim connect envoy ...` takes Consul's Go-style flags, not clap's.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "connect") {
        return connect_envoy::main(&args[2..]).await;
    }
    match run(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line with the cause chain; no backtrace for a user's mistake.
            eprintln!("agent-sim: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    if cli.list_scenarios {
        scenario::list();
        return Ok(());
    }
    init_tracing(&cli.log_level, cli.log_json);
    let exposed = non_loopback(&cli);
    if !exposed.is_empty() {
        let list = exposed.iter().map(ToString::to_string).collect::<Vec<_>>();
        anyhow::ensure!(
            cli.allow_non_loopback,
            "refusing to listen on {}: not a loopback address; agent-sim serves leaf private \
             keys and a control API that rotates the CA and forges identities, so exposing it \
             needs --allow-non-loopback (and --acl, so /_sim/ needs the management token)",
            list.join(", ")
        );
        eprintln!(
            "agent-sim: WARNING: listening on non-loopback {}: anyone who can reach it can read \
             leaf private keys{}",
            list.join(", "),
            if cli.acl {
                ""
            } else {
                " and drive the /_sim/ control API (no --acl: it is unauthenticated)"
            }
        );
    }
    let scenario = cli
        .scenario
        .as_deref()
        .map(|name| scenario::find(name, cli.seed.unwrap_or(1)))
        .transpose()?;
    let management_token = (cli.acl || scenario.is_some()).then(|| {
        cli.management_token
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
    });
    let ca_key_kind = ca_key_kind(cli.ca_key_type, cli.ca_key_bits)?;
    let cfg = SimConfig {
        bind: cli.listen,
        control_bind: cli.control_listen,
        datacenter: cli.datacenter,
        node_name: cli.node_name,
        cluster_id: cli.cluster_id,
        acl: AclConfig {
            enabled: cli.acl,
            default_policy: match cli.default_policy {
                Policy::Allow => DefaultPolicy::Allow,
                Policy::Deny => DefaultPolicy::Deny,
            },
            management_token: management_token.clone(),
            default_token: None,
        },
        default_intention_policy: cli.default_intention_policy.map(|p| match p {
            Policy::Allow => IntentionDefault::Allow,
            Policy::Deny => IntentionDefault::Deny,
        }),
        leaf_ttl: cli.leaf_ttl,
        ca_key_kind,
        ca_intermediate: cli.ca_intermediate,
        ca_spiffe_san: !cli.ca_without_spiffe_san,
        ca_change_jitter: cli.ca_change_jitter,
        seed: cli.seed,
        run_checks: !cli.no_checks,
        grpc_bind: cli.grpc_listen.0,
        xds: XdsConfig {
            tls_mode: cli.xds_tls_mode,
            no_tls_resumption: cli.xds_no_tls_resumption,
            tls_ecdh_curves: cli.xds_tls_ecdh_curves.clone(),
        },
        ..SimConfig::default()
    };
    let mut cfg = cfg;
    cli.tls.apply(&mut cfg);
    if let (Some(s), Some(token)) = (&scenario, &management_token) {
        scenario::configure(&mut cfg, s, token)?;
    }
    let flags = [
        (Some(cli.listen), "--listen"),
        (cli.control_listen, "--control-listen"),
        (cli.grpc_listen.0, "--grpc-listen"),
    ];
    let sim = match AgentSim::builder().config(cfg).start().await {
        Ok(sim) => sim,
        Err(agent_sim::SimError::Bind { addr, source }) => {
            anyhow::bail!("{}", bind_error(&flags, addr, &source))
        }
        Err(e) => return Err(e).context("starting agent-sim"),
    };
    for path in &cli.preload {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        preload::apply(sim.control(), &path.display().to_string(), &text)?;
    }
    println!("agent-sim listening on {}", sim.url());
    if let Some(c) = sim.control_addr() {
        println!("control API on http://{c}/_sim/");
    }
    if let Some(g) = sim.grpc_addr() {
        println!(
            "xDS (gRPC, delta ADS) on {g}, TLS {}{}",
            cli.xds_tls_mode.as_str(),
            if cli.xds_no_tls_resumption {
                ", TLS resumption off (sim-only, not Consul's rendering)"
            } else {
                ""
            }
        );
    }
    println!("trust domain {}", sim.control().trust_domain());
    if let Some(t) = &management_token {
        println!("management token {t}");
    }
    if sim.control().agent_tls().is_some() {
        cli.tls.write(sim.control(), &sim.http_addr())?;
    } else {
        println!("export CONSUL_HTTP_ADDR={}", sim.http_addr());
    }
    // Lives until the process ends orderly (the proxy may use its sockets after the timeline).
    let sockets = scenario::SocketDir::for_process();
    if let Some(s) = &scenario {
        let addr = sim.http_addr();
        let play = scenario::play(
            sim.control(),
            &addr,
            sim.grpc_addr(),
            s,
            cli.scenario_pace,
            &sockets,
        );
        tokio::select! {
            played = play => played?,
            () = shutdown_signal() => {
                sim.shutdown().await;
                return Ok(());
            }
        }
        if cli.exit_after_scenario {
            sim.shutdown().await;
            return Ok(());
        }
    }
    shutdown_signal().await;
    sim.shutdown().await;
    Ok(())
}

/// A listener that could not be bound, said once and naming the flag that chose its address.
fn bind_error(
    flags: &[(Option<SocketAddr>, &str)],
    addr: SocketAddr,
    source: &std::io::Error,
) -> String {
    let flag = flags
        .iter()
        .find(|(a, _)| *a == Some(addr))
        .map_or("--listen", |(_, f)| f);
    let why = if source.kind() == std::io::ErrorKind::AddrInUse {
        "the address is already in use (another agent-sim or a Consul agent?)".to_owned()
    } else {
        source.to_string()
    };
    format!(
        "cannot listen on {addr} ({flag}): {why}; choose another address with {flag}, e.g. \
         {flag} 127.0.0.1:0 for any free port"
    )
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let ctrl_c = tokio::signal::ctrl_c();
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        return ctrl_c.await.unwrap_or_default();
    };
    tokio::select! {
        _ = ctrl_c => {}
        _ = term.recv() => {}
    }
}
