//! `AgentSim::builder()...start().await -> Listening`: binds the agent (and optionally a separate
//! control port), starts the background work (fault transitions, root pruning, health checks),
//! and hands back the addresses and the control handle.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::http;
use crate::model::acl::{AclConfig, DefaultPolicy};
use crate::state::agent_tls::{AgentTls, AgentTlsConfig};
use crate::state::blocking::BlockingConfig;
use crate::state::config::{IntentionDefault, SimConfig};
use crate::state::control::Control;
use crate::state::error::SimError;
use crate::state::faults::Faults;
use crate::state::listener as server;
use crate::state::request_log::RequestLog;
use crate::state::store::Store;

/// Entry point of the library.
#[derive(Debug)]
pub struct AgentSim;

impl AgentSim {
    /// A builder with Consul's defaults, listening on `127.0.0.1:0`.
    pub fn builder() -> Builder {
        Builder {
            cfg: SimConfig {
                bind: SocketAddr::from(([127, 0, 0, 1], 0)),
                ..SimConfig::default()
            },
        }
    }
}

/// Configures a simulated agent.
#[derive(Debug, Clone)]
#[must_use]
pub struct Builder {
    cfg: SimConfig,
}

impl Builder {
    /// Replaces the whole configuration.
    pub fn config(mut self, cfg: SimConfig) -> Self {
        self.cfg = cfg;
        self
    }

    /// Listen address (port 0 picks one).
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.cfg.bind = addr;
        self
    }

    /// Also serve the control API on its own port (reachable while the agent is down).
    pub fn control_bind(mut self, addr: SocketAddr) -> Self {
        self.cfg.control_bind = Some(addr);
        self
    }

    /// Also serve Consul's gRPC xDS (delta ADS) for Envoy on this address (port 0 picks one).
    pub fn grpc_bind(mut self, addr: SocketAddr) -> Self {
        self.cfg.grpc_bind = Some(addr);
        self
    }

    /// Inline certificates or SDS secrets in the xDS resources.
    pub fn xds_tls_mode(mut self, mode: crate::xds::TlsMode) -> Self {
        self.cfg.xds.tls_mode = mode;
        self
    }

    /// Not Consul's rendering, for benchmarks: xDS TLS contexts with session resumption off
    /// (see [`crate::xds::XdsConfig::no_tls_resumption`]).
    pub fn xds_no_tls_resumption(mut self, on: bool) -> Self {
        self.cfg.xds.no_tls_resumption = on;
        self
    }

    /// Not Consul's rendering, for benchmarks: `tls_params.ecdh_curves` of every xDS TLS
    /// context (see [`crate::xds::XdsConfig::tls_ecdh_curves`]).
    pub fn xds_tls_ecdh_curves<S: Into<String>>(
        mut self,
        curves: impl IntoIterator<Item = S>,
    ) -> Self {
        self.cfg.xds.tls_ecdh_curves = curves.into_iter().map(Into::into).collect();
        self
    }

    /// Datacenter name.
    pub fn datacenter(mut self, dc: impl Into<String>) -> Self {
        self.cfg.datacenter = dc.into();
        self
    }

    /// Cluster ID (trust domain `<id>.consul`).
    pub fn cluster_id(mut self, id: impl Into<String>) -> Self {
        self.cfg.cluster_id = Some(id.into());
        self
    }

    /// ACL settings.
    pub fn acl(mut self, acl: AclConfig) -> Self {
        self.cfg.acl = acl;
        self
    }

    /// ACLs on, with a management token and a default policy.
    pub fn acls(self, management_token: impl Into<String>, default_policy: DefaultPolicy) -> Self {
        self.acl(AclConfig {
            enabled: true,
            default_policy,
            management_token: Some(management_token.into()),
            default_token: None,
        })
    }

    /// `default_intention_policy`.
    pub fn default_intention_policy(mut self, p: IntentionDefault) -> Self {
        self.cfg.default_intention_policy = Some(p);
        self
    }

    /// Leaf certificate TTL.
    pub fn leaf_ttl(mut self, ttl: Duration) -> Self {
        self.cfg.leaf_ttl = ttl;
        self
    }

    /// The CA's key kind at bootstrap (roots and leaves).
    pub fn ca_key_kind(mut self, kind: crate::model::ca::KeyKind) -> Self {
        self.cfg.ca_key_kind = kind;
        self
    }

    /// Simulator-only chain mode: leaves signed by an intermediate in `IntermediateCerts`.
    pub fn ca_intermediate(mut self, on: bool) -> Self {
        self.cfg.ca_intermediate = on;
        self
    }

    /// Whether the CA's roots and intermediates carry the trust domain's SPIFFE URI SAN
    /// (default `true`); `false` issues them as some external providers do, without it (leaves
    /// still carry their SPIFFE ID).
    pub fn ca_spiffe_san(mut self, on: bool) -> Self {
        self.cfg.ca_spiffe_san = on;
        self
    }

    /// Serve HTTPS on the agent port and gRPC over TLS on the gRPC port, with a server
    /// certificate of the agent's own CA (not the Connect CA) for `server_name`, `localhost` and
    /// the loopback addresses; with `verify_incoming` the HTTPS port requires a client
    /// certificate of that CA. The material is in [`Control::agent_tls`].
    pub fn agent_tls(mut self, verify_incoming: bool, server_name: impl Into<String>) -> Self {
        self.cfg.agent_tls = Some(AgentTlsConfig {
            verify_incoming,
            server_name: server_name.into(),
        });
        self
    }

    /// Upper bound of the random delay before blocked leaf queries see a rotated leaf.
    pub fn ca_change_jitter(mut self, max: Duration) -> Self {
        self.cfg.ca_change_jitter = max;
        self
    }

    /// Blocking-query timing.
    pub fn blocking(mut self, b: BlockingConfig) -> Self {
        self.cfg.blocking = b;
        self
    }

    /// Seed for the sim's random choices.
    pub fn seed(mut self, seed: u64) -> Self {
        self.cfg.seed = Some(seed);
        self
    }

    /// Run (or not) TCP/TTL/alias health checks in the background.
    pub fn run_checks(mut self, on: bool) -> Self {
        self.cfg.run_checks = on;
        self
    }

    /// The router and control handle without any socket (for `tower::ServiceExt::oneshot` tests).
    /// Background work (pruning, checks, fault transitions) is not started.
    pub fn build(self) -> Result<(Router, Control), SimError> {
        let control = self.control()?;
        Ok((http::app::app(control.clone()), control))
    }

    fn control(&self) -> Result<Control, SimError> {
        let store = Store::new(self.cfg.clone())?;
        let mut control = Control::new(
            store,
            Faults::new(),
            Arc::new(RequestLog::new(self.cfg.request_log_capacity)),
        );
        if let Some(cfg) = &self.cfg.agent_tls {
            control.agent_tls = Some(Arc::new(AgentTls::new(cfg)?));
        }
        Ok(control)
    }

    /// Binds, starts serving and the background work.
    pub async fn start(self) -> Result<Listening, SimError> {
        let control = self.control()?;
        let bind =
            |addr: SocketAddr| server::bind(addr).map_err(|source| SimError::Bind { addr, source });
        let listener = bind(self.cfg.bind)?;
        let addr = listener.local_addr().map_err(|source| SimError::Bind {
            addr: self.cfg.bind,
            source,
        })?;
        let control_listener = self.cfg.control_bind.map(bind).transpose()?;
        let grpc_listener = self
            .cfg
            .grpc_bind
            .map(|addr| {
                crate::xds::bind_grpc(addr).map_err(|source| SimError::Bind { addr, source })
            })
            .transpose()?;
        let grpc_addr = grpc_listener.as_ref().and_then(|l| l.local_addr().ok());
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let http_tls = control
            .agent_tls()
            .map_or_else(crate::state::agent_tls::plain, AgentTls::http_rx);
        let mut tasks = vec![tokio::spawn(server::run(
            listener,
            http::app::app(control.clone()),
            control.faults.subscribe(),
            shutdown_rx.clone(),
            http_tls,
        ))];
        let mut control_addr = None;
        if let Some(l) = control_listener {
            control_addr = l.local_addr().ok();
            // The control port ignores faults: it must stay reachable while the agent is down.
            let (_never, no_faults) = watch::channel(Arc::default());
            tasks.push(tokio::spawn(server::run(
                l,
                http::app::control_app(control.clone()),
                no_faults,
                shutdown_rx.clone(),
                crate::state::agent_tls::plain(),
            )));
        }
        if let Some(port) = grpc_addr.map(|a| a.port()) {
            let _ = control.grpc_port.set(port);
        }
        if let Some(l) = grpc_listener {
            tasks.push(tokio::spawn(crate::xds::run_grpc(
                l,
                control.clone(),
                control.faults.subscribe(),
                shutdown_rx.clone(),
            )));
        }
        tasks.push(tokio::spawn(crate::state::background::fault_transitions(
            control.clone(),
            shutdown_rx.clone(),
        )));
        tasks.push(tokio::spawn(crate::state::background::maintenance(
            control.clone(),
            shutdown_rx,
        )));
        // Display values only (an absent listener is left out, not logged as `None`).
        tracing::info!(
            %addr,
            control_addr = control_addr.map(tracing::field::display),
            grpc_addr = grpc_addr.map(tracing::field::display),
            "agent-sim listening"
        );
        Ok(Listening {
            addr,
            control_addr,
            grpc_addr,
            control,
            shutdown: shutdown_tx,
            tasks,
        })
    }
}

/// A running simulated agent. Dropping it stops it.
#[derive(Debug)]
pub struct Listening {
    addr: SocketAddr,
    control_addr: Option<SocketAddr>,
    grpc_addr: Option<SocketAddr>,
    control: Control,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Listening {
    /// The agent's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `host:port`, as `CONSUL_HTTP_ADDR` takes it.
    pub fn http_addr(&self) -> String {
        self.addr.to_string()
    }

    /// `http://host:port`, or `https://host:port` when the agent serves TLS.
    pub fn url(&self) -> String {
        let scheme = if self.control.agent_tls().is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// The separate control port, if one was asked for.
    pub fn control_addr(&self) -> Option<SocketAddr> {
        self.control_addr
    }

    /// The gRPC (xDS) port, if one was asked for.
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.grpc_addr
    }

    /// The control handle.
    pub fn control(&self) -> &Control {
        &self.control
    }

    /// Stops serving and waits for the background work to end.
    pub async fn shutdown(mut self) {
        self.shutdown.send_replace(true);
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        for t in &self.tasks {
            t.abort();
        }
    }
}
