//! Shared fixtures for the end-to-end tests: an agent-sim with ACLs on, the `db` registration
//! and its sidecar, the proxy run in-process, an echo app, mTLS probe clients holding sim-issued
//! (or forged) leaves, and fake mTLS `cache` instances. The TLS code here is deliberately
//! independent of the proxy's own (plain rustls + x509-parser), so a shared mistake cannot hide.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_sim::ca::ClientIdentity;
use agent_sim::{AgentSim, Builder, Control, Listening};
use proxy_under_test::{AgentClient, Proxy, RunningProxy};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{Resumption, verify_server_cert_signed_by_trust_anchor};
use rustls::crypto::CryptoProvider;
use rustls::server::{ParsedCertificate, WebPkiClientVerifier};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_rustls::client::TlsStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

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

/// A port free right now on 127.0.0.1 (for registrations that must name one).
pub(crate) fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

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

// === certificates ===

pub(crate) fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

pub(crate) fn root_store(root_pems: &[String]) -> Arc<RootCertStore> {
    let mut store = RootCertStore::empty();
    for pem in root_pems {
        store.add_parsable_certificates(certs(pem));
    }
    Arc::new(store)
}

/// URI SANs of a DER certificate.
pub(crate) fn uris(der: &[u8]) -> Vec<String> {
    let (_, cert) = X509Certificate::from_der(der).unwrap();
    cert.subject_alternative_name()
        .unwrap()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|g| match g {
                    GeneralName::URI(u) => Some((*u).to_owned()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Serial number (colon hex) of a DER certificate.
pub(crate) fn serial(der: &[u8]) -> String {
    X509Certificate::from_der(der)
        .unwrap()
        .1
        .raw_serial_as_string()
}

/// `notAfter` of a DER certificate, Unix seconds.
pub(crate) fn not_after(der: &[u8]) -> i64 {
    X509Certificate::from_der(der)
        .unwrap()
        .1
        .validity()
        .not_after
        .timestamp()
}

/// Whether `chain` (leaf first) verifies against `root_pems` now.
pub(crate) fn chains_to(chain: &[CertificateDer<'static>], root_pems: &[String]) -> bool {
    let Some((ee, rest)) = chain.split_first() else {
        return false;
    };
    let Ok(parsed) = ParsedCertificate::try_from(ee) else {
        return false;
    };
    verify_server_cert_signed_by_trust_anchor(
        &parsed,
        &root_store(root_pems),
        rest,
        UnixTime::now(),
        provider().signature_verification_algorithms.all,
    )
    .is_ok()
}

/// Verifies the server's chain against fixed roots and nothing else (SPIFFE leaves have no DNS
/// name); identities are read from the certificate afterwards.
#[derive(Debug)]
struct ChainOnly(Arc<RootCertStore>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let parsed = ParsedCertificate::try_from(end_entity)?;
        verify_server_cert_signed_by_trust_anchor(
            &parsed,
            &self.0,
            intermediates,
            now,
            provider().signature_verification_algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &provider().signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &provider().signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

// === probes ===

/// An mTLS client as a downstream (`web`, `api`, ...) or a forged one.
#[derive(Clone)]
pub(crate) struct Probe {
    pub(crate) config: Arc<ClientConfig>,
}

impl Probe {
    /// Presents `id` (chain + key), trusts `root_pems`, resumption off.
    pub(crate) fn new(id: &ClientIdentity, root_pems: &[String]) -> Self {
        let key = PrivateKeyDer::from_pem_slice(id.private_key_pem.as_bytes()).unwrap();
        let mut cfg = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(root_store(root_pems))))
            .with_client_auth_cert(certs(&id.cert_chain_pem), key)
            .unwrap();
        cfg.resumption = Resumption::disabled();
        Self {
            config: Arc::new(cfg),
        }
    }

    /// Presents no client certificate at all.
    pub(crate) fn anonymous(root_pems: &[String]) -> Self {
        let mut cfg = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(root_store(root_pems))))
            .with_no_client_auth();
        cfg.resumption = Resumption::disabled();
        Self {
            config: Arc::new(cfg),
        }
    }

    /// TCP + TLS handshake.
    pub(crate) async fn connect(&self, addr: SocketAddr) -> Result<TlsStream<TcpStream>, String> {
        let fut = async {
            let tcp = TcpStream::connect(addr)
                .await
                .map_err(|e| format!("connect: {e}"))?;
            let name = ServerName::try_from("db.default.dc1.internal.consul").unwrap();
            TlsConnector::from(self.config.clone())
                .connect(name, tcp)
                .await
                .map_err(|e| format!("handshake: {e}"))
        };
        tokio::time::timeout(Duration::from_secs(10), fut)
            .await
            .map_err(|_| "connect timed out".to_owned())?
    }

    /// One round trip through the proxy to the echo app. `Err` = refused somewhere.
    pub(crate) async fn echo(&self, addr: SocketAddr, msg: &[u8]) -> Result<(), String> {
        let mut s = self.connect(addr).await?;
        round_trip(&mut s, msg).await
    }

    /// Whether a fresh connection carries bytes both ways.
    pub(crate) async fn works(&self, addr: SocketAddr) -> bool {
        self.echo(addr, b"ping").await.is_ok()
    }

    /// The certificate chain the proxy serves (leaf first).
    pub(crate) async fn served_chain(&self, addr: SocketAddr) -> Vec<CertificateDer<'static>> {
        let s = self.connect(addr).await.unwrap();
        s.get_ref()
            .1
            .peer_certificates()
            .unwrap()
            .iter()
            .map(|c| c.clone().into_owned())
            .collect()
    }
}

/// Writes `msg` and expects the same bytes back within 5 s.
pub(crate) async fn round_trip<S>(s: &mut S, msg: &[u8]) -> Result<(), String>
where
    S: AsyncReadExt + AsyncWriteExt + Unpin,
{
    let fut = async {
        s.write_all(msg).await.map_err(|e| format!("write: {e}"))?;
        let mut buf = vec![0u8; msg.len()];
        s.read_exact(&mut buf)
            .await
            .map_err(|e| format!("read: {e}"))?;
        if buf == msg {
            Ok(())
        } else {
            Err(format!("echo mismatch: {buf:?}"))
        }
    };
    tokio::time::timeout(Duration::from_secs(5), fut)
        .await
        .map_err(|_| "round trip timed out".to_owned())?
}

/// Waits until the peer closes `s` (EOF or error); `false` if it stays open for `limit`.
pub(crate) async fn closed_within<S: AsyncReadExt + Unpin>(s: &mut S, limit: Duration) -> bool {
    let mut buf = [0u8; 64];
    tokio::time::timeout(limit, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

// === fake upstream instances ===

/// An mTLS `cache` instance: serves `identity`, requires a client certificate chaining to the
/// sim's roots, records each client's URI SAN, and answers every line with `<name> <line>`.
pub(crate) struct FakeUpstream {
    pub(crate) name: String,
    pub(crate) addr: SocketAddr,
    pub(crate) clients: Arc<Mutex<Vec<String>>>,
}

impl FakeUpstream {
    pub(crate) async fn start(name: &str, identity: &ClientIdentity, root_pems: &[String]) -> Self {
        let verifier =
            WebPkiClientVerifier::builder_with_provider(root_store(root_pems), provider())
                .build()
                .unwrap();
        let key = PrivateKeyDer::from_pem_slice(identity.private_key_pem.as_bytes()).unwrap();
        let cfg = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs(&identity.cert_chain_pem), key)
            .unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(cfg));
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let clients = Arc::new(Mutex::new(Vec::new()));
        let (seen, me) = (clients.clone(), name.to_owned());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = l.accept().await {
                let (acceptor, seen, me) = (acceptor.clone(), seen.clone(), me.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let uri = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .and_then(|c| uris(c).into_iter().next())
                        .unwrap_or_default();
                    seen.lock().unwrap().push(uri);
                    let (r, mut w) = tokio::io::split(tls);
                    let mut lines = BufReader::new(r).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        if w.write_all(format!("{me} {line}\n").as_bytes())
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        Self {
            name: name.to_owned(),
            addr,
            clients,
        }
    }

    /// Registers this instance in the catalog on node `node` as a connect-proxy for `service`,
    /// with a passing check `<id>-alive`.
    pub(crate) fn register(&self, c: &Control, node: &str, service: &str) {
        c.catalog_register(&json!({
            "Node": node, "Address": "127.0.0.1",
            "Service": {"Kind": "connect-proxy", "ID": self.name, "Service": format!("{service}-sidecar-proxy"),
                "Port": self.addr.port(), "Proxy": {"DestinationServiceName": service}},
            "Check": {"CheckID": format!("{}-alive", self.name), "Name": "alive", "Status": "passing",
                "ServiceID": self.name}
        }))
        .unwrap();
    }

    pub(crate) fn client_uris(&self) -> Vec<String> {
        self.clients.lock().unwrap().clone()
    }
}

/// Sends a line through a local upstream listener; returns the answering instance's name.
pub(crate) async fn via_upstream(addr: SocketAddr) -> Result<String, String> {
    let fut = async {
        let mut s = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        s.write_all(b"hello\n")
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut line = String::new();
        BufReader::new(&mut s)
            .read_line(&mut line)
            .await
            .map_err(|e| format!("read: {e}"))?;
        match line.trim_end().strip_suffix(" hello") {
            Some(name) => Ok(name.to_owned()),
            None => Err(format!("unexpected answer {line:?}")),
        }
    };
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .map_err(|_| "upstream round trip timed out".to_owned())?
}
