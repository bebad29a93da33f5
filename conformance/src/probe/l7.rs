//! The app's side of `l7-traffic` checks: cleartext HTTP/1.1 (keep-alive) or HTTP/2 (prior
//! knowledge) connections to an upstream's local listener, and requests on them whose whole
//! answer is kept (status, headers, body, grpc-status, how long it took).

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use scenarios::AppProtocol;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::CONNECT_TIMEOUT;
use crate::grpc;
use crate::proxy::ListenAddr;

/// How long the app waits for one answer (longer than any delay a scenario gives an instance).
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// One request the app sends.
#[derive(Debug, Clone)]
pub(crate) struct L7Request {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    /// A unary gRPC call (framed body, `application/grpc`).
    pub(crate) grpc: bool,
}

/// One answer the app got.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    /// Header names (lowercase) to values.
    pub(crate) headers: BTreeMap<String, String>,
    /// From the trailers, or the headers of a trailers-only answer.
    pub(crate) grpc_status: Option<u32>,
    pub(crate) elapsed: Duration,
}

enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

/// A connection from the app to a local listener; closed when dropped.
pub(crate) struct L7Conn {
    sender: Sender,
    task: JoinHandle<()>,
}

impl Drop for L7Conn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl L7Conn {
    /// Connects as `protocol` says (`grpc` is HTTP/2).
    pub(crate) async fn open(to: &ListenAddr, protocol: AppProtocol) -> Result<Self, String> {
        let h2 = protocol != AppProtocol::Http1;
        let failed = |e: std::io::Error| format!("connect failed: {e}");
        match to {
            ListenAddr::Tcp(a) => {
                let s = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(*a))
                    .await
                    .map_err(|_| "connect timed out".to_owned())?
                    .map_err(failed)?;
                let _ = s.set_nodelay(true);
                handshake(s, h2).await
            }
            ListenAddr::Unix(p) => {
                let s = tokio::time::timeout(CONNECT_TIMEOUT, UnixStream::connect(p))
                    .await
                    .map_err(|_| "connect timed out".to_owned())?
                    .map_err(failed)?;
                handshake(s, h2).await
            }
        }
    }

    /// A second handle on an HTTP/2 connection (for concurrent streams).
    pub(crate) fn stream_handle(&self) -> Option<L7Stream> {
        match &self.sender {
            Sender::H2(s) => Some(L7Stream(s.clone())),
            Sender::H1(_) => None,
        }
    }

    /// Sends `req` and waits for the whole answer.
    pub(crate) async fn send(&mut self, req: &L7Request) -> Result<Reply, String> {
        let r = build(req)?;
        let started = Instant::now();
        let resp = match &mut self.sender {
            Sender::H1(s) => {
                s.ready()
                    .await
                    .map_err(|e| format!("connection unusable: {e}"))?;
                tokio::time::timeout(REQUEST_TIMEOUT, s.send_request(r)).await
            }
            Sender::H2(s) => tokio::time::timeout(REQUEST_TIMEOUT, s.send_request(r)).await,
        };
        finish(resp, started).await
    }
}

/// A handle on an HTTP/2 connection that sends one stream.
#[derive(Clone)]
pub(crate) struct L7Stream(http2::SendRequest<Full<Bytes>>);

impl L7Stream {
    pub(crate) async fn send(mut self, req: &L7Request) -> Result<Reply, String> {
        let r = build(req)?;
        let started = Instant::now();
        let resp = tokio::time::timeout(REQUEST_TIMEOUT, self.0.send_request(r)).await;
        finish(resp, started).await
    }
}

fn build(req: &L7Request) -> Result<http::Request<Full<Bytes>>, String> {
    let mut b = http::Request::builder()
        .method(req.method.as_str())
        .uri(req.path.as_str())
        .header("host", "upstream");
    for (k, v) in &req.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    let body = if req.grpc {
        b = b
            .header("content-type", grpc::CONTENT_TYPE)
            .header("te", "trailers");
        grpc::frame(b"l7-traffic")
    } else {
        Bytes::new()
    };
    b.body(Full::new(body))
        .map_err(|e| format!("not a valid request: {e}"))
}

async fn finish(
    resp: Result<
        Result<http::Response<hyper::body::Incoming>, hyper::Error>,
        tokio::time::error::Elapsed,
    >,
    started: Instant,
) -> Result<Reply, String> {
    let resp = resp
        .map_err(|_| format!("no answer in {} s", REQUEST_TIMEOUT.as_secs()))?
        .map_err(|e| format!("request failed: {e}"))?;
    let status = resp.status().as_u16();
    let headers: BTreeMap<String, String> = resp
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = tokio::time::timeout(REQUEST_TIMEOUT, resp.into_body().collect())
        .await
        .map_err(|_| "the answer's body never ended".to_owned())?
        .map_err(|e| format!("the answer's body failed: {e}"))?;
    let code = |v: &str| v.trim().parse::<u32>().ok();
    let grpc_status = body
        .trailers()
        .and_then(|t| t.get("grpc-status"))
        .and_then(|v| v.to_str().ok())
        .and_then(code)
        .or_else(|| headers.get("grpc-status").and_then(|v| code(v)));
    Ok(Reply {
        status,
        headers,
        grpc_status,
        elapsed: started.elapsed(),
    })
}

async fn handshake<S>(io: S, h2: bool) -> Result<L7Conn, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let failed = |e: hyper::Error| format!("handshake failed: {e}");
    if h2 {
        let (sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(io))
            .await
            .map_err(failed)?;
        let task = tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(L7Conn {
            sender: Sender::H2(sender),
            task,
        })
    } else {
        let (sender, conn) = http1::handshake(TokioIo::new(io)).await.map_err(failed)?;
        let task = tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(L7Conn {
            sender: Sender::H1(sender),
            task,
        })
    }
}
