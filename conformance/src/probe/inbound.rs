//! The one-shot inbound probe: handshake as an identity, send a unique token, and see whether
//! it comes back from the echo app (allowed) or the connection ends before any byte reached the
//! app (refused).

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use agent_sim::ca::ClientIdentity;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use super::{ANSWER_TIMEOUT, tls_connect, token};
use crate::world::App;

/// What one inbound connection showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Inbound {
    /// The token came back from the app.
    Allowed {
        /// Handshake to echo.
        ms: u64,
    },
    /// The handshake failed or the connection ended before any byte reached the app.
    Refused {
        /// How.
        how: String,
    },
    /// The connection ended without an echo, but the app did receive the token: not a clean
    /// refusal (bytes leaked to the app) and not an allowed connection either.
    Leaked {
        /// How it ended.
        how: String,
    },
    /// Neither an echo nor a close within the deadline.
    Hung,
}

impl fmt::Display for Inbound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Allowed { ms } => write!(f, "allowed (echo after {ms} ms)"),
            Self::Refused { how } => write!(f, "refused ({how})"),
            Self::Leaked { how } => write!(
                f,
                "connection ended ({how}) but the app had received the probe's bytes"
            ),
            Self::Hung => write!(
                f,
                "no echo and no close within {} ms",
                ANSWER_TIMEOUT.as_millis()
            ),
        }
    }
}

/// Probes `addr` as `identity` with a fresh token.
pub(crate) async fn inbound(
    addr: SocketAddr,
    identity: Option<&ClientIdentity>,
    app: &App,
) -> Inbound {
    let token = token();
    let (tls, _) = tls_connect(addr, identity).await;
    let mut tls = match tls {
        Ok(t) => t,
        Err(how) => return Inbound::Refused { how },
    };
    let start = Instant::now();
    let line = format!("{token}\n");
    let ended = match tls.write_all(line.as_bytes()).await {
        Err(e) => Some(format!("write failed: {e}")),
        Ok(()) => {
            let _ = tls.flush().await;
            read_echo(&mut tls, token.as_bytes()).await
        }
    };
    let Some(how) = ended else {
        let ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        return Inbound::Allowed { ms };
    };
    if how == "timeout" {
        return Inbound::Hung;
    }
    // Bytes forwarded just before a close may still be on their way to the app.
    tokio::time::sleep(Duration::from_millis(100)).await;
    if app.record.saw(token.as_bytes()) {
        Inbound::Leaked { how }
    } else {
        Inbound::Refused { how }
    }
}

/// Dials `addr` (the application's own port, from outside the pod) in plain TCP, as an
/// unauthenticated client: the capture hands it to the proxy, which refuses it (strict mTLS) or,
/// in permissive mTLS, passes it to the app. An echo is an allowed connection; bytes that reach
/// the app without an echo are a leak.
pub(crate) async fn inbound_plain(addr: SocketAddr, app: &App) -> Inbound {
    let token = token();
    let mut tcp = match super::dial(addr).await {
        Ok(t) => t,
        Err(e) => {
            return Inbound::Refused {
                how: format!("TCP connect failed: {e}"),
            };
        }
    };
    let start = Instant::now();
    let line = format!("{token}\n");
    let ended = match tcp.write_all(line.as_bytes()).await {
        Err(e) => Some(format!("write failed: {e}")),
        Ok(()) => read_echo(&mut tcp, token.as_bytes()).await,
    };
    match ended {
        None => Inbound::Allowed {
            ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
        },
        Some(how) if how == "timeout" => Inbound::Hung,
        Some(how) => {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if app.record.saw(token.as_bytes()) {
                Inbound::Leaked { how }
            } else {
                Inbound::Refused { how }
            }
        }
    }
}

/// `None` when `token` came back; else how the connection ended (`"timeout"` if it did not).
async fn read_echo<S: AsyncReadExt + Unpin>(s: &mut S, token: &[u8]) -> Option<String> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) => return Some("timeout".into()),
            Ok(Ok(0)) => return Some("closed before the echo".into()),
            Ok(Err(e)) => return Some(format!("connection error before the echo: {e}")),
            Ok(Ok(n)) => {
                got.extend_from_slice(&buf[..n]);
                if got.windows(token.len()).any(|w| w == token) {
                    return None;
                }
            }
        }
    }
}
