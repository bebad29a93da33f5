//! The upstream probe: plain TCP to the proxy's local upstream listener, a token line, and the
//! instance id the harness-run instance answers with.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::{CONNECT_TIMEOUT, token};

/// How long an upstream answer may take (the proxy may dial several endpoints first).
pub(crate) const UPSTREAM_ANSWER_TIMEOUT: Duration = Duration::from_secs(8);

/// One connection through an upstream listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UpstreamAttempt {
    /// The token sent.
    pub(crate) token: String,
    /// The instance id answered, or why none came.
    pub(crate) answer: Result<String, String>,
}

/// Sends a fresh token through the upstream listener at `addr`.
pub(crate) async fn upstream_once(addr: SocketAddr) -> UpstreamAttempt {
    let token = token();
    let answer = async {
        let mut s = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| "connect timed out".to_owned())?
            .map_err(|e| format!("connect failed: {e}"))?;
        s.write_all(format!("{token}\n").as_bytes())
            .await
            .map_err(|e| format!("write failed: {e}"))?;
        let mut line = String::new();
        let n = tokio::time::timeout(
            UPSTREAM_ANSWER_TIMEOUT,
            BufReader::new(&mut s).read_line(&mut line),
        )
        .await
        .map_err(|_| {
            format!(
                "no answer within {} ms",
                UPSTREAM_ANSWER_TIMEOUT.as_millis()
            )
        })?
        .map_err(|e| format!("read failed: {e}"))?;
        if n == 0 {
            return Err("closed without an answer".to_owned());
        }
        Ok(line.trim().to_owned())
    }
    .await;
    UpstreamAttempt { token, answer }
}
