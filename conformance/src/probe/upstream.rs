//! The upstream probe, made as the application behind the proxy would: plain TCP (or a unix
//! socket) to the proxy's local upstream listener, or a dial of a virtual IP that the redirect
//! rules capture; a token line, and the instance id the harness-run instance answers with.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UnixStream};

use super::{CONNECT_TIMEOUT, token};
use crate::proxy::ListenAddr;

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

/// Sends a fresh token through `to`, dialed from here (inside the pod in transparent mode).
pub(crate) async fn upstream_once(to: &ListenAddr) -> UpstreamAttempt {
    let token = token();
    let answer = match to {
        ListenAddr::Tcp(addr) => match connect(TcpStream::connect(*addr)).await {
            Ok(s) => exchange(s, &token).await,
            Err(e) => Err(e),
        },
        ListenAddr::Unix(path) => match connect(UnixStream::connect(path)).await {
            Ok(s) => exchange(s, &token).await,
            Err(e) => Err(e),
        },
    };
    UpstreamAttempt { token, answer }
}

/// Whether `to` accepts a connection from here (no redirect-aware dialing: the app's view).
pub(crate) async fn listener_open(to: &ListenAddr) -> Result<(), String> {
    match to {
        ListenAddr::Tcp(addr) => connect(TcpStream::connect(*addr)).await.map(drop),
        ListenAddr::Unix(path) => connect(UnixStream::connect(path)).await.map(drop),
    }
}

async fn connect<S>(f: impl Future<Output = std::io::Result<S>>) -> Result<S, String> {
    tokio::time::timeout(CONNECT_TIMEOUT, f)
        .await
        .map_err(|_| "connect timed out".to_owned())?
        .map_err(|e| format!("connect failed: {e}"))
}

/// Writes the token line and reads the instance's answer line.
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    token: &str,
) -> Result<String, String> {
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
