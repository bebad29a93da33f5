//! agent-sim as a container dependency of other tests (cargo feature `testcontainers`): a
//! testcontainers [`Image`] for the `agent-sim` image (`agent-sim/Dockerfile`, built by
//! `scripts/build-images.sh`). The container shares the host's network (no bridge), so the
//! HTTP and gRPC ports are flags: free loopback ports are picked when the image is made, and the
//! sim listens on them on 127.0.0.1, which inside the container is the host's loopback.
//! Readiness is the last line the binary prints once listening and preloaded.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use agent_sim::container::AgentSimImage;
//! let sim = AgentSimImage::new()?.with_acl("root-token").start().await?;
//! let url = format!("http://{}/v1/agent/self", sim.http_addr());
//! # drop(url);
//! # Ok(())
//! # }
//! ```

use std::borrow::Cow;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;

use testcontainers::core::{AccessMode, Mount, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, Image, ImageExt, TestcontainersError};

/// The image's default name (as `scripts/build-images.sh` tags it).
pub const IMAGE_NAME: &str = "agent-sim";
/// The image's default tag.
pub const IMAGE_TAG: &str = "latest";
/// What the binary prints last once it serves (after any preload).
pub const READY_LINE: &str = "export CONSUL_HTTP_ADDR=";
/// Where the preload file is mounted inside the container.
pub const PRELOAD_PATH: &str = "/etc/agent-sim/preload";

/// Errors picking ports or starting the container.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    /// No free loopback port could be reserved.
    #[error("cannot pick a free port: {0}")]
    Port(#[source] std::io::Error),
    /// The preload path is not valid UTF-8 (Docker mounts take strings).
    #[error("preload path {0:?} is not valid UTF-8")]
    PreloadPath(std::path::PathBuf),
    /// testcontainers could not start the container (no daemon, no image, not ready in time).
    #[error("cannot start the agent-sim container: {0}")]
    Start(#[from] TestcontainersError),
}

impl ContainerError {
    /// A stable machine name.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Port(_) => "port_unavailable",
            Self::PreloadPath(_) => "preload_path_invalid",
            Self::Start(_) => "container_start_failed",
        }
    }
}

/// The agent-sim image with its flags.
#[derive(Debug, Clone)]
pub struct AgentSimImage {
    name: String,
    tag: String,
    http_port: u16,
    grpc_port: Option<u16>,
    acl_token: Option<String>,
    preload: Option<Mount>,
    args: Vec<String>,
    ready: String,
}

/// A reserved-then-released loopback port (another process could take it before the sim binds
/// it; with host networking there is no port mapping to do this atomically).
fn free_port() -> Result<u16, ContainerError> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(ContainerError::Port)?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(ContainerError::Port)
}

impl AgentSimImage {
    /// `agent-sim:latest` with free HTTP and gRPC ports, no ACLs, no preload.
    pub fn new() -> Result<Self, ContainerError> {
        Ok(Self {
            name: IMAGE_NAME.into(),
            tag: IMAGE_TAG.into(),
            http_port: free_port()?,
            grpc_port: Some(free_port()?),
            acl_token: None,
            preload: None,
            args: Vec::new(),
            ready: READY_LINE.into(),
        })
    }

    /// Another image name and tag (e.g. a registry copy).
    pub fn with_image(mut self, name: impl Into<String>, tag: impl Into<String>) -> Self {
        self.name = name.into();
        self.tag = tag.into();
        self
    }

    /// Serve the HTTP API on this port instead of the picked one.
    pub fn with_http_port(mut self, port: u16) -> Self {
        self.http_port = port;
        self
    }

    /// Serve gRPC (xDS) on this port; `None`: no gRPC port (`--grpc-listen off`).
    pub fn with_grpc_port(mut self, port: Option<u16>) -> Self {
        self.grpc_port = port;
        self
    }

    /// Enable ACLs (default policy deny) with this management token.
    pub fn with_acl(mut self, management_token: impl Into<String>) -> Self {
        self.acl_token = Some(management_token.into());
        self
    }

    /// Load this preload file (JSON or HCL; services, config entries, tokens), mounted
    /// read-only. It must be readable by the image's user (65532).
    pub fn with_preload(mut self, file: &Path) -> Result<Self, ContainerError> {
        let host = file
            .to_str()
            .ok_or_else(|| ContainerError::PreloadPath(file.to_path_buf()))?;
        self.preload =
            Some(Mount::bind_mount(host, PRELOAD_PATH).with_access_mode(AccessMode::ReadOnly));
        Ok(self)
    }

    /// Extra flags of the binary (`--datacenter dc2`, `--leaf-ttl 30s`, ...).
    pub fn with_args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The agent's HTTP address as clients on this host dial it.
    pub fn http_addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.http_port))
    }

    /// The gRPC (xDS) address, if served.
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.grpc_port
            .map(|p| SocketAddr::from((Ipv4Addr::LOCALHOST, p)))
    }

    /// The binary's flags for this configuration.
    pub fn flags(&self) -> Vec<String> {
        let mut f = vec![
            "--listen".to_owned(),
            format!("127.0.0.1:{}", self.http_port),
            "--grpc-listen".to_owned(),
            self.grpc_port
                .map_or_else(|| "off".to_owned(), |p| format!("127.0.0.1:{p}")),
        ];
        if let Some(t) = &self.acl_token {
            f.extend([
                "--acl".to_owned(),
                "--default-policy".to_owned(),
                "deny".to_owned(),
                "--management-token".to_owned(),
                t.clone(),
            ]);
        }
        if self.preload.is_some() {
            f.extend(["--preload".to_owned(), PRELOAD_PATH.to_owned()]);
        }
        f.extend(self.args.iter().cloned());
        f
    }

    /// Starts the container on the host's network and waits until it serves.
    pub async fn start(self) -> Result<AgentSimContainer, ContainerError> {
        let http_addr = self.http_addr();
        let grpc_addr = self.grpc_addr();
        let container = ImageExt::with_network(self, "host").start().await?;
        Ok(AgentSimContainer {
            container,
            http_addr,
            grpc_addr,
        })
    }
}

impl Image for AgentSimImage {
    fn name(&self) -> &str {
        &self.name
    }

    fn tag(&self) -> &str {
        &self.tag
    }

    fn ready_conditions(&self) -> Vec<WaitFor> {
        vec![WaitFor::message_on_stdout(&self.ready)]
    }

    fn mounts(&self) -> impl IntoIterator<Item = &Mount> {
        self.preload.iter()
    }

    fn cmd(&self) -> impl IntoIterator<Item = impl Into<Cow<'_, str>>> {
        self.flags()
    }
}

/// A started agent-sim container; removed when dropped.
#[derive(Debug)]
pub struct AgentSimContainer {
    container: ContainerAsync<AgentSimImage>,
    http_addr: SocketAddr,
    grpc_addr: Option<SocketAddr>,
}

impl AgentSimContainer {
    /// The HTTP API (`CONSUL_HTTP_ADDR`).
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    /// The gRPC (xDS) address, if served.
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.grpc_addr
    }

    /// The testcontainers handle (logs, stop, id).
    pub fn container(&self) -> &ContainerAsync<AgentSimImage> {
        &self.container
    }

    /// Stops and removes the container now (instead of on drop).
    pub async fn remove(self) -> Result<(), ContainerError> {
        self.container.rm().await.map_err(ContainerError::from)
    }
}

#[cfg(test)]
mod tests;
