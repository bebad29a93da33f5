//! HTTP/2 probes (hyper's HTTP/2 client): one connection over mTLS with ALPN `h2` to the
//! proxy's public listener (or cleartext, prior knowledge, to an upstream's local listener, as
//! the app would), carrying many streams at once. Each stream's outcome is recorded on its
//! own: HTTP status, or gRPC status, message and trailers, or why it failed (reset, no answer).

use std::net::SocketAddr;
use std::sync::Arc;

use agent_sim::ca::ClientIdentity;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::{self, SendRequest};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio::task::{JoinHandle, JoinSet};

use super::conn::Closed;
use super::http::HttpProbe;
use super::{ANSWER_TIMEOUT, CONNECT_TIMEOUT, tls_connect_alpn};
use crate::grpc::{self, Answer};
use crate::proxy::ListenAddr;

/// A unary gRPC call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GrpcCall {
    pub(crate) path: String,
    pub(crate) metadata: Vec<(String, String)>,
    /// The request message (opaque bytes; the server echoes it).
    pub(crate) message: Bytes,
}

/// One HTTP/2 client connection; `closed` is set when it ends (GOAWAY, reset, close).
pub(crate) struct H2Client {
    sender: SendRequest<Full<Bytes>>,
    pub(crate) closed: Arc<Closed>,
    /// Added to every failed stream's text (e.g. that TLS negotiated no ALPN protocol).
    note: Option<&'static str>,
    task: JoinHandle<()>,
}

impl Drop for H2Client {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// mTLS as `identity` with ALPN `h2`, then the HTTP/2 handshake. A server that picks another
/// protocol by ALPN is an error (the connection would not speak HTTP/2).
pub(crate) async fn connect_tls(
    addr: SocketAddr,
    identity: Option<&ClientIdentity>,
) -> Result<H2Client, String> {
    let (tls, _) = tls_connect_alpn(addr, identity, &[b"h2"]).await;
    let tls = tls?;
    let note = match tls.get_ref().1.alpn_protocol() {
        Some(b"h2") => None,
        None => Some("the proxy negotiated no ALPN protocol; HTTP/2 tried with prior knowledge"),
        Some(other) => {
            return Err(format!(
                "ALPN chose {:?}, not h2",
                String::from_utf8_lossy(other)
            ));
        }
    };
    let mut client = handshake(tls).await?;
    client.note = note;
    Ok(client)
}

/// Cleartext HTTP/2 (prior knowledge) to a local listener, as the app behind the proxy.
pub(crate) async fn connect_plain(to: &ListenAddr) -> Result<H2Client, String> {
    let timeout = |e| format!("connect failed: {e}");
    match to {
        ListenAddr::Tcp(a) => {
            let s = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(*a))
                .await
                .map_err(|_| "connect timed out".to_owned())?
                .map_err(timeout)?;
            let _ = s.set_nodelay(true);
            handshake(s).await
        }
        ListenAddr::Unix(p) => {
            let s = tokio::time::timeout(CONNECT_TIMEOUT, UnixStream::connect(p))
                .await
                .map_err(|_| "connect timed out".to_owned())?
                .map_err(timeout)?;
            handshake(s).await
        }
    }
}

async fn handshake<S>(io: S) -> Result<H2Client, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = tokio::time::timeout(
        ANSWER_TIMEOUT,
        http2::handshake(TokioExecutor::new(), TokioIo::new(io)),
    )
    .await
    .map_err(|_| "HTTP/2 handshake timed out".to_owned())?
    .map_err(|e| format!("HTTP/2 handshake failed: {e}"))?;
    let closed = Arc::new(Closed::default());
    let on_close = closed.clone();
    let task = tokio::spawn(async move {
        match conn.await {
            Ok(()) => on_close.set("closed"),
            Err(e) => on_close.set(format!("connection error: {e}")),
        }
    });
    Ok(H2Client {
        sender,
        closed,
        note: None,
        task,
    })
}

impl H2Client {
    /// `n` HTTP requests as concurrent streams; each stream's status or error, in order.
    pub(crate) async fn http(&self, probe: &HttpProbe, n: u32) -> Vec<Result<u16, String>> {
        let probe = probe.clone();
        self.many(n, move |mut s| {
            let probe = probe.clone();
            async move {
                let mut req = hyper::Request::builder()
                    .method(probe.method.as_str())
                    .uri(format!("http://db{}", probe.path));
                for (k, v) in &probe.headers {
                    req = req.header(k.as_str(), v.as_str());
                }
                let req = req
                    .body(Full::new(Bytes::new()))
                    .map_err(|e| format!("invalid request: {e}"))?;
                s.ready()
                    .await
                    .map_err(|e| format!("connection not usable: {e}"))?;
                let resp = s
                    .send_request(req)
                    .await
                    .map_err(|e| format!("stream failed: {e}"))?;
                let status = resp.status().as_u16();
                resp.into_body()
                    .collect()
                    .await
                    .map_err(|e| format!("body failed: {e}"))?;
                Ok(status)
            }
        })
        .await
    }

    /// `n` unary gRPC calls as concurrent streams; each one's answer or error, in order.
    pub(crate) async fn grpc(&self, call: &GrpcCall, n: u32) -> Vec<Result<Answer, String>> {
        let call = call.clone();
        self.many(n, move |mut s| {
            let call = call.clone();
            async move {
                let mut req = hyper::Request::builder()
                    .method("POST")
                    .uri(format!("http://db{}", call.path))
                    .header("content-type", grpc::CONTENT_TYPE)
                    .header("te", "trailers");
                for (k, v) in &call.metadata {
                    req = req.header(k.as_str(), v.as_str());
                }
                let req = req
                    .body(Full::new(grpc::frame(&call.message)))
                    .map_err(|e| format!("invalid request: {e}"))?;
                s.ready()
                    .await
                    .map_err(|e| format!("connection not usable: {e}"))?;
                let resp = s
                    .send_request(req)
                    .await
                    .map_err(|e| format!("stream failed: {e}"))?;
                let (parts, body) = resp.into_parts();
                let body = body
                    .collect()
                    .await
                    .map_err(|e| format!("stream reset while reading: {e}"))?;
                let trailers = body.trailers().cloned();
                let data = body.to_bytes();
                Ok(Answer::read(
                    parts.status.as_u16(),
                    &parts.headers,
                    trailers.as_ref(),
                    &data,
                ))
            }
        })
        .await
    }

    /// Runs `n` streams at once (each bounded by [`ANSWER_TIMEOUT`]); results in order.
    async fn many<T, F, Fut>(&self, n: u32, f: F) -> Vec<Result<T, String>>
    where
        T: Send + 'static,
        F: Fn(SendRequest<Full<Bytes>>) -> Fut,
        Fut: Future<Output = Result<T, String>> + Send + 'static,
    {
        let mut set = JoinSet::new();
        for i in 0..n.max(1) {
            let fut = f(self.sender.clone());
            set.spawn(async move {
                let r = tokio::time::timeout(ANSWER_TIMEOUT, fut)
                    .await
                    .unwrap_or_else(|_| {
                        Err(format!(
                            "no answer within {} ms",
                            ANSWER_TIMEOUT.as_millis()
                        ))
                    });
                (i, r)
            });
        }
        let mut out: Vec<(u32, Result<T, String>)> = Vec::new();
        while let Some(r) = set.join_next().await {
            match r {
                Ok(x) => out.push(x),
                Err(e) => out.push((u32::MAX, Err(format!("stream task failed: {e}")))),
            }
        }
        out.sort_by_key(|(i, _)| *i);
        let note = self.note;
        out.into_iter()
            .map(|(_, r)| match (r, note) {
                (Err(e), Some(n)) => Err(format!("{e} ({n})")),
                (r, _) => r,
            })
            .collect()
    }
}

/// Streams' outcomes in one line: `n streams: #1 HTTP 200, #2 ...` (one stream: its outcome).
pub(crate) fn describe<T>(results: &[Result<T, String>], one: impl Fn(&T) -> String) -> String {
    let each = |r: &Result<T, String>| match r {
        Ok(t) => one(t),
        Err(e) => e.clone(),
    };
    match results {
        [r] => each(r),
        rs => {
            let parts: Vec<String> = rs
                .iter()
                .enumerate()
                .map(|(i, r)| format!("#{} {}", i + 1, each(r)))
                .collect();
            format!(
                "{} streams on one connection: {}",
                rs.len(),
                parts.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests;
