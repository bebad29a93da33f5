//! HTTP/2 fixtures: data planes for an HTTP/2 `db`, an h2c application (echo with trailers, resets, a held stream that reports
//! how its request body ended) and HTTP/2 clients (over mTLS with ALPN, or h2c).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming};
use hyper::client::conn::http2::SendRequest;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::ClientConfig;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use super::TestCa;
use crate::authz::{DefaultPolicy, HttpMatch, Intention, IntentionSet, Permission};
use crate::dataplane::{DataPlane, RunningDataPlane};
use crate::knobs::{Knobs, Protocol};
use crate::metrics::Metrics;
use crate::snapshot::Snapshot;

/// A request or response body fed from a channel: data chunks, or an error (which makes hyper
/// reset the stream).
pub(crate) struct ChanBody(mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl hyper::body::Body for ChanBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.0.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data)))
    }
}

/// A streaming body and its feeding end.
pub(crate) fn chan_body() -> (mpsc::Sender<Result<Bytes, std::io::Error>>, ChanBody) {
    let (tx, rx) = mpsc::channel(16);
    (tx, ChanBody(rx))
}

/// A complete body of `data`, in 64 KiB chunks.
pub(crate) fn body_of(data: &[u8]) -> ChanBody {
    let chunks: Vec<Bytes> = data.chunks(64 * 1024).map(Bytes::copy_from_slice).collect();
    let (tx, rx) = mpsc::channel(chunks.len().max(1));
    for c in chunks {
        tx.try_send(Ok(c)).unwrap();
    }
    ChanBody(rx)
}

type AppBody = BoxBody<Bytes, std::io::Error>;

/// The h2c application: `/reset` resets the stream; `/hold` answers headers at once and keeps
/// the response open, reporting on `events` how the request body ended (`end` or `reset`);
/// anything else echoes the request body with headers `x-seen-version`, `x-seen-path`,
/// `x-seen-md` (the `x-md` metadata), `x-seen-xfcc`, and trailers `grpc-status: 0`,
/// `x-custom-trailer: kept`.
pub(crate) async fn h2_app() -> (SocketAddr, mpsc::UnboundedReceiver<&'static str>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (events_tx, events) = mpsc::unbounded_channel();
    let events_tx = Arc::new(events_tx);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            let events_tx = events_tx.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| answer(req, events_tx.clone()));
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    (addr, events)
}

async fn answer(
    req: Request<Incoming>,
    events: Arc<mpsc::UnboundedSender<&'static str>>,
) -> Result<Response<AppBody>, std::io::Error> {
    let path = req.uri().path().to_owned();
    if path == "/reset" {
        return Err(std::io::Error::other("the app resets this stream"));
    }
    if path == "/hold" {
        let (tx, body) = chan_body();
        tokio::spawn(async move {
            let mut body = req.into_body();
            let how = loop {
                match body.frame().await {
                    None => break "end",
                    Some(Err(_)) => break "reset",
                    Some(Ok(_)) => {}
                }
            };
            let _ = events.send(how);
            drop(tx);
        });
        return Ok(Response::new(body.boxed()));
    }
    let seen = |name: &str| {
        req.headers()
            .get(name)
            .cloned()
            .unwrap_or(HeaderValue::from_static(""))
    };
    let resp = Response::builder()
        .header("content-type", "application/grpc")
        .header("x-seen-version", format!("{:?}", req.version()))
        .header("x-seen-path", path.as_str())
        .header("x-seen-md", seen("x-md"))
        .header("x-seen-xfcc", seen("x-forwarded-client-cert"));
    let data = req
        .into_body()
        .collect()
        .await
        .map_err(std::io::Error::other)?
        .to_bytes();
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    trailers.insert("x-custom-trailer", HeaderValue::from_static("kept"));
    let body = Full::new(data)
        .map_err(|never| match never {})
        .with_trailers(async move { Some(Ok(trailers)) })
        .boxed();
    Ok(resp.body(body).unwrap())
}

/// An HTTP/2 client over mTLS to `addr` offering `alpn`; also returns the negotiated protocol.
pub(crate) async fn h2_tls_client(
    addr: SocketAddr,
    cfg: Arc<ClientConfig>,
) -> (SendRequest<ChanBody>, Option<Vec<u8>>) {
    let mut cfg = (*cfg).clone();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let tls = super::connect(addr, Arc::new(cfg)).await.unwrap();
    let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    (handshake(tls).await, alpn)
}

/// An h2c (prior knowledge) client to `addr`.
pub(crate) async fn h2c_client(addr: SocketAddr) -> SendRequest<ChanBody> {
    handshake(TcpStream::connect(addr).await.unwrap()).await
}

async fn handshake<S>(io: S) -> SendRequest<ChanBody>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(io))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

/// What a finished stream answered.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) trailers: Option<HeaderMap>,
}

impl Answer {
    /// A header or trailer value as text ("" when absent).
    pub(crate) fn get(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .or_else(|| self.trailers.as_ref().and_then(|t| t.get(name)))
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

/// A POST of `body` to `path` (as a gRPC call when `grpc`), with metadata `x-md: md`, read to
/// the end. `Err` is the stream's error text (e.g. a reset).
pub(crate) async fn call(
    sender: &mut SendRequest<ChanBody>,
    path: &str,
    grpc: bool,
    body: ChanBody,
) -> Result<Answer, String> {
    let mut req = Request::post(format!("https://db{path}")).header("x-md", "md-value");
    if grpc {
        req = req
            .header("content-type", "application/grpc")
            .header("te", "trailers");
    }
    let req = req.body(body).unwrap();
    let fut = async {
        sender.ready().await.map_err(|e| format!("{e:?}"))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| format!("{e:?}"))?;
        let (parts, body) = resp.into_parts();
        let collected = body.collect().await.map_err(|e| format!("{e:?}"))?;
        let trailers = collected.trailers().cloned();
        Ok(Answer {
            status: parts.status,
            headers: parts.headers,
            body: collected.to_bytes(),
            trailers,
        })
    };
    tokio::time::timeout(Duration::from_secs(60), fut)
        .await
        .map_err(|_| "timed out".to_owned())?
}

/// One permission allowing exactly the gRPC method (path) `method`.
pub(crate) fn grpc_method_only(method: &str) -> Vec<Permission> {
    vec![Permission {
        action: "allow".into(),
        http: Some(HttpMatch {
            path_exact: Some(method.into()),
            ..HttpMatch::default()
        }),
        jwt: None,
    }]
}

/// A data plane for `db` (protocol `protocol`) in front of `app`.
pub(crate) async fn start(
    metrics: &Arc<Metrics>,
    ca: &TestCa,
    app: SocketAddr,
    protocol: Protocol,
    intentions: Vec<Intention>,
) -> (watch::Sender<Option<Arc<Snapshot>>>, RunningDataPlane) {
    start_snap(metrics, db_snapshot(ca, app, protocol, intentions)).await
}

/// A snapshot for `db` (protocol `protocol`, default deny) in front of `app`.
pub(crate) fn db_snapshot(
    ca: &TestCa,
    app: SocketAddr,
    protocol: Protocol,
    intentions: Vec<Intention>,
) -> Snapshot {
    let knobs = Knobs {
        protocol,
        ..Knobs::default()
    };
    super::snapshot(ca, app, intentions, DefaultPolicy::DENY, knobs, vec![])
}

/// Starts a data plane on `snap`, recording into `metrics`.
pub(crate) async fn start_snap(
    metrics: &Arc<Metrics>,
    snap: Snapshot,
) -> (watch::Sender<Option<Arc<Snapshot>>>, RunningDataPlane) {
    let (tx, rx) = watch::channel(Some(Arc::new(snap)));
    let dp = DataPlane::new(rx)
        .with_metrics(metrics.clone())
        .start()
        .await
        .unwrap();
    (tx, dp)
}

/// Allowed decisions so far in `m`.
pub(crate) fn allowed_count(m: &Metrics) -> u64 {
    let text = m.render();
    text.lines()
        .find_map(|l| l.strip_prefix("proxy_authorization_decisions_total{decision=\"allow\"} "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

pub(crate) fn set_intentions(
    tx: &watch::Sender<Option<Arc<Snapshot>>>,
    intentions: Vec<Intention>,
) {
    tx.send_modify(|cur| {
        let mut next = (**cur.as_ref().unwrap()).clone();
        let set = IntentionSet::new("db", intentions).with_hooks(next.hooks.authz());
        next.intentions = Arc::new(set);
        *cur = Some(Arc::new(next));
    });
}
