//! `consul connect envoy`'s command line as Go's `flag` package reads it: `-name value`,
//! `-name=value`, the same with `--`, bare booleans, parsing stops at `--` or the first
//! non-flag argument (the rest goes to Envoy). Defaults from the environment, as Consul.

use anyhow::bail;

/// The flags agent-sim supports (a subset of Consul's; the rest are refused by name).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Flags {
    pub bootstrap: bool,
    pub proxy_id: String,
    pub sidecar_for: String,
    pub http_addr: String,
    pub grpc_addr: String,
    pub token: String,
    pub token_file: String,
    pub admin_bind: String,
    pub envoy_binary: String,
    pub help: bool,
    /// Everything after `--` or the first non-flag argument.
    pub envoy_args: Vec<String>,
}

/// The environment variables Consul's command reads (read by the caller, injected here).
#[derive(Debug, Default, Clone)]
pub(super) struct Env {
    pub http_addr: Option<String>,
    pub grpc_addr: Option<String>,
    pub token: Option<String>,
    pub token_file: Option<String>,
    pub proxy_id: Option<String>,
    pub sidecar_for: Option<String>,
}

impl Env {
    /// `CONSUL_HTTP_ADDR`, `CONSUL_GRPC_ADDR`, `CONSUL_HTTP_TOKEN`, `CONSUL_HTTP_TOKEN_FILE`,
    /// `CONNECT_PROXY_ID`, `CONNECT_SIDECAR_FOR` (empty counts as unset, as Consul).
    pub(super) fn from_process() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Self {
            http_addr: var("CONSUL_HTTP_ADDR"),
            grpc_addr: var("CONSUL_GRPC_ADDR"),
            token: var("CONSUL_HTTP_TOKEN"),
            token_file: var("CONSUL_HTTP_TOKEN_FILE"),
            proxy_id: var("CONNECT_PROXY_ID"),
            sidecar_for: var("CONNECT_SIDECAR_FOR"),
        }
    }
}

/// The flags that take a value.
const VALUED: [&str; 9] = [
    "proxy-id",
    "sidecar-for",
    "http-addr",
    "grpc-addr",
    "token",
    "token-file",
    "admin-bind",
    "envoy-binary",
    "envoy-version",
];
/// Consul flags agent-sim refuses with a clear message rather than silently mis-rendering.
const UNSUPPORTED: [&str; 14] = [
    "gateway",
    "mesh-gateway",
    "register",
    "node-name",
    "admin-access-log-path",
    "ca-file",
    "ca-path",
    "client-cert",
    "client-key",
    "tls-server-name",
    "namespace",
    "partition",
    "datacenter",
    "prometheus-backend-port",
];

pub(super) const USAGE: &str = "\
Usage: agent-sim connect envoy [options] [-- pass-through options]

  Generates the Envoy bootstrap for a sidecar registered with agent-sim, as
  `consul connect envoy` does, and prints it (-bootstrap) or execs Envoy with it.

  -bootstrap            Generate the bootstrap.json but don't exec envoy
  -proxy-id ID          The proxy's ID on the local agent (env CONNECT_PROXY_ID)
  -sidecar-for ID       The service instance whose sidecar proxy to configure
  -http-addr ADDR       The agent's HTTP address (env CONSUL_HTTP_ADDR, default 127.0.0.1:8500)
  -grpc-addr ADDR       The agent's gRPC address (env CONSUL_GRPC_ADDR, default: the agent's xDS port)
  -token TOKEN          ACL token (env CONSUL_HTTP_TOKEN)
  -token-file PATH      File holding the ACL token; wins over -token (env CONSUL_HTTP_TOKEN_FILE)
  -admin-bind ADDR      Envoy's admin listener (default localhost:19000)
  -envoy-binary PATH    Envoy to exec without -bootstrap (default: envoy on PATH)
";

fn is_bool(name: &str) -> bool {
    matches!(
        name,
        "bootstrap" | "help" | "h" | "no-central-config" | "omit-deprecated-tags"
    )
}

/// Parses `args` (what follows `connect envoy`) over the environment's defaults.
pub(super) fn parse(args: &[String], env: &Env) -> anyhow::Result<Flags> {
    let mut f = Flags {
        http_addr: env.http_addr.clone().unwrap_or_default(),
        grpc_addr: env.grpc_addr.clone().unwrap_or_default(),
        token: env.token.clone().unwrap_or_default(),
        token_file: env.token_file.clone().unwrap_or_default(),
        proxy_id: env.proxy_id.clone().unwrap_or_default(),
        sidecar_for: env.sidecar_for.clone().unwrap_or_default(),
        admin_bind: "localhost:19000".into(),
        ..Flags::default()
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--" {
            f.envoy_args.extend(it.by_ref().cloned());
            break;
        }
        let Some(body) = arg
            .strip_prefix("--")
            .or_else(|| arg.strip_prefix('-'))
            .filter(|b| !b.is_empty() && !b.starts_with('-'))
        else {
            // The first non-flag argument ends the flags (Go's flag package).
            f.envoy_args.push(arg.clone());
            f.envoy_args.extend(it.by_ref().cloned());
            break;
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (body, None),
        };
        if UNSUPPORTED.contains(&name) {
            bail!("flag -{name} is not supported by agent-sim's connect envoy");
        }
        if !is_bool(name) && !VALUED.contains(&name) {
            bail!("flag provided but not defined: -{name}");
        }
        let value = if is_bool(name) {
            match inline.as_deref() {
                None | Some("true" | "1" | "t" | "T" | "TRUE" | "True") => "true".to_owned(),
                Some("false" | "0" | "f" | "F" | "FALSE" | "False") => "false".to_owned(),
                Some(v) => bail!("invalid boolean value {v:?} for -{name}"),
            }
        } else {
            match inline {
                Some(v) => v,
                None => match it.next() {
                    Some(v) => v.clone(),
                    None => bail!("flag needs an argument: -{name}"),
                },
            }
        };
        match name {
            "bootstrap" => f.bootstrap = value == "true",
            "help" | "h" => f.help = value == "true",
            "proxy-id" => f.proxy_id = value,
            "sidecar-for" => f.sidecar_for = value,
            "http-addr" => f.http_addr = value,
            "grpc-addr" => f.grpc_addr = value,
            "token" => f.token = value,
            "token-file" => f.token_file = value,
            "admin-bind" => f.admin_bind = value,
            "envoy-binary" => f.envoy_binary = value,
            // Accepted and ignored: `envoy-version` (unused by Consul too), `no-central-config`
            // (agent-sim reads no Proxy.Config), `omit-deprecated-tags` (always kept).
            _ => {}
        }
    }
    Ok(f)
}
