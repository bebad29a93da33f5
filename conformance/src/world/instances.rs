//! Harness-run upstream instances: mTLS servers presenting a sim-issued leaf for their identity
//! (an impostor presents another service's), requiring a client certificate chained to the
//! sim's current roots. Per connection an instance reads one line (the probe's token), records
//! which identity the client (the proxy) presented, and answers with its instance id; an
//! `http`/`http2`/`grpc` instance instead serves HTTP/1.1 and HTTP/2 (ALPN `h2` or `http/1.1`,
//! or detected without ALPN), records each stream's `x-conformance-token`, and logs and answers
//! every request as `instances/http.rs` says (its `Answer` can be changed live). An instance
//! told to `refuse` closes every connection before TLS; a `blackhole` one never accepts and keeps
//! its listen backlog full, so connects to it stay pending.

mod http;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use agent_sim::Control;
use agent_sim::ca::ClientIdentity;
use parking_lot::Mutex;
use scenarios::{Answer, InstanceSpec};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use self::http::HttpInstance;
pub(crate) use self::http::{Log, REQUEST_HEADER, SERVED_BY};
use super::apps::h2;
use crate::error::Error;
use crate::grpc;
use crate::netns::{NODE_IP, Node};
use crate::tls;

/// How long an instance waits for a handshake or a token line.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// One token an instance received, and who sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) token: String,
    /// The first URI SAN of the client certificate.
    pub(crate) presented: Option<String>,
}

/// A running instance; stops when dropped.
#[derive(Debug)]
pub(crate) struct Instance {
    pub(crate) id: String,
    pub(crate) addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    failures: Arc<Mutex<Vec<String>>>,
    /// How an HTTP instance answers now.
    answer: Arc<Mutex<Answer>>,
    task: JoinHandle<()>,
    /// A blackhole's own connections that fill its listen backlog (kept open).
    _backlog: Vec<TcpStream>,
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Instance {
    /// Who sent `token`, if this instance received it.
    pub(crate) fn seen(&self, token: &str) -> Option<Seen> {
        self.seen.lock().iter().find(|s| s.token == token).cloned()
    }

    /// From now on, answer as `a` says.
    pub(crate) fn set_answer(&self, a: &Answer) {
        *self.answer.lock() = a.clone();
    }

    /// Handshakes or reads that failed (newest last).
    pub(crate) fn failures(&self) -> Vec<String> {
        self.failures.lock().clone()
    }
}

/// Every instance of a scenario, by id.
#[derive(Debug, Default)]
pub(crate) struct Instances(BTreeMap<String, Instance>, Arc<Log>);

impl Instances {
    pub(crate) fn insert(&mut self, i: Instance) {
        self.0.insert(i.id.clone(), i);
    }

    /// The request log all HTTP instances share.
    pub(crate) fn log(&self) -> &Arc<Log> {
        &self.1
    }

    pub(crate) fn get(&self, id: &str) -> Option<&Instance> {
        self.0.get(id)
    }

    /// The instance that received `token`, with what it saw.
    pub(crate) fn who_saw(&self, token: &str) -> Option<(&Instance, Seen)> {
        self.0.values().find_map(|i| i.seen(token).map(|s| (i, s)))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Instance> {
        self.0.values()
    }
}

/// Starts an instance for `spec` on `127.0.0.1:0` (`[::1]:0` with `ipv6`), or (transparent
/// mode) on the node side of the pod's link.
pub(crate) async fn start(
    spec: &InstanceSpec,
    control: &Control,
    node: Option<&Node>,
    ipv6: bool,
    log: &Arc<Log>,
) -> Result<Instance, Error> {
    let identity = spec.identity.as_deref().unwrap_or(&spec.service);
    let leaf = control.issue_identity(identity)?;
    let bound = match node {
        Some(n) => n.listen(SocketAddr::from((NODE_IP, 0))),
        None if spec.answer.blackhole => blackhole_listener(),
        None if ipv6 => TcpListener::bind("[::1]:0").await,
        None => TcpListener::bind("127.0.0.1:0").await,
    };
    let listener = bound.map_err(|e| Error::io(format!("bind instance {}", spec.id), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("read the instance address", e))?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let answer = Arc::new(Mutex::new(spec.answer.clone()));
    let http = matches!(spec.protocol.as_deref(), Some("http" | "http2" | "grpc"));
    if spec.answer.blackhole {
        let backlog = fill_backlog(addr).await;
        return Ok(Instance {
            id: spec.id.clone(),
            addr,
            seen,
            failures,
            answer,
            task: tokio::spawn(async move {
                let _listener = listener;
                std::future::pending::<()>().await;
            }),
            _backlog: backlog,
        });
    }
    let server = HttpInstance {
        server: Arc::new(h2::Server {
            served_by: spec.id.clone(),
            client: None,
        }),
        answer: answer.clone(),
        log: log.clone(),
    };
    let task = tokio::spawn(serve(
        listener,
        control.clone(),
        leaf,
        (server, http),
        (spec.tls_version.clone(), spec.cipher_suites.clone()),
        seen.clone(),
        failures.clone(),
    ));
    Ok(Instance {
        id: spec.id.clone(),
        addr,
        seen,
        failures,
        answer,
        task,
        _backlog: Vec::new(),
    })
}

/// A listener with the smallest backlog the kernel allows; never accepted from.
fn blackhole_listener() -> std::io::Result<TcpListener> {
    let s = tokio::net::TcpSocket::new_v4()?;
    s.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    s.listen(0)
}

/// Connects to `addr` until a connect stays pending: the backlog is then full and the kernel
/// drops further SYNs.
async fn fill_backlog(addr: SocketAddr) -> Vec<TcpStream> {
    let mut held = Vec::new();
    for _ in 0..8 {
        match tokio::time::timeout(Duration::from_millis(300), TcpStream::connect(addr)).await {
            Ok(Ok(s)) => held.push(s),
            _ => break,
        }
    }
    held
}

async fn serve(
    listener: TcpListener,
    control: Control,
    leaf: ClientIdentity,
    (server, http): (HttpInstance, bool),
    (tls_version, tls12_suites): (Option<String>, Vec<String>),
    seen: Arc<Mutex<Vec<Seen>>>,
    failures: Arc<Mutex<Vec<String>>>,
) {
    let mut conns = tokio::task::JoinSet::new();
    let http2 = http;
    while let Ok((stream, _)) = listener.accept().await {
        if server.answer.lock().refuse {
            drop(stream);
            continue;
        }
        // Roots can rotate: build the verifier from the current ones for every connection.
        let roots = agent_sim::play::roots(&control).pems;
        let cfg = match tls::server_config(&leaf, &roots, tls_version.as_deref(), &tls12_suites) {
            Ok(c) if http2 => {
                let mut c = (*c).clone();
                c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
                Arc::new(c)
            }
            Ok(c) => c,
            Err(e) => {
                failures.lock().push(e.to_string());
                continue;
            }
        };
        let (server, seen, failures) = (server.clone(), seen.clone(), failures.clone());
        conns.spawn(async move {
            let r = if http2 {
                handle_h2(stream, cfg, server, seen).await
            } else {
                handle(stream, cfg, &server.server.served_by, &seen).await
            };
            if let Err(e) = r {
                failures.lock().push(e);
            }
        });
        while conns.try_join_next().is_some() {}
    }
}

async fn handle(
    stream: TcpStream,
    cfg: Arc<rustls::ServerConfig>,
    id: &str,
    seen: &Mutex<Vec<Seen>>,
) -> Result<(), String> {
    let tls = tokio::time::timeout(IO_TIMEOUT, TlsAcceptor::from(cfg).accept(stream))
        .await
        .map_err(|_| "handshake timed out".to_owned())?
        .map_err(|e| format!("handshake failed: {e}"))?;
    let presented = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .and_then(|c| tls::uri_sans(c).into_iter().next());
    let mut reader = BufReader::new(tls);
    let mut line = String::new();
    tokio::time::timeout(IO_TIMEOUT, reader.read_line(&mut line))
        .await
        .map_err(|_| "no token line".to_owned())?
        .map_err(|e| format!("read failed: {e}"))?;
    let token = line.trim().to_owned();
    if token.is_empty() {
        return Err("connection closed without a token".into());
    }
    seen.lock().push(Seen { token, presented });
    let mut tls = reader.into_inner();
    tls.write_all(format!("{id}\n").as_bytes())
        .await
        .map_err(|e| format!("write failed: {e}"))?;
    let _ = tls.shutdown().await;
    Ok(())
}

/// An HTTP connection (HTTP/1.1 or HTTP/2): every request answered, its token recorded with
/// the client identity.
async fn handle_h2(
    stream: TcpStream,
    cfg: Arc<rustls::ServerConfig>,
    mut server: HttpInstance,
    seen: Arc<Mutex<Vec<Seen>>>,
) -> Result<(), String> {
    use hyper_util::rt::{TokioExecutor, TokioIo};

    let tls = tokio::time::timeout(IO_TIMEOUT, TlsAcceptor::from(cfg).accept(stream))
        .await
        .map_err(|_| "handshake timed out".to_owned())?
        .map_err(|e| format!("handshake failed: {e}"))?;
    let presented = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .and_then(|c| tls::uri_sans(c).into_iter().next());
    server.server = Arc::new(h2::Server {
        served_by: server.server.served_by.clone(),
        client: presented
            .as_deref()
            .and_then(tls::spiffe_service)
            .map(|(_, s)| s),
    });
    let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        if let Some(token) = req
            .headers()
            .get(grpc::TOKEN_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            seen.lock().push(Seen {
                token: token.to_owned(),
                presented: presented.clone(),
            });
        }
        let server = server.clone();
        async move { server.handle(req).await }
    });
    hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(tls), svc)
        .await
        .map_err(|e| format!("HTTP/2 connection failed: {e}"))
}
