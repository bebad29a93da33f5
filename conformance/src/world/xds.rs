//! The xDS side of a world, for a proxy configured over gRPC (feature `xds`, Envoy): the sim's
//! gRPC address, Envoy's admin address and the bootstrap `consul connect envoy -bootstrap`
//! would print, written to `<scenario dir>/bootstrap.json`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use agent_sim::play;
use agent_sim::xds::bootstrap::{self, BootstrapParams};

use super::ports;
use crate::error::Error;
use crate::manifest::Xds;

/// Where an xDS proxy finds its agent, and its bootstrap.
#[derive(Debug, Clone)]
pub(crate) struct XdsWorld {
    /// The sim's gRPC (xDS) address.
    pub(crate) grpc_addr: SocketAddr,
    /// The bootstrap file.
    pub(crate) bootstrap: PathBuf,
    /// Envoy's admin listener.
    pub(crate) admin: SocketAddr,
}

/// The file name of the bootstrap in the scenario directory.
pub(crate) const BOOTSTRAP_FILE: &str = "bootstrap.json";

/// The bootstrap's parameters: the sidecar's ID, its destination service as the cluster, CE's
/// default namespace and partition, the sim's (default) datacenter, the proxy's token.
pub(crate) fn params(
    grpc_addr: SocketAddr,
    token: &str,
    admin: SocketAddr,
    agent_ca_pem: Option<&str>,
) -> BootstrapParams {
    BootstrapParams {
        proxy_id: play::PROXY_ID.to_owned(),
        cluster: play::SERVICE.to_owned(),
        namespace: "default".into(),
        partition: "default".into(),
        datacenter: agent_sim::config::SimConfig::default().datacenter,
        grpc_addr,
        token: Some(token.to_owned()),
        admin_bind: admin,
        agent_ca_pem: agent_ca_pem.map(str::to_owned),
    }
}

/// Picks the admin address (a free port when the manifest says port 0), renders the bootstrap
/// and writes it into `dir`.
pub(crate) fn prepare(
    cfg: &Xds,
    grpc_addr: Option<SocketAddr>,
    token: &str,
    dir: &Path,
    agent_ca_pem: Option<&str>,
) -> Result<XdsWorld, Error> {
    let grpc_addr = grpc_addr
        .ok_or_else(|| Error::Xds("the simulated agent serves no gRPC (xDS) port".into()))?;
    let mut admin = cfg.admin_bind;
    if admin.port() == 0 {
        admin.set_port(ports::free_port()?);
    }
    let json = bootstrap::render(&params(grpc_addr, token, admin, agent_ca_pem));
    if !json.is_object() {
        return Err(Error::Xds(format!(
            "the bootstrap renderer returned {json} instead of a JSON object"
        )));
    }
    let text = serde_json::to_string_pretty(&json)
        .map_err(|e| Error::Xds(format!("cannot serialize the bootstrap: {e}")))?;
    let bootstrap = dir.join(BOOTSTRAP_FILE);
    std::fs::write(&bootstrap, text + "\n")
        .map_err(|e| Error::io(format!("write {}", bootstrap.display()), e))?;
    Ok(XdsWorld {
        grpc_addr,
        bootstrap,
        admin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_name_the_sidecar_and_its_token() {
        let grpc: SocketAddr = "127.0.0.1:8502".parse().unwrap();
        let admin: SocketAddr = "127.0.0.1:19000".parse().unwrap();
        let p = params(grpc, "tok", admin, None);
        assert_eq!(p.proxy_id, "db-sidecar-proxy");
        assert_eq!(p.cluster, "db");
        assert_eq!(p.token.as_deref(), Some("tok"));
        assert_eq!((p.grpc_addr, p.admin_bind), (grpc, admin));
    }

    #[test]
    fn no_grpc_port_is_a_harness_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = prepare(&Xds::default(), None, "t", dir.path(), None).unwrap_err();
        assert_eq!(err.kind(), "xds_setup");
    }
}
