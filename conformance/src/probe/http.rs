//! HTTP/1.1 over the probe's TLS stream (hyper client connection): one-shot requests on a new
//! connection, or requests on a kept-alive connection opened by an `open` step.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use agent_sim::ca::ClientIdentity;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::task::JoinHandle;

use super::conn::Closed;
use super::{ANSWER_TIMEOUT, tls_connect};

/// One request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpProbe {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: BTreeMap<String, String>,
}

/// An HTTP/1.1 client connection over mTLS; `closed` is set when the connection ends.
pub(crate) struct HttpClient {
    pub(crate) sender: SendRequest<Empty<Bytes>>,
    pub(crate) closed: Arc<Closed>,
    task: JoinHandle<()>,
}

impl Drop for HttpClient {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Handshakes TLS then HTTP/1.1.
pub(crate) async fn connect(
    addr: SocketAddr,
    identity: Option<&ClientIdentity>,
) -> Result<HttpClient, String> {
    let (tls, _) = tls_connect(addr, identity).await;
    let tls = tls?;
    let (sender, conn) = http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| format!("HTTP handshake failed: {e}"))?;
    let closed = Arc::new(Closed::default());
    let on_close = closed.clone();
    let task = tokio::spawn(async move {
        match conn.await {
            Ok(()) => on_close.set("closed"),
            Err(e) => on_close.set(format!("connection error: {e}")),
        }
    });
    Ok(HttpClient {
        sender,
        closed,
        task,
    })
}

/// Sends one request; `Ok(status)` or why no response came.
pub(crate) async fn send(
    sender: &mut SendRequest<Empty<Bytes>>,
    probe: &HttpProbe,
) -> Result<u16, String> {
    exchange(sender, probe).await.map(|(status, _)| status)
}

/// Sends one request; `Ok((status, body))` or why no response came.
async fn exchange(
    sender: &mut SendRequest<Empty<Bytes>>,
    probe: &HttpProbe,
) -> Result<(u16, Bytes), String> {
    let exchange = async {
        sender
            .ready()
            .await
            .map_err(|e| format!("connection not usable: {e}"))?;
        let mut req = hyper::Request::builder()
            .method(probe.method.as_str())
            .uri(probe.path.as_str())
            .header("host", "db");
        for (k, v) in &probe.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = req
            .body(Empty::new())
            .map_err(|e| format!("invalid request: {e}"))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| format!("no response: {e}"))?;
        let status = resp.status().as_u16();
        // Read the body so the connection can carry the next request.
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("body failed: {e}"))?
            .to_bytes();
        Ok((status, body))
    };
    tokio::time::timeout(ANSWER_TIMEOUT, exchange)
        .await
        .map_err(|_| format!("no response within {} ms", ANSWER_TIMEOUT.as_millis()))?
}

/// A request on a new connection: its status and body.
pub(crate) async fn one_shot(
    addr: SocketAddr,
    identity: Option<&ClientIdentity>,
    probe: &HttpProbe,
) -> Result<(u16, Bytes), String> {
    let mut client = connect(addr, identity).await?;
    exchange(&mut client.sender, probe).await
}
