//! The few agent reads `consul connect envoy` makes, over plain HTTP/1.1 with the token in
//! `X-Consul-Token`, and Consul's API client's error texts (`Unexpected response code: N (body)`).

use anyhow::{Context, anyhow, bail};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// The agent's HTTP address as `-http-addr` / `CONSUL_HTTP_ADDR` give it (`host:port`, or
/// with an `http://` scheme; default `127.0.0.1:8500`).
#[derive(Debug, Clone)]
pub(super) struct Agent {
    /// `host:port`.
    authority: String,
    token: String,
}

impl Agent {
    pub(super) fn new(addr: &str, token: &str) -> anyhow::Result<Self> {
        let addr = if addr.is_empty() {
            "127.0.0.1:8500"
        } else {
            addr
        };
        let lower = addr.to_ascii_lowercase();
        if lower.starts_with("https://") {
            bail!("HTTPS to the agent is not supported by agent-sim (address {addr:?})");
        }
        if lower.starts_with("unix://") {
            bail!("a unix socket agent address is not supported by agent-sim ({addr:?})");
        }
        let authority = addr
            .strip_prefix("http://")
            .or_else(|| addr.strip_prefix("HTTP://"))
            .unwrap_or(addr)
            .trim_end_matches('/');
        if authority.contains('/') || authority.is_empty() {
            bail!("invalid agent HTTP address {addr:?}");
        }
        Ok(Self {
            authority: authority.to_owned(),
            token: token.to_owned(),
        })
    }

    /// `GET path` and its JSON body; non-200 answers are errors carrying the body.
    pub(super) async fn get(&self, path: &str) -> anyhow::Result<Value> {
        let url = format!("http://{}{path}", self.authority);
        let fail = |e: &dyn std::fmt::Display| anyhow!("Get {url:?}: {e}");
        let stream = tokio::net::TcpStream::connect(&self.authority)
            .await
            .map_err(|e| fail(&e))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| fail(&e))?;
        tokio::spawn(conn);
        let mut req = http::Request::get(path)
            .header(http::header::HOST, &self.authority)
            .header("User-Agent", "agent-sim connect envoy");
        if !self.token.is_empty() {
            req = req.header("X-Consul-Token", &self.token);
        }
        let req = req.body(Empty::<Bytes>::new()).map_err(|e| fail(&e))?;
        let resp = sender.send_request(req).await.map_err(|e| fail(&e))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| fail(&e))?
            .to_bytes();
        if status != http::StatusCode::OK {
            let text = String::from_utf8_lossy(&body);
            bail!(
                "Unexpected response code: {} ({})",
                status.as_u16(),
                text.trim()
            );
        }
        serde_json::from_slice(&body).with_context(|| format!("decoding the answer to GET {path}"))
    }
}
