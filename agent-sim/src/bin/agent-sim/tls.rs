//! `--tls-dir` and friends: serve HTTPS (and gRPC over TLS) with a certificate of the agent's
//! own CA, write the PEMs a proxy needs, and print the environment that points it at them.

use std::path::{Path, PathBuf};

use agent_sim::Control;
use agent_sim::config::SimConfig;
use anyhow::Context;

/// The agent's own TLS.
#[derive(Debug, clap::Args)]
pub(crate) struct TlsArgs {
    /// Serve HTTPS on --listen and gRPC over TLS on --grpc-listen, with a server certificate of
    /// the agent's own CA (not the Connect CA); the CA, a client certificate and its key are
    /// written to DIR as ca.pem, client.pem and client-key.pem.
    #[arg(long, value_name = "DIR")]
    tls_dir: Option<PathBuf>,
    /// With --tls-dir: the HTTPS port requires a client certificate of the agent CA
    /// (`tls.https.verify_incoming`).
    #[arg(long, requires = "tls_dir")]
    tls_verify_incoming: bool,
    /// With --tls-dir: the DNS name of the server certificate (besides localhost, 127.0.0.1 and
    /// ::1), for CONSUL_TLS_SERVER_NAME.
    #[arg(long, requires = "tls_dir", default_value = "server.dc1.consul")]
    tls_server_name: String,
}

impl TlsArgs {
    /// Puts the agent's TLS into `cfg` when asked for.
    pub(crate) fn apply(&self, cfg: &mut SimConfig) {
        if self.tls_dir.is_some() {
            cfg.agent_tls = Some(agent_sim::state::agent_tls::AgentTlsConfig {
                verify_incoming: self.tls_verify_incoming,
                server_name: self.tls_server_name.clone(),
            });
        }
    }

    /// Writes the PEMs and prints the `export` lines for a proxy.
    pub(crate) fn write(&self, control: &Control, http_addr: &str) -> anyhow::Result<()> {
        let (Some(dir), Some(tls)) = (&self.tls_dir, control.agent_tls()) else {
            return Ok(());
        };
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let m = tls.material();
        let write = |name: &str, pem: &str| -> anyhow::Result<PathBuf> {
            let path = dir.join(name);
            std::fs::write(&path, pem).with_context(|| format!("writing {}", path.display()))?;
            Ok(std::path::absolute(&path).unwrap_or(path))
        };
        let ca = write("ca.pem", &m.ca_pem)?;
        let cert = write("client.pem", &m.client.cert_pem)?;
        let key = write("client-key.pem", &m.client.key_pem)?;
        let show = |p: &Path| p.display().to_string();
        println!("export CONSUL_HTTP_ADDR=https://{http_addr}");
        println!("export CONSUL_CACERT={}", show(&ca));
        println!("export CONSUL_CLIENT_CERT={}", show(&cert));
        println!("export CONSUL_CLIENT_KEY={}", show(&key));
        println!("export CONSUL_TLS_SERVER_NAME={}", m.server_name);
        Ok(())
    }
}
