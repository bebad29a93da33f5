//! The `redirect-traffic` command line (Consul-style single-dash flags), shared by the binary
//! and the conformance harness: [`cli_main`] reads the environment, [`run`] does the rest with
//! everything injected.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::PathBuf;

use clap::Parser;
use reqwest::Method;
use serde_json::Value;

use super::RedirectError;
use super::config::{Cidr, DEFAULT_OUTBOUND_PORT, Exclusions, RedirectConfig};
use super::exec::{Iptables, apply, remove};
use super::rules::{remove_plan, render, rules};
use crate::agent::{AgentClient, AgentError, REQUEST_TIMEOUT, seg};
use crate::cli::{Env, normalize_args_for, resolve_token};

/// Long flags accepted with a single dash (`-proxy-uid 5995`), as Consul spells them.
pub const LONG_FLAGS: [&str; 16] = [
    "proxy-id",
    "proxy-uid",
    "proxy-inbound-port",
    "proxy-outbound-port",
    "http-addr",
    "token",
    "token-file",
    "exclude-inbound-port",
    "exclude-outbound-port",
    "exclude-outbound-cidr",
    "exclude-uid",
    "comment",
    "dry-run",
    "remove",
    "iptables",
    "help",
];

const LONG_ABOUT: &str = "\
Applies iptables rules for inbound and outbound traffic redirection to a transparent sidecar \
proxy (like `consul connect redirect-traffic`), or removes them.

Setup, step by step:
  1. Register the service with a sidecar in transparent mode
     (Connect.SidecarService.Proxy.Mode = \"transparent\"; the outbound listener is
     Proxy.TransparentProxy.OutboundListenerPort, default 15001).
  2. Run, as root or with CAP_NET_ADMIN, in the application's network namespace:
       redirect-traffic -proxy-id web-sidecar-proxy -proxy-uid 5995
     It reads the registration from the agent and installs the nat rules, then exits.
     Without an agent: -proxy-inbound-port 21000 [-proxy-outbound-port 15001].
  3. Start the proxy as the given UID (e.g. `setpriv --reuid 5995 proxy-under-test -proxy-id
     web-sidecar-proxy`): its own connections are left alone, every other process's outbound
     TCP goes to its outbound listener and inbound TCP to its public listener.
     Traffic to 127.0.0.1 is not redirected (proxy-aware apps keep using local upstreams).
  -dry-run prints the iptables commands without running them (no privilege needed);
  -remove deletes the rules and chains again (no agent needed).

Why the proxy's UID: it needs no privilege in the proxy. The alternatives are a packet mark
(SO_MARK needs CAP_NET_ADMIN in the proxy), a net_cls cgroup classid (cgroup v1 only, gone on
cgroup v2 hosts, and a privileged helper must place the proxy in the cgroup) and the TPROXY
target (keeps the original destination without NAT, but IP_TRANSPARENT needs CAP_NET_ADMIN in
the proxy).";

/// Parsed flags.
#[derive(Debug, Clone, Parser, PartialEq, Eq)]
#[command(
    name = "redirect-traffic",
    about = "Applies iptables rules redirecting an application's TCP traffic to its transparent sidecar proxy",
    long_about = LONG_ABOUT,
    version
)]
pub struct RedirectArgs {
    /// The proxy's service ID: ports are read from its registration.
    #[arg(long)]
    pub proxy_id: Option<String>,
    /// The UID the proxy runs as (required): its traffic is never redirected.
    #[arg(long)]
    pub proxy_uid: Option<u32>,
    /// The proxy's inbound port, without -proxy-id.
    #[arg(long)]
    pub proxy_inbound_port: Option<u16>,
    /// The proxy's outbound port, without -proxy-id (default 15001).
    #[arg(long)]
    pub proxy_outbound_port: Option<u16>,
    /// Agent HTTP address (env CONSUL_HTTP_ADDR; default 127.0.0.1:8500).
    #[arg(long)]
    pub http_addr: Option<String>,
    /// ACL token (env CONSUL_HTTP_TOKEN).
    #[arg(long)]
    pub token: Option<String>,
    /// File holding the ACL token (env CONSUL_HTTP_TOKEN_FILE).
    #[arg(long)]
    pub token_file: Option<String>,
    /// Inbound port to exclude from redirection (repeatable).
    #[arg(long, value_name = "PORT")]
    pub exclude_inbound_port: Vec<u16>,
    /// Outbound port to exclude from redirection (repeatable).
    #[arg(long, value_name = "PORT")]
    pub exclude_outbound_port: Vec<u16>,
    /// Outbound destination CIDR to exclude from redirection (repeatable).
    #[arg(long, value_name = "CIDR")]
    pub exclude_outbound_cidr: Vec<String>,
    /// Further UID whose traffic is not redirected (repeatable).
    #[arg(long, value_name = "UID")]
    pub exclude_uid: Vec<u32>,
    /// Tag every rule with `-m comment --comment TAG`.
    #[arg(long, value_name = "TAG")]
    pub comment: Option<String>,
    /// Print the iptables commands, one per line, and change nothing.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub dry_run: bool,
    /// Delete the jumps and chains installed earlier (needs no agent).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub remove: bool,
    /// The iptables binary (default: `iptables` in PATH, /usr/sbin, /sbin).
    #[arg(long, value_name = "PATH")]
    pub iptables: Option<PathBuf>,
}

/// Runs `redirect-traffic` with `args` (program name first), reading `CONSUL_HTTP_ADDR`,
/// `CONSUL_HTTP_TOKEN`, `CONSUL_HTTP_TOKEN_FILE` and `PATH`; prints to stdout and stderr.
/// Returns the exit status: 0, or 1 with a one-line error. Blocks (it may call the agent on a
/// thread of its own, so it can be called from inside a Tokio runtime too).
pub fn cli_main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let env = Env::from_lookup(|k| std::env::var(k).ok());
    let path = std::env::var_os("PATH");
    run(
        args,
        &env,
        path.as_deref(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )
}

/// [`cli_main`] with the environment (`env`, and `path` = the `PATH` value) and the output
/// streams injected.
pub fn run(
    args: impl IntoIterator<Item = OsString>,
    env: &Env,
    path: Option<&OsStr>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    let parsed = RedirectArgs::try_parse_from(normalize_args_for(args, &LONG_FLAGS));
    let args = match parsed {
        Ok(a) => a,
        Err(e) => {
            let text = e.render().to_string();
            return if e.use_stderr() {
                // One line: clap's first (`error: ...`), without the usage block.
                let first = text.lines().next().unwrap_or("error: bad arguments");
                let _ = writeln!(stderr, "{first} (see -help)");
                1
            } else {
                let _ = write!(stdout, "{text}");
                0
            };
        }
    };
    match execute(&args, env, path) {
        Ok(text) => {
            let _ = write!(stdout, "{text}");
            0
        }
        Err(e) => {
            let line = e.to_string().replace('\n', " ");
            let _ = writeln!(stderr, "error: {line}");
            1
        }
    }
}

/// Does what the flags say; returns what to print on stdout.
fn execute(args: &RedirectArgs, env: &Env, path: Option<&OsStr>) -> Result<String, RedirectError> {
    if args.remove {
        if args.dry_run {
            return Ok(render(&remove_plan()));
        }
        remove(&iptables(args, path)?)?;
        return Ok("Successfully removed traffic redirection rules\n".into());
    }
    let config = config(args, env)?;
    if args.dry_run {
        return Ok(render(&rules(&config)));
    }
    apply(&config, &iptables(args, path)?)?;
    Ok("Successfully applied traffic redirection rules\n".into())
}

fn iptables(args: &RedirectArgs, path: Option<&OsStr>) -> Result<Iptables, RedirectError> {
    match &args.iptables {
        Some(p) => Ok(Iptables::new(p)),
        None => Iptables::find(path),
    }
}

/// Flags (and, with `-proxy-id`, the registration) to a validated config, with Consul's usage
/// errors.
fn config(args: &RedirectArgs, env: &Env) -> Result<RedirectConfig, RedirectError> {
    let Some(proxy_uid) = args.proxy_uid else {
        return Err(RedirectError::BadFlag("-proxy-uid is required".into()));
    };
    let outbound_cidrs = args
        .exclude_outbound_cidr
        .iter()
        .map(|c| c.parse::<Cidr>())
        .collect::<Result<Vec<_>, _>>()?;
    let extra = Exclusions {
        inbound_ports: args.exclude_inbound_port.clone(),
        outbound_ports: args.exclude_outbound_port.clone(),
        outbound_cidrs,
        uids: args.exclude_uid.clone(),
    };
    if args.proxy_id.is_none() && args.proxy_inbound_port.is_none() {
        return Err(RedirectError::BadFlag(
            "either -proxy-id or -proxy-inbound-port are required".into(),
        ));
    }
    if args.proxy_id.is_some()
        && (args.proxy_inbound_port.is_some() || args.proxy_outbound_port.is_some())
    {
        return Err(RedirectError::BadFlag(
            "-proxy-inbound-port or -proxy-outbound-port cannot be provided together with -proxy-id. Proxy's inbound and outbound ports are retrieved from the proxy's configuration instead.".into(),
        ));
    }
    let mut config = match (&args.proxy_id, args.proxy_inbound_port) {
        (Some(id), _) => {
            let token = resolve_token(args.token.as_deref(), args.token_file.as_deref(), env)
                .map_err(|e| RedirectError::BadFlag(e.to_string()))?;
            let addr = args
                .http_addr
                .clone()
                .or_else(|| env.http_addr.clone())
                .unwrap_or_else(|| "127.0.0.1:8500".into());
            let service = fetch_registration(&addr, token, id)?;
            RedirectConfig::from_registration(&service, proxy_uid, extra)?
        }
        (None, inbound) => RedirectConfig::new(proxy_uid, inbound.unwrap_or(0))
            .with_outbound_port(args.proxy_outbound_port.unwrap_or(DEFAULT_OUTBOUND_PORT))
            .with_exclusions(extra),
    };
    config.comment = args.comment.clone();
    config.validate()?;
    Ok(config)
}

/// `GET /v1/agent/service/<id>` with the token, on a thread with its own runtime.
fn fetch_registration(addr: &str, token: Option<String>, id: &str) -> Result<Value, RedirectError> {
    let path = format!("/v1/agent/service/{}", seg(id));
    let fetched = std::thread::scope(|s| {
        s.spawn(|| -> Result<Value, AgentError> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| AgentError::Transport(format!("cannot start a runtime: {e}")))?;
            rt.block_on(async {
                let client = AgentClient::new(addr, token)?;
                let resp = client
                    .send(Method::GET, &path, &[], None, REQUEST_TIMEOUT)
                    .await?;
                AgentClient::decode::<Value>(resp).await
            })
        })
        .join()
    });
    match fetched {
        Ok(r) => Ok(r?),
        Err(_) => Err(RedirectError::Agent(AgentError::Transport(
            "the agent request thread panicked".into(),
        ))),
    }
}
