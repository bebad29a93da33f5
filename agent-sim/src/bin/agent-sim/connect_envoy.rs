//! `agent-sim connect envoy`: Consul's `consul connect envoy` for agent-sim. It reads the
//! proxy's registration over HTTP as Consul's command does (`GET /v1/agent/service/<id>`,
//! `-sidecar-for` through `/v1/agent/services`, the xDS port from `/v1/agent/self`), renders
//! the bootstrap with [`agent_sim::xds::bootstrap::render`] and prints it (`-bootstrap`) or
//! execs Envoy with it (`--config-path <file>` then the pass-through arguments).

use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

use agent_sim::xds::bootstrap::{BootstrapParams, render};
use anyhow::{Context, anyhow, bail};
use serde_json::Value;

mod flags;
mod http;
#[cfg(test)]
mod tests;

use flags::{Env, Flags};
use http::Agent;

/// Entry point for `agent-sim connect ...` (`args` follow `connect`).
pub(crate) async fn main(args: &[OsString]) -> ExitCode {
    let result = async {
        let args = args
            .iter()
            .map(|a| {
                a.clone()
                    .into_string()
                    .map_err(|a| anyhow!("argument {a:?} is not UTF-8"))
            })
            .collect::<anyhow::Result<Vec<String>>>()?;
        match args.split_first() {
            Some((sub, rest)) if sub == "envoy" => run(rest, &Env::from_process()).await,
            Some((sub, _)) if is_help(sub) => {
                print!("{CONNECT_USAGE}");
                Ok(())
            }
            Some((sub, _)) => {
                bail!("unknown command `connect {sub}`; only `connect envoy` exists\n\n{CONNECT_USAGE}")
            }
            None => bail!("{CONNECT_USAGE}"),
        }
    }
    .await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `agent-sim connect --help`.
const CONNECT_USAGE: &str = "\
Usage: agent-sim connect envoy [options] [-- pass-through options]

  Consul's `consul connect envoy` for agent-sim: the Envoy bootstrap of a registered
  sidecar, printed (-bootstrap) or handed to Envoy. `agent-sim connect envoy -help` lists
  its options.
";

/// `-h`, `-help`, `--help` (Consul's CLI takes single and double dashes alike).
fn is_help(arg: &str) -> bool {
    matches!(arg, "-h" | "-help" | "--help" | "help")
}

async fn run(args: &[String], env: &Env) -> anyhow::Result<()> {
    let f = flags::parse(args, env)?;
    if f.help {
        eprint!("{}", flags::USAGE);
        return Ok(());
    }
    let json = serde_json::to_string_pretty(&render(&bootstrap(&f).await?))
        .context("encoding the bootstrap")?;
    if f.bootstrap {
        println!("{json}");
        return Ok(());
    }
    exec_envoy(&f, &json)
}

/// Consul's token precedence (`api.NewClient`): `-token` over `CONSUL_HTTP_TOKEN`,
/// `-token-file` over `CONSUL_HTTP_TOKEN_FILE`, and a non-empty token file over any token.
fn token(f: &Flags) -> anyhow::Result<String> {
    if f.token_file.is_empty() {
        return Ok(f.token.clone());
    }
    let data = std::fs::read_to_string(&f.token_file).map_err(|e| {
        anyhow!(
            "Error connecting to Consul agent: Error loading token file: open {}: {e}",
            f.token_file
        )
    })?;
    let t = data.trim();
    Ok(if t.is_empty() {
        f.token.clone()
    } else {
        t.to_owned()
    })
}

/// Resolves what the bootstrap is rendered from, as `consul connect envoy` does.
async fn bootstrap(f: &Flags) -> anyhow::Result<BootstrapParams> {
    let token = token(f)?;
    let agent = Agent::new(&f.http_addr, &token)
        .map_err(|e| anyhow!("Error connecting to Consul agent: {e:#}"))?;
    let proxy_id = if !f.proxy_id.is_empty() {
        f.proxy_id.clone()
    } else if !f.sidecar_for.is_empty() {
        sidecar_proxy_id(&agent, &f.sidecar_for).await?
    } else {
        bail!("No proxy ID specified. One of -proxy-id, -sidecar-for, or -gateway is required");
    };
    let grpc_addr = grpc_addr(&agent, &f.grpc_addr).await?;
    let (host, port) = split_host_port(&f.admin_bind).ok_or_else(|| {
        anyhow!(
            "Invalid Consul HTTP address: address {}: missing port in address",
            f.admin_bind
        )
    })?;
    let admin_ip = resolve(host)
        .await
        .map_err(|e| anyhow!("Failed to resolve admin bind address: {e}"))?;
    let admin_port: u16 = port
        .parse()
        .map_err(|_| anyhow!("invalid -admin-bind port {port:?}"))?;

    let svc = agent
        .get(&format!("/v1/agent/service/{}", escape(&proxy_id)))
        .await
        .map_err(|e| anyhow!("failed fetch proxy config from local agent: {e:#}"))?;
    let Some(proxy) = svc.get("Proxy").filter(|p| p.is_object()) else {
        bail!("service is not a Connect proxy or gateway");
    };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
    let destination = text(proxy.get("DestinationServiceName"));
    let cluster = if !destination.is_empty() {
        destination
    } else if !f.sidecar_for.is_empty() {
        f.sidecar_for.clone()
    } else {
        proxy_id.clone()
    };
    Ok(BootstrapParams {
        proxy_id,
        cluster,
        namespace: text(svc.get("Namespace")),
        partition: text(svc.get("Partition")),
        datacenter: text(svc.get("Datacenter")),
        grpc_addr,
        token: (!token.is_empty()).then_some(token),
        admin_bind: SocketAddr::new(admin_ip, admin_port),
        agent_ca_pem: None,
    })
}

/// `LookupProxyIDForSidecar`: exactly one connect-proxy whose `Proxy.DestinationServiceID`
/// equals (case-insensitively) the given service ID.
async fn sidecar_proxy_id(agent: &Agent, sidecar_for: &str) -> anyhow::Result<String> {
    let svcs = agent
        .get("/v1/agent/services")
        .await
        .map_err(|e| anyhow!("Failed looking up sidecar proxy info for {sidecar_for}: {e:#}"))?;
    let mut ids: Vec<String> = svcs
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
        .filter(|s| s.get("Kind").and_then(Value::as_str) == Some("connect-proxy"))
        .filter(|s| {
            s.pointer("/Proxy/DestinationServiceID")
                .and_then(Value::as_str)
                .is_some_and(|d| d.eq_ignore_ascii_case(sidecar_for))
        })
        .filter_map(|s| s.get("ID").and_then(Value::as_str).map(str::to_owned))
        .collect();
    ids.sort();
    match ids.len() {
        0 => bail!("No sidecar proxy registered for {sidecar_for}"),
        1 => Ok(ids.remove(0)),
        _ => bail!(
            "More than one sidecar proxy registered for {sidecar_for}.\n    Start proxy with -proxy-id and one of the following IDs: {}",
            ids.join(", ")
        ),
    }
}

/// `-grpc-addr` (`host:port`, optionally `http://`), else the agent's xDS port from
/// `/v1/agent/self` on localhost, else localhost:8502 (Consul's `xdsAddress`).
async fn grpc_addr(agent: &Agent, flag: &str) -> anyhow::Result<SocketAddr> {
    let addr = if flag.is_empty() {
        let port = match agent.get("/v1/agent/self").await {
            Ok(self_) => xds_port(&self_),
            Err(e) => {
                eprintln!("Error connecting to Consul agent: {e:#}");
                None
            }
        };
        format!("localhost:{}", port.unwrap_or(8502))
    } else {
        flag.to_owned()
    };
    let lower = addr.to_ascii_lowercase();
    if lower.starts_with("https://") {
        bail!("TLS to the agent's gRPC port is not supported by agent-sim ({addr:?})");
    }
    if lower.starts_with("unix://") {
        bail!("a unix socket gRPC address is not supported by agent-sim ({addr:?})");
    }
    let hostport = addr.strip_prefix("http://").unwrap_or(&addr);
    let (host, port) = split_host_port(hostport).ok_or_else(|| {
        anyhow!("Invalid Consul HTTP address: address {hostport}: missing port in address")
    })?;
    let ip = resolve(host)
        .await
        .map_err(|e| anyhow!("Failed to resolve agent address: {e}"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| anyhow!("invalid gRPC port {port:?} in {addr:?}"))?;
    Ok(SocketAddr::new(ip, port))
}

/// `XDS.Port` (matched case-insensitively, as mapstructure does), else `DebugConfig.GRPCPort`.
fn xds_port(self_: &Value) -> Option<u16> {
    let obj = self_.as_object()?;
    let xds = obj
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("xds"))
        .map(|(_, v)| v);
    let port = |v: Option<&Value>| {
        v.and_then(Value::as_u64)
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p > 0)
    };
    port(xds.and_then(|x| x.get("Port"))).or_else(|| port(self_.pointer("/DebugConfig/GRPCPort")))
}

/// Go's `net.SplitHostPort` for the forms used here (`host:port`, `[v6]:port`).
fn split_host_port(s: &str) -> Option<(&str, &str)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, port) = rest.split_once("]:")?;
        return Some((host, port));
    }
    let (host, port) = s.rsplit_once(':')?;
    (!host.contains(':')).then_some((host, port))
}

/// An IP as is, else the first address the resolver gives (Envoy's STATIC clusters and admin
/// need IPs, so Consul resolves `localhost` itself).
async fn resolve(host: &str) -> anyhow::Result<IpAddr> {
    if let Ok(ip) = host.parse() {
        return Ok(ip);
    }
    let host = if host.is_empty() { "localhost" } else { host };
    let mut addrs = tokio::net::lookup_host((host, 0))
        .await
        .with_context(|| format!("lookup {host}"))?
        .collect::<Vec<_>>();
    // Prefer IPv4 as Go's resolver does for "ip" lookups of localhost.
    addrs.sort_by_key(|a| !a.is_ipv4());
    addrs
        .first()
        .map(SocketAddr::ip)
        .ok_or_else(|| anyhow!("lookup {host}: no addresses"))
}

/// Percent-encodes a path segment (everything but RFC 3986 unreserved characters).
fn escape(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Without `-bootstrap`: exec Envoy with the bootstrap on its standard input, an already
/// unlinked private file, as `--config-path /dev/fd/0` (Envoy refuses `/dev/stdin`), then
/// `--disable-hot-restart` unless the pass-through arguments mention hot restart, then the
/// pass-through arguments. Consul hands Envoy the bootstrap through a FIFO that its helper
/// process removes once written (`command/connect/envoy/exec_unix.go`); here, too, nothing is
/// left on disk: the file has no name by the time Envoy starts and is gone when Envoy exits.
fn exec_envoy(f: &Flags, json: &str) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    let binary = if f.envoy_binary.is_empty() {
        find_on_path("envoy").ok_or_else(|| {
            anyhow!(
                "Couldn't find envoy binary: exec: \"envoy\": executable file not found in $PATH"
            )
        })?
    } else {
        std::path::PathBuf::from(&f.envoy_binary)
    };
    let file = unlinked_bootstrap(json)?;
    let mut cmd = std::process::Command::new(&binary);
    if !f.envoy_args.iter().any(|a| a.contains("hot-restart")) {
        cmd.arg("--disable-hot-restart");
    }
    cmd.arg("--config-path")
        .arg("/dev/fd/0")
        .args(&f.envoy_args)
        .stdin(file);
    let err = cmd.exec();
    Err(anyhow!("exec {}: {err}", binary.display()))
}

/// `json` in a private (0600) file of the temporary directory whose name is removed at once:
/// the open file is all that is left of it (Envoy reopens it through `/dev/fd/0`, from the
/// start).
pub(crate) fn unlinked_bootstrap(json: &str) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let path = std::env::temp_dir().join(format!(
        "agent-sim-envoy-bootstrap-{}-{nanos}.json",
        std::process::id()
    ));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    std::io::Write::write_all(&mut file, json.as_bytes()).context("writing the bootstrap")?;
    std::io::Seek::rewind(&mut file).context("rewinding the bootstrap")?;
    Ok(file)
}

fn find_on_path(name: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
