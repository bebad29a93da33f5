//! Shared fixtures for the end-to-end tests: an agent-sim with ACLs on, the `db` registration
//! and its sidecar, the proxy run in-process, an echo app, mTLS probe clients holding sim-issued
//! (or forged) leaves, and fake mTLS `cache` instances. The TLS code here is deliberately
//! independent of the proxy's own (plain rustls + x509-parser), so a shared mistake cannot hide.

mod tls;
mod upstream;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_sim::{AgentSim, Builder, Control, Listening};
use proxy_under_test::{AgentClient, Proxy, RunningProxy};
use rustls::crypto::CryptoProvider;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::time::Instant;

pub(crate) use self::tls::*;
pub(crate) use self::upstream::*;

/// The management token of every sim.
pub(crate) const ROOT_TOKEN: &str = "root-token";
/// Rules of a service identity for `db` (what `consul acl token create -service-identity db`
/// grants: write on db and its sidecar, read on every service and node, needed for upstream
/// discovery: health results are filtered by node:read).
pub(crate) const SERVICE_IDENTITY_RULES: &str = r#"
service "db" { policy = "write" }
service "db-sidecar-proxy" { policy = "write" }
service_prefix "" { policy = "read" }
node_prefix "" { policy = "read" }
"#;
/// The proxy's token rules in most tests: the service identity plus agent:read, so the proxy can
/// read `default_intention_policy` from `/v1/agent/self`.
pub(crate) const PROXY_RULES: &str = r#"
service "db" { policy = "write" }
service "db-sidecar-proxy" { policy = "write" }
service_prefix "" { policy = "read" }
node_prefix "" { policy = "read" }
agent_prefix "" { policy = "read" }
"#;
/// Generous bound for anything the tests wait for (busy 2-core machine).
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A sim with ACLs on (default deny), CA rotations visible at once, no background checks.
pub(crate) fn sim_builder() -> Builder {
    AgentSim::builder()
        .acls(ROOT_TOKEN, agent_sim::acl::DefaultPolicy::Deny)
        .ca_change_jitter(Duration::ZERO)
        .run_checks(false)
}

pub(crate) use super::ports::free_port;

/// Installs a test log writer (once per process); `RUST_LOG` selects, default `info`.
pub(crate) fn logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
}

/// A TCP echo application; returns its address and how many connections it accepted.
pub(crate) async fn echo_app() -> (SocketAddr, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    (addr, accepted)
}

/// Everything one test runs on: the sim, the proxy's token, the echo app and the `db`
/// sidecar's public port.
pub(crate) struct World {
    pub(crate) sim: Listening,
    pub(crate) token: String,
    pub(crate) app: SocketAddr,
    /// Connections the echo app accepted (a refused probe must not add one).
    pub(crate) app_conns: Arc<AtomicUsize>,
    pub(crate) public_port: u16,
}

impl World {
    /// A sim from `builder`, an echo app, a proxy token and `db` (+ `db-sidecar-proxy`)
    /// registered with `proxy` as the sidecar's `Proxy` block (ports filled in).
    pub(crate) async fn new(builder: Builder, proxy: Value) -> Self {
        let (app, app_conns) = echo_app().await;
        Self::with_app(builder, proxy, app, app_conns).await
    }

    /// As [`World::new`] with another application behind the proxy.
    pub(crate) async fn with_app(
        builder: Builder,
        proxy: Value,
        app: SocketAddr,
        app_conns: Arc<AtomicUsize>,
    ) -> Self {
        logs();
        let sim = builder.start().await.unwrap();
        let public_port = free_port();
        let token = sim
            .control()
            .create_token(PROXY_RULES, "db sidecar")
            .unwrap()
            .secret_id;
        let w = Self {
            sim,
            token,
            app,
            app_conns,
            public_port,
        };
        w.register_db(&proxy);
        w
    }

    /// A default world: `db` with `reauthorize_interval_ms` 200 and no upstreams.
    pub(crate) async fn basic() -> Self {
        Self::new(
            sim_builder(),
            json!({"Config": {"reauthorize_interval_ms": 200}}),
        )
        .await
    }

    pub(crate) fn c(&self) -> &Control {
        self.sim.control()
    }

    /// (Re-)registers `db` on 127.0.0.1 with its sidecar.
    pub(crate) fn register_db(&self, proxy: &Value) {
        self.c()
            .register(&json!({
                "Name": "db", "Address": "127.0.0.1", "Port": self.app.port(),
                "Connect": {"SidecarService": {"Port": self.public_port, "Proxy": proxy}}
            }))
            .unwrap();
    }

    pub(crate) fn client(&self) -> AgentClient {
        AgentClient::new(&self.sim.http_addr(), Some(self.token.clone())).unwrap()
    }

    /// A client holding a new token with `rules`; returns it with its secret.
    pub(crate) fn client_with(&self, rules: &str) -> (AgentClient, String) {
        let secret = self.c().create_token(rules, "other").unwrap().secret_id;
        let client = AgentClient::new(&self.sim.http_addr(), Some(secret.clone())).unwrap();
        (client, secret)
    }

    /// Starts the proxy for `db-sidecar-proxy` in-process and waits until it listens.
    pub(crate) async fn proxy(&self) -> RunningProxy {
        start(Proxy::new(self.client(), "db-sidecar-proxy")).await
    }

    /// The public listener, as the registration names it.
    pub(crate) fn public(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.public_port))
    }

    /// A probe holding a fresh leaf for `service`, trusting the current roots.
    pub(crate) fn probe(&self, service: &str) -> Probe {
        Probe::new(
            &self.c().issue_identity(service).unwrap(),
            &self.c().root_pems(),
        )
    }

    pub(crate) fn app_connections(&self) -> usize {
        self.app_conns.load(Ordering::SeqCst)
    }

    pub(crate) fn allow(&self, src: &str) {
        self.c()
            .put_intention(src, "db", &json!({"Action": "allow"}))
            .unwrap();
    }

    pub(crate) fn deny(&self, src: &str) {
        self.c()
            .put_intention(src, "db", &json!({"Action": "deny"}))
            .unwrap();
    }
}

/// `proxy.start()` with a deadline.
pub(crate) async fn start(proxy: Proxy) -> RunningProxy {
    tokio::time::timeout(PATIENCE, proxy.start())
        .await
        .expect("proxy ready in time")
        .unwrap_or_else(|e| panic!("proxy starts: {e}"))
}

/// Polls `f` every 25 ms until it yields true; panics with `what` after `limit`. Returns how
/// long it took.
pub(crate) async fn eventually<F, Fut>(what: &str, limit: Duration, mut f: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if f().await {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "{what}: not reached within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Asserts `f` holds on `n` consecutive checks 50 ms apart (a denial that must *stay* denied).
pub(crate) async fn stays<F, Fut>(what: &str, n: usize, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for i in 0..n {
        assert!(f().await, "{what}: failed on observation {i}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
