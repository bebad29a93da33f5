//! Long-lived connections opened by `open` steps: raw bytes through to the echo app, an
//! HTTP/1.1 keep-alive connection, or one HTTP/2 connection carrying many streams. A background reader notices (and timestamps) the moment the
//! proxy closes the connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use agent_sim::ca::ClientIdentity;
use parking_lot::Mutex;
use scenarios::ConnProtocol;
use tokio::io::{AsyncReadExt, AsyncWriteExt, WriteHalf};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_rustls::client::TlsStream;

use super::h2::{self, GrpcCall, H2Client};
use super::http::{self, HttpClient, HttpProbe};
use super::{ANSWER_TIMEOUT, tls_connect, token};
use crate::grpc::Answer;

/// When and how a connection ended.
#[derive(Debug, Default)]
pub(crate) struct Closed(Mutex<Option<(Instant, String)>>);

impl Closed {
    /// Records the end (the first one wins).
    pub(crate) fn set(&self, how: impl Into<String>) {
        let mut c = self.0.lock();
        if c.is_none() {
            *c = Some((Instant::now(), how.into()));
        }
    }

    /// When and how it ended, if it did.
    pub(crate) fn get(&self) -> Option<(Instant, String)> {
        self.0.lock().clone()
    }
}

/// An open connection.
pub(crate) enum Conn {
    /// Bytes to the echo app.
    Tcp(TcpConn),
    /// HTTP/1.1 keep-alive.
    Http(HttpClient),
    /// HTTP/2 (ALPN h2).
    H2(H2Client),
}

/// A raw connection with a background reader.
pub(crate) struct TcpConn {
    writer: WriteHalf<TlsStream<TcpStream>>,
    received: Arc<Mutex<Vec<u8>>>,
    closed: Arc<Closed>,
    reader: JoinHandle<()>,
}

impl Drop for TcpConn {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tcp(_) => f.write_str("Conn::Tcp"),
            Self::Http(_) => f.write_str("Conn::Http"),
            Self::H2(_) => f.write_str("Conn::H2"),
        }
    }
}

impl Conn {
    /// Opens a connection as `identity`; a TCP connection must echo a first token to count as
    /// established.
    pub(crate) async fn open(
        addr: SocketAddr,
        identity: Option<&ClientIdentity>,
        protocol: ConnProtocol,
    ) -> Result<Self, String> {
        match protocol {
            ConnProtocol::Http => Ok(Self::Http(http::connect(addr, identity).await?)),
            ConnProtocol::Http2 | ConnProtocol::Grpc => {
                Ok(Self::H2(h2::connect_tls(addr, identity).await?))
            }
            ConnProtocol::Tcp => {
                let (tls, _) = tls_connect(addr, identity).await;
                let (mut read, writer) = tokio::io::split(tls?);
                let received = Arc::new(Mutex::new(Vec::new()));
                let closed = Arc::new(Closed::default());
                let (r, c) = (received.clone(), closed.clone());
                let reader = tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    loop {
                        match read.read(&mut buf).await {
                            Ok(0) => return c.set("closed by the peer"),
                            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                                return c.set("closed by the peer (no TLS close_notify)");
                            }
                            Err(e) => return c.set(format!("connection error: {e}")),
                            Ok(n) => r.lock().extend_from_slice(&buf[..n]),
                        }
                    }
                });
                let mut conn = Self::Tcp(TcpConn {
                    writer,
                    received,
                    closed,
                    reader,
                });
                conn.check_open().await?;
                Ok(conn)
            }
        }
    }

    /// Whether the connection still carries bytes both ways: an echoed token (TCP) or any HTTP
    /// response. Ok = round trip in ms.
    pub(crate) async fn check_open(&mut self) -> Result<u64, String> {
        let start = Instant::now();
        match self {
            Self::Http(c) => {
                let probe = HttpProbe {
                    method: "GET".into(),
                    path: "/conformance-keepalive".into(),
                    headers: Default::default(),
                };
                http::send(&mut c.sender, &probe).await?;
            }
            Self::H2(c) => {
                let probe = HttpProbe {
                    method: "GET".into(),
                    path: "/conformance-keepalive".into(),
                    headers: Default::default(),
                };
                c.http(&probe, 1)
                    .await
                    .pop()
                    .unwrap_or(Err(String::new()))?;
            }
            Self::Tcp(c) => {
                let token = token();
                c.writer
                    .write_all(format!("{token}\n").as_bytes())
                    .await
                    .map_err(|e| format!("write failed: {e}"))?;
                let _ = c.writer.flush().await;
                let deadline = start + ANSWER_TIMEOUT;
                loop {
                    let echoed = c
                        .received
                        .lock()
                        .windows(token.len())
                        .any(|w| w == token.as_bytes());
                    if echoed {
                        break;
                    }
                    if let Some((_, how)) = c.closed.get() {
                        return Err(how);
                    }
                    if Instant::now() >= deadline {
                        return Err(format!("no echo within {} ms", ANSWER_TIMEOUT.as_millis()));
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
        Ok(u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX))
    }

    /// When and how the proxy closed the connection, if it did.
    pub(crate) fn closed(&self) -> Option<(Instant, String)> {
        match self {
            Self::Tcp(c) => c.closed.get(),
            Self::Http(c) => c.closed.get(),
            Self::H2(c) => c.closed.get(),
        }
    }

    /// Sends a request on an HTTP connection (`n` concurrent streams on HTTP/2); each
    /// request's status or error.
    pub(crate) async fn http(&mut self, probe: &HttpProbe, n: u32) -> Vec<Result<u16, String>> {
        match self {
            Self::Http(c) => vec![http::send(&mut c.sender, probe).await],
            Self::H2(c) => c.http(probe, n).await,
            Self::Tcp(_) => vec![Err(
                "the connection was opened with protocol tcp, not http".into()
            )],
        }
    }

    /// `n` concurrent gRPC calls on an HTTP/2 connection.
    pub(crate) async fn grpc(&mut self, call: &GrpcCall, n: u32) -> Vec<Result<Answer, String>> {
        match self {
            Self::H2(c) => c.grpc(call, n).await,
            _ => vec![Err("the connection is not HTTP/2".into())],
        }
    }
}
