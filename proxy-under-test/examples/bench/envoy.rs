//! The Envoy pair for the benchmark: static bootstraps (no xDS) shaped like Consul's sidecar
//! config, and the child processes. Envoy B is `db`'s sidecar (public listener: TLS requiring a
//! client certificate from the sim's CA, network RBAC allowing `web`, `tcp_proxy` to the app);
//! Envoy A is `web`'s sidecar (plain upstream listener, `tcp_proxy` to an mTLS cluster for `db`
//! presenting `web`'s leaf and checking `db`'s SPIFFE ID). Each runs with `--concurrency 1`,
//! in its own process group, killed on drop (so also when the bench is interrupted).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::net::TcpStream;

use super::BoxError;

/// A leaf and its key, PEM.
pub(crate) struct Pem {
    pub(crate) chain: String,
    pub(crate) key: String,
}

pub(crate) fn addr(a: SocketAddr) -> Value {
    json!({"socket_address": {"address": a.ip().to_string(), "port_value": a.port()}})
}

pub(crate) fn admin(port: u16) -> Value {
    json!({"address": addr(SocketAddr::from(([127, 0, 0, 1], port)))})
}

pub(crate) fn tls_certificates(leaf: &Pem) -> Value {
    json!([{
        "certificate_chain": {"inline_string": leaf.chain},
        "private_key": {"inline_string": leaf.key}
    }])
}

/// The regex Consul's RBAC uses for `web`'s SPIFFE ID in `trust_domain`.
pub(crate) fn web_principal(trust_domain: &str) -> String {
    format!(
        "^spiffe://{}/ns/default/dc/[^/]+/svc/web$",
        trust_domain.replace('.', "\\.")
    )
}

/// The public listener's mTLS transport socket (client certificate required), offering `alpn`.
pub(crate) fn downstream_tls(leaf: &Pem, roots: &str, alpn: &[&str]) -> Value {
    let mut common = json!({
        "tls_params": {},
        "tls_certificates": tls_certificates(leaf),
        "validation_context": {"trusted_ca": {"inline_string": roots}}
    });
    if !alpn.is_empty() {
        common["alpn_protocols"] = json!(alpn);
    }
    json!({
        "name": "tls",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
            "common_tls_context": common,
            "require_client_certificate": true
        }
    })
}

/// The upstream cluster's mTLS transport socket to `db` (SNI `sni`, SPIFFE SAN match).
pub(crate) fn upstream_tls(leaf: &Pem, roots: &str, trust_domain: &str, sni: &str) -> Value {
    json!({
        "name": "tls",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
            "common_tls_context": {
                "tls_params": {},
                "tls_certificates": tls_certificates(leaf),
                "validation_context": {
                    "trusted_ca": {"inline_string": roots},
                    "match_typed_subject_alt_names": [{
                        "san_type": "URI",
                        "matcher": {"exact": format!("spiffe://{trust_domain}/ns/default/dc/dc1/svc/db")}
                    }]
                }
            },
            "sni": sni
        }
    })
}

fn tcp_proxy(stat_prefix: &str, cluster: &str) -> Value {
    json!({
        "name": "envoy.filters.network.tcp_proxy",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
            "stat_prefix": stat_prefix,
            "cluster": cluster
        }
    })
}

pub(crate) fn static_cluster(name: &str, to: SocketAddr) -> Value {
    json!({
        "name": name,
        "type": "STATIC",
        "connect_timeout": "5s",
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": addr(to)}}]}]
        }
    })
}

/// Envoy B: `db`'s public listener on `listen`, forwarding to `app`.
pub(crate) fn server_bootstrap(
    listen: SocketAddr,
    app: SocketAddr,
    admin_port: u16,
    leaf: &Pem,
    roots: &str,
    trust_domain: &str,
) -> Value {
    let web = web_principal(trust_domain);
    let rbac = json!({
        "name": "envoy.filters.network.rbac",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC",
            "stat_prefix": "connect_authz",
            "rules": {"policies": {"consul-intentions-layer4": {
                "permissions": [{"any": true}],
                "principals": [{"authenticated": {"principal_name": {"safe_regex": {"regex": web}}}}]
            }}}
        }
    });
    json!({
        "admin": admin(admin_port),
        "node": {"id": "db-sidecar-proxy", "cluster": "db"},
        "static_resources": {
            "listeners": [{
                "name": format!("public_listener:{listen}"),
                "address": addr(listen),
                "filter_chains": [{
                    "filters": [rbac, tcp_proxy("public_listener", "local_app")],
                    "transport_socket": downstream_tls(leaf, roots, &[])
                }]
            }],
            "clusters": [static_cluster("local_app", app)]
        }
    })
}

/// Envoy A: `web`'s upstream listener for `db` on `listen`, mTLS to Envoy B at `server`.
pub(crate) fn client_bootstrap(
    listen: SocketAddr,
    server: SocketAddr,
    admin_port: u16,
    leaf: &Pem,
    roots: &str,
    trust_domain: &str,
) -> Value {
    let sni = format!("db.default.dc1.internal.{trust_domain}");
    let mut cluster = static_cluster(&sni, server);
    cluster["transport_socket"] = upstream_tls(leaf, roots, trust_domain, &sni);
    json!({
        "admin": admin(admin_port),
        "node": {"id": "web-sidecar-proxy", "cluster": "web"},
        "static_resources": {
            "listeners": [{
                "name": format!("db:{listen}"),
                "address": addr(listen),
                "filter_chains": [{"filters": [tcp_proxy("upstream.db.default.default.dc1", &sni)]}]
            }],
            "clusters": [cluster]
        }
    })
}

/// A running Envoy; killed (with its process group) when dropped.
pub(crate) struct Envoy {
    child: tokio::process::Child,
}

impl Drop for Envoy {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        // kill_on_drop reaps the child itself.
    }
}

impl Envoy {
    /// Writes `config` into `dir` and starts Envoy on it; returns once `listen` accepts.
    pub(crate) async fn start(
        bin: &Path,
        dir: &Path,
        name: &str,
        config: &Value,
        listen: SocketAddr,
    ) -> Result<Self, BoxError> {
        let path: PathBuf = dir.join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_vec_pretty(config)?)?;
        let log = std::fs::File::create(dir.join(format!("{name}.log")))?;
        let mut child = tokio::process::Command::new(bin)
            .arg("-c")
            .arg(&path)
            .args(["--concurrency", "1", "--disable-hot-restart"])
            .args(["--log-level", "warn", "--drain-time-s", "1"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .process_group(0)
            .kill_on_drop(true)
            .spawn()?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = child.try_wait()? {
                let log = std::fs::read_to_string(dir.join(format!("{name}.log")))?;
                return Err(format!("envoy {name} exited ({status}):\n{log}").into());
            }
            if TcpStream::connect(listen).await.is_ok() {
                return Ok(Self { child });
            }
            if Instant::now() > deadline {
                return Err(format!("envoy {name} did not listen on {listen} within 30 s").into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// `envoy --version`'s version field (e.g. `1.40.0/...`), for the report.
pub(crate) fn version(bin: &Path) -> String {
    std::process::Command::new(bin)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .and_then(|s| {
            s.split_whitespace()
                .skip_while(|w| *w != "version:")
                .nth(1)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "unknown version".into())
}
