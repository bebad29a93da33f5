//! The whole proxy in-process: read the registration (clear errors when it is missing or not a
//! connect-proxy), start the control plane, start the data plane on its first complete snapshot,
//! serve metrics if configured, and shut down gracefully.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::agent::blocking::Backoff;
use crate::agent::types::AgentService;
use crate::agent::{AgentClient, AgentError, ControlPlane, Timing};
use crate::dataplane::{DataPlane, DataPlaneError, RunningDataPlane, Workers};
use crate::metrics::{self, Metrics};

/// Errors that stop the proxy.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// `/v1/agent/service/<id>` said 404.
    #[error("no service registered with ID {id:?} on the agent ({source})")]
    MissingRegistration {
        /// The proxy ID.
        id: String,
        /// The agent's answer.
        source: AgentError,
    },
    /// The registration exists but is not `Kind: connect-proxy`.
    #[error("service {id:?} is not a connect-proxy (Kind {kind:?})")]
    NotConnectProxy {
        /// The proxy ID.
        id: String,
        /// The registered kind.
        kind: String,
    },
    /// The agent address or client setup is unusable.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// Listeners could not start (e.g. ports in use).
    #[error(transparent)]
    DataPlane(#[from] DataPlaneError),
    /// The metrics listener could not be bound.
    #[error("cannot bind the metrics listener on {addr}: {source}")]
    Metrics {
        /// `metrics_bind_addr`.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// Shutdown was requested before the proxy was ready.
    #[error("shut down before the proxy became ready")]
    Cancelled,
}

/// Builder for a proxy instance.
#[derive(Debug, Clone)]
pub struct Proxy {
    client: AgentClient,
    proxy_id: String,
    timing: Timing,
    metrics: Arc<Metrics>,
    original_dst: Option<fn(&tokio::net::TcpStream) -> std::io::Result<SocketAddr>>,
    workers: Option<Arc<Workers>>,
}

/// A started proxy.
#[derive(Debug)]
pub struct RunningProxy {
    control: ControlPlane,
    data: RunningDataPlane,
    metrics: Arc<Metrics>,
    metrics_addr: Option<SocketAddr>,
    metrics_task: Option<tokio::task::JoinHandle<()>>,
}

impl Proxy {
    /// A proxy for registration `proxy_id` on the agent behind `client`.
    pub fn new(client: AgentClient, proxy_id: impl Into<String>) -> Self {
        Self {
            client,
            proxy_id: proxy_id.into(),
            timing: Timing::default(),
            metrics: Metrics::new(),
            original_dst: None,
            workers: None,
        }
    }

    /// Runs accepted TCP connections on `workers` (see [`Workers`]); without them, on the
    /// runtime that starts the proxy.
    pub fn with_workers(mut self, workers: Arc<Workers>) -> Self {
        self.workers = Some(workers);
        self
    }

    /// Test seam: see [`DataPlane::with_original_dst`] (transparent mode without iptables).
    #[doc(hidden)]
    pub fn with_original_dst(
        mut self,
        lookup: fn(&tokio::net::TcpStream) -> std::io::Result<SocketAddr>,
    ) -> Self {
        self.original_dst = Some(lookup);
        self
    }

    /// Overrides watch timing (tests).
    pub fn timing(mut self, timing: Timing) -> Self {
        self.timing = timing;
        self
    }

    /// Records into `metrics`.
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Reads the registration, retrying on transport errors, failing on 404 or a wrong kind.
    async fn registration(&self) -> Result<(AgentService, String), ProxyError> {
        let mut backoff = Backoff::new(self.timing.backoff_base, self.timing.backoff_max);
        loop {
            match self
                .client
                .service(&self.proxy_id, None, self.timing.wait)
                .await
            {
                Ok((svc, hash)) => {
                    if svc.kind != "connect-proxy" || svc.proxy.is_none() {
                        return Err(ProxyError::NotConnectProxy {
                            id: self.proxy_id.clone(),
                            kind: svc.kind,
                        });
                    }
                    return Ok((svc, hash));
                }
                Err(e @ AgentError::Status { status: 404, .. }) => {
                    return Err(ProxyError::MissingRegistration {
                        id: self.proxy_id.clone(),
                        source: e,
                    });
                }
                Err(e) => {
                    self.metrics.watch_error("service");
                    let delay = backoff.failure();
                    tracing::warn!(error = %e, retry_in = ?delay, "cannot read the proxy registration yet");
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }

    /// Starts everything and returns once listeners are bound.
    pub async fn start(self) -> Result<RunningProxy, ProxyError> {
        let (svc, hash) = self.registration().await?;
        tracing::info!(id = %svc.id, destination = %svc.proxy.as_ref().map(|p| p.destination_service_name.as_str()).unwrap_or(""), "registration found");
        let control = ControlPlane::spawn(
            self.client.clone(),
            svc,
            hash,
            self.timing,
            self.metrics.clone(),
        );
        let mut data = DataPlane::new(control.snapshots()).with_metrics(self.metrics.clone());
        if let Some(lookup) = self.original_dst {
            data = data.with_original_dst(lookup);
        }
        if let Some(workers) = self.workers.clone() {
            data = data.with_workers(workers);
        }
        let data = data.start().await?;
        let bind = control
            .snapshots()
            .borrow()
            .as_ref()
            .and_then(|s| s.knobs.metrics_bind_addr);
        let (metrics_addr, metrics_task) = match bind {
            Some(addr) => {
                let l = metrics::bind(addr)
                    .await
                    .map_err(|source| ProxyError::Metrics { addr, source })?;
                let actual = l.local_addr().ok();
                tracing::info!(addr = ?actual, "metrics listener bound");
                (
                    actual,
                    Some(tokio::spawn(metrics::serve(l, self.metrics.clone()))),
                )
            }
            None => (None, None),
        };
        Ok(RunningProxy {
            control,
            data,
            metrics: self.metrics,
            metrics_addr,
            metrics_task,
        })
    }

    /// Runs until `shutdown` resolves, then drains (bounded by `drain_timeout_ms`).
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), ProxyError> {
        tokio::pin!(shutdown);
        let running = tokio::select! {
            r = self.start() => r?,
            _ = &mut shutdown => return Err(ProxyError::Cancelled),
        };
        shutdown.await;
        tracing::info!("shutting down: no new connections, draining");
        running.shutdown().await;
        Ok(())
    }
}

impl RunningProxy {
    /// The inbound public listener.
    pub fn inbound_addr(&self) -> SocketAddr {
        self.data.inbound_addr()
    }

    /// The transparent outbound listener (IPv4), in transparent mode.
    pub fn transparent_addr(&self) -> Option<SocketAddr> {
        self.data.transparent_addr()
    }

    /// The local listener of upstream `name`.
    pub fn upstream_addr(&self, name: &str) -> Option<SocketAddr> {
        self.data.upstream_addr(name)
    }

    /// The socket path of upstream `name`'s unix-socket listener.
    pub fn upstream_socket(&self, name: &str) -> Option<std::path::PathBuf> {
        self.data.upstream_socket(name)
    }

    /// The metrics listener, when `metrics_bind_addr` is set.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The snapshot channel (for observing the proxy's view).
    pub fn snapshots(&self) -> crate::dataplane::SnapshotRx {
        self.control.snapshots()
    }

    /// Stops accepting, drains for `drain_timeout_ms`, closes the rest, stops the watches.
    pub async fn shutdown(self) {
        let drain = self
            .control
            .snapshots()
            .borrow()
            .as_ref()
            .map_or(Duration::from_secs(5), |s| s.knobs.drain_timeout);
        self.data.shutdown(drain).await;
        if let Some(t) = self.metrics_task {
            t.abort();
        }
        drop(self.control);
    }
}
