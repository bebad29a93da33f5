//! Command line like `consul connect proxy`: Go-style single-dash long flags (rewritten to
//! clap's `--flag` before parsing), environment precedence per Consul's Go client, and
//! `-sidecar-for` resolution with Consul's error texts.

use std::collections::BTreeMap;
use std::ffi::OsString;

use clap::Parser;

use crate::agent::AgentTls;
use crate::agent::types::AgentService;

mod entry;

pub use self::entry::{Invocation, RunError, cli_main, parse_args, run, runtime, runtime_threads};

/// Long flags accepted with a single dash (`-proxy-id web`, `-proxy-id=web`) as well as two.
pub const LONG_FLAGS: [&str; 7] = [
    "proxy-id",
    "sidecar-for",
    "http-addr",
    "token",
    "token-file",
    "log-level",
    "log-json",
];

/// Errors from flags, environment or sidecar lookup.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Neither or both of `-proxy-id` / `-sidecar-for`.
    #[error("{0}")]
    Usage(String),
    /// The token file could not be read.
    #[error("Error reading token file {path:?}: {source}")]
    TokenFile {
        /// The path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// `-sidecar-for` found nothing.
    #[error("No sidecar proxy registered for {0}")]
    NoSidecar(String),
    /// `-sidecar-for` found several.
    #[error(
        "More than one sidecar proxy registered for {sidecar_for}.\n    Start proxy with -proxy-id and one of the following IDs: {ids}"
    )]
    SeveralSidecars {
        /// The `-sidecar-for` value.
        sidecar_for: String,
        /// Candidate proxy IDs, comma-separated.
        ids: String,
    },
    /// `TOKIO_WORKER_THREADS` is not a thread count.
    #[error(
        "TOKIO_WORKER_THREADS={0:?} is not a number of threads (1 or more): fix or unset it, or pass --threads N"
    )]
    WorkerThreads(String),
    /// Listing services failed.
    #[error("Failed looking up sidecar proxy info for {sidecar_for}: {error}")]
    Lookup {
        /// The `-sidecar-for` value.
        sidecar_for: String,
        /// The agent error text.
        error: String,
    },
}

/// Parsed flags.
#[derive(Debug, Clone, Parser, PartialEq, Eq)]
#[command(
    name = "proxy-under-test",
    about = "Reference Consul Connect sidecar proxy (L4 + L7). Single-dash long flags (-proxy-id) work like Consul's.",
    version,
    after_help = "Transparent mode (Proxy.Mode = \"transparent\" in the registration): the proxy adds one \
outbound listener on 127.0.0.1:<TransparentProxy.OutboundListenerPort> (default 15001) and maps each \
connection's original destination (a service's virtual IP, or a known instance address) to an \
upstream: the registration's Upstreams, and the services the proxy's service may reach by its \
intentions (or the default policy), as Consul derives implicit upstreams; destinations outside \
the mesh are passed through in plain TCP unless the mesh config entry sets \
TransparentProxy.MeshDestinationsOnly (then refused), as Consul's Envoy does.\n\
Setup: 1. register the sidecar; 2. as root, in the app's network namespace: \
redirect-traffic -proxy-id <ID> -proxy-uid <UID> (see redirect-traffic -help); 3. start this proxy \
as <UID>, e.g. setpriv --reuid <UID> --regid <UID> --clear-groups proxy-under-test -proxy-id <ID>. \
The proxy itself needs no privilege.\n\
Unix sockets: Proxy.LocalServiceSocketPath (the app) and Upstreams[].LocalBindSocketPath / \
LocalBindSocketMode (an upstream exposed to the app) are honoured; instances registered with a \
host name are resolved at every connection."
)]
pub struct Cli {
    /// The proxy's service ID (env CONNECT_PROXY_ID).
    #[arg(long)]
    pub proxy_id: Option<String>,
    /// Find the single sidecar registered for this service ID (env CONNECT_SIDECAR_FOR).
    #[arg(long)]
    pub sidecar_for: Option<String>,
    /// Agent HTTP address (env CONSUL_HTTP_ADDR; default 127.0.0.1:8500).
    #[arg(long)]
    pub http_addr: Option<String>,
    /// ACL token (env CONSUL_HTTP_TOKEN).
    #[arg(long)]
    pub token: Option<String>,
    /// File holding the ACL token (env CONSUL_HTTP_TOKEN_FILE).
    #[arg(long)]
    pub token_file: Option<String>,
    /// CA file verifying an https:// agent (env CONSUL_CACERT).
    #[arg(long)]
    pub ca_file: Option<String>,
    /// Client certificate for an agent with verify_incoming (env CONSUL_CLIENT_CERT).
    #[arg(long)]
    pub client_cert: Option<String>,
    /// Its key (env CONSUL_CLIENT_KEY).
    #[arg(long)]
    pub client_key: Option<String>,
    /// The name the agent's certificate must carry (env CONSUL_TLS_SERVER_NAME; default: the
    /// address's host).
    #[arg(long)]
    pub tls_server_name: Option<String>,
    /// trace, debug, info, warn or error.
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// Log JSON lines.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub log_json: bool,
    /// Connection worker threads, each running its connections start to end (default and 0:
    /// connections share the main multi-threaded runtime).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Threads of the proxy's runtime (default: env TOKIO_WORKER_THREADS, else half the
    /// machine's cores, at least one).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

/// Environment values the CLI reads (injected, never set).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    /// `CONSUL_HTTP_ADDR`.
    pub http_addr: Option<String>,
    /// `CONSUL_HTTP_TOKEN`.
    pub token: Option<String>,
    /// `CONSUL_HTTP_TOKEN_FILE`.
    pub token_file: Option<String>,
    /// `CONSUL_CACERT`.
    pub ca_file: Option<String>,
    /// `CONSUL_CLIENT_CERT`.
    pub client_cert: Option<String>,
    /// `CONSUL_CLIENT_KEY`.
    pub client_key: Option<String>,
    /// `CONSUL_TLS_SERVER_NAME`.
    pub tls_server_name: Option<String>,
    /// `CONSUL_HTTP_SSL`: a scheme-less address means `https://`.
    pub http_ssl: Option<String>,
    /// `CONSUL_HTTP_SSL_VERIFY`: `false` skips verifying the agent's certificate.
    pub http_ssl_verify: Option<String>,
    /// `CONNECT_PROXY_ID`.
    pub proxy_id: Option<String>,
    /// `CONNECT_SIDECAR_FOR`.
    pub sidecar_for: Option<String>,
    /// `TOKIO_WORKER_THREADS`: the runtime's threads when `--threads` is not given.
    pub worker_threads: Option<String>,
}

impl Env {
    /// Reads the variables through `get` (e.g. `|k| std::env::var(k).ok()`); empty = unset.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let g = |k: &str| get(k).filter(|v| !v.is_empty());
        Self {
            http_addr: g("CONSUL_HTTP_ADDR"),
            token: g("CONSUL_HTTP_TOKEN"),
            token_file: g("CONSUL_HTTP_TOKEN_FILE"),
            ca_file: g("CONSUL_CACERT"),
            client_cert: g("CONSUL_CLIENT_CERT"),
            client_key: g("CONSUL_CLIENT_KEY"),
            tls_server_name: g("CONSUL_TLS_SERVER_NAME"),
            http_ssl: g("CONSUL_HTTP_SSL"),
            http_ssl_verify: g("CONSUL_HTTP_SSL_VERIFY"),
            proxy_id: g("CONNECT_PROXY_ID"),
            sidecar_for: g("CONNECT_SIDECAR_FOR"),
            worker_threads: g("TOKIO_WORKER_THREADS"),
        }
    }
}

/// Which registration to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `-proxy-id`.
    ProxyId(String),
    /// `-sidecar-for`.
    SidecarFor(String),
}

/// Flags + environment resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Agent address as given (normalized by the client).
    pub http_addr: String,
    /// Token, if any.
    pub token: Option<String>,
    /// Which registration.
    pub target: Target,
    /// TLS to an `https://` agent.
    pub tls: AgentTls,
}

/// Go's `strconv.ParseBool`, as Consul's API client reads `CONSUL_HTTP_SSL` and
/// `CONSUL_HTTP_SSL_VERIFY`.
fn go_bool(name: &str, value: &str) -> Result<bool, CliError> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(CliError::Usage(format!(
            "{name}: strconv.ParseBool: parsing {value:?}: invalid syntax"
        ))),
    }
}

/// Rewrites every single-dash long flag (`-proxy-id`, `-help`, and an unknown `-bogus` too) to
/// its double-dash form, as Consul's CLI takes `-flag` and `--flag` alike: an unknown flag is
/// then named whole in clap's error (`unexpected argument '--bogus'`), not as `'-b'`. Single
/// letters (`-h`, `-V`) and negative numbers are left alone.
pub fn normalize_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    args.into_iter()
        .enumerate()
        .map(|(i, a)| match a.to_str().filter(|_| i > 0) {
            Some(s) if is_single_dash_long(s) => OsString::from(format!("-{s}")),
            _ => a,
        })
        .collect()
}

/// `-name` or `-name=value` with a name of two characters or more starting with a letter.
fn is_single_dash_long(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('-').filter(|r| !r.starts_with('-')) else {
        return false;
    };
    let name = rest.split('=').next().unwrap_or(rest);
    name.len() >= 2 && name.starts_with(|c: char| c.is_ascii_alphabetic())
}

/// Rewrites `-flag` / `-flag=v` to `--flag` / `--flag=v` for each name in `long_flags` (the
/// first argument, the program name, is left alone), so Go-style single-dash flags reach clap.
pub fn normalize_args_for(
    args: impl IntoIterator<Item = OsString>,
    long_flags: &[&str],
) -> Vec<OsString> {
    args.into_iter()
        .enumerate()
        .map(|(i, a)| {
            let Some(s) = a.to_str().filter(|_| i > 0) else {
                return a;
            };
            let Some(rest) = s.strip_prefix('-').filter(|r| !r.starts_with('-')) else {
                return a;
            };
            let name = rest.split('=').next().unwrap_or(rest);
            if long_flags.contains(&name) {
                OsString::from(format!("-{s}"))
            } else {
                a
            }
        })
        .collect()
}

/// Consul's token precedence: `-token-file` > `-token` > `CONSUL_HTTP_TOKEN_FILE` >
/// `CONSUL_HTTP_TOKEN`; a file's content is trimmed; empty means none.
pub fn resolve_token(
    token: Option<&str>,
    token_file: Option<&str>,
    env: &Env,
) -> Result<Option<String>, CliError> {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|t| t.trim().to_owned())
            .map_err(|source| CliError::TokenFile {
                path: path.to_owned(),
                source,
            })
    };
    let token = if let Some(f) = token_file {
        Some(read(f)?)
    } else if let Some(t) = token {
        Some(t.to_owned())
    } else if let Some(f) = &env.token_file {
        Some(read(f)?)
    } else {
        env.token.clone()
    };
    Ok(token.filter(|t| !t.is_empty()))
}

impl Cli {
    /// Resolves against `env`: `-token-file` > `-token` > `CONSUL_HTTP_TOKEN_FILE` >
    /// `CONSUL_HTTP_TOKEN`; flags over env for the address and target.
    pub fn settings(&self, env: &Env) -> Result<Settings, CliError> {
        let token = resolve_token(self.token.as_deref(), self.token_file.as_deref(), env)?;
        let proxy_id = self.proxy_id.clone().or_else(|| env.proxy_id.clone());
        let sidecar_for = self.sidecar_for.clone().or_else(|| env.sidecar_for.clone());
        let target = match (proxy_id, sidecar_for) {
            (Some(id), None) => Target::ProxyId(id),
            (None, Some(s)) => Target::SidecarFor(s),
            (Some(_), Some(_)) => {
                return Err(CliError::Usage(
                    "-proxy-id and -sidecar-for are mutually exclusive".into(),
                ));
            }
            (None, None) => {
                return Err(CliError::Usage(
                    "One of -proxy-id or -sidecar-for must be specified".into(),
                ));
            }
        };
        let mut http_addr = self
            .http_addr
            .clone()
            .or_else(|| env.http_addr.clone())
            .unwrap_or_else(|| "127.0.0.1:8500".into());
        let ssl = match &env.http_ssl {
            Some(v) => go_bool("CONSUL_HTTP_SSL", v)?,
            None => false,
        };
        if ssl && !http_addr.contains("://") {
            http_addr = format!("https://{http_addr}");
        }
        let verify = match &env.http_ssl_verify {
            Some(v) => go_bool("CONSUL_HTTP_SSL_VERIFY", v)?,
            None => true,
        };
        let pick =
            |flag: &Option<String>, var: &Option<String>| flag.clone().or_else(|| var.clone());
        let tls = AgentTls {
            ca_file: pick(&self.ca_file, &env.ca_file).map(Into::into),
            client_cert: pick(&self.client_cert, &env.client_cert).map(Into::into),
            client_key: pick(&self.client_key, &env.client_key).map(Into::into),
            server_name: pick(&self.tls_server_name, &env.tls_server_name),
            skip_verify: !verify,
        };
        Ok(Settings {
            http_addr,
            token,
            target,
            tls,
        })
    }
}

/// Picks the single connect-proxy whose `Proxy.DestinationServiceID` equals `sidecar_for`
/// (case-insensitive), with Consul's error texts.
pub fn pick_sidecar(
    services: &BTreeMap<String, AgentService>,
    sidecar_for: &str,
) -> Result<String, CliError> {
    let ids: Vec<&str> = services
        .values()
        .filter(|s| s.kind == "connect-proxy")
        .filter(|s| {
            s.proxy
                .as_ref()
                .is_some_and(|p| p.destination_service_id.eq_ignore_ascii_case(sidecar_for))
        })
        .map(|s| s.id.as_str())
        .collect();
    match ids.as_slice() {
        [] => Err(CliError::NoSidecar(sidecar_for.to_owned())),
        [one] => Ok((*one).to_owned()),
        many => Err(CliError::SeveralSidecars {
            sidecar_for: sidecar_for.to_owned(),
            ids: many.join(", "),
        }),
    }
}

#[cfg(test)]
mod tests;
