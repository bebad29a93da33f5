//! The L7 load, hyper clients on tokio: HTTP/1.1 keep-alive (one request in flight per
//! connection), HTTP/2 and gRPC unary (`H2_STREAMS` streams in flight on one connection, one per
//! connection with many connections). Every answer is checked (200 with the app's 64-byte body,
//! or `grpc-status: 0` with the echoed message); failures are counted, never timed.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::{BufMut, Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::apps::BODY;

/// Streams in flight on a single multiplexed HTTP/2 connection.
pub(crate) const H2_STREAMS: usize = 16;

/// The protocol of a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proto {
    H1,
    H2,
    Grpc,
}

/// A client connection.
#[derive(Clone)]
pub(crate) enum Conn {
    H1(std::sync::Arc<tokio::sync::Mutex<http1::SendRequest<Full<Bytes>>>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

pub(crate) async fn connect(addr: SocketAddr, proto: Proto) -> anyhow::Result<Conn> {
    let s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    let io = TokioIo::new(s);
    Ok(match proto {
        Proto::H1 => {
            let (send, conn) = http1::handshake(io).await?;
            tokio::spawn(conn);
            Conn::H1(std::sync::Arc::new(tokio::sync::Mutex::new(send)))
        }
        Proto::H2 | Proto::Grpc => {
            let (send, conn) = http2::handshake(TokioExecutor::new(), io).await?;
            tokio::spawn(conn);
            Conn::H2(send)
        }
    })
}

fn grpc_frame() -> Bytes {
    let mut b = BytesMut::with_capacity(5 + 64);
    b.put_u8(0);
    b.put_u32(64);
    b.put_slice(&[7u8; 64]);
    b.freeze()
}

fn build(proto: Proto, path: &str) -> anyhow::Result<hyper::Request<Full<Bytes>>> {
    let r = match proto {
        Proto::H1 => hyper::Request::get(path)
            .header("host", "upstream")
            .body(Full::default())?,
        Proto::H2 => hyper::Request::get(format!("http://upstream{path}")).body(Full::default())?,
        Proto::Grpc => hyper::Request::post("http://upstream/bench.Echo/Unary")
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(Full::new(grpc_frame()))?,
    };
    Ok(r)
}

/// One checked request; returns the answering instance (`x-instance`).
pub(crate) async fn request(conn: &Conn, proto: Proto, path: &str) -> anyhow::Result<String> {
    let req = build(proto, path)?;
    let resp = match conn {
        Conn::H1(send) => {
            let mut send = send.lock().await;
            send.ready().await?;
            send.send_request(req).await?
        }
        Conn::H2(send) => {
            let mut send = send.clone();
            send.ready().await?;
            send.send_request(req).await?
        }
    };
    let status = resp.status();
    let instance = resp
        .headers()
        .get("x-instance")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = resp.into_body().collect().await?;
    if proto == Proto::Grpc {
        let trailers = body.trailers().cloned();
        let ok = trailers
            .as_ref()
            .and_then(|t| t.get("grpc-status"))
            .is_some_and(|v| v == "0");
        if !ok || body.to_bytes() != grpc_frame() {
            bail!("gRPC call failed: status {status}, trailers {trailers:?}");
        }
    } else if status != 200 || body.to_bytes() != Bytes::from_static(&BODY) {
        bail!("HTTP answer {status}");
    }
    Ok(instance)
}

/// What one load measured.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) latencies: Vec<Duration>,
    pub(crate) failed: u64,
    pub(crate) secs: f64,
    /// Answers per instance name (the split's shares on the router path).
    pub(crate) instances: std::collections::BTreeMap<String, u64>,
}

/// `conns` connections, each with `per_conn` requests in flight, for `dur`.
pub(crate) async fn load(
    addr: SocketAddr,
    proto: Proto,
    conns: usize,
    per_conn: usize,
    path: &'static str,
    dur: Duration,
) -> anyhow::Result<Outcome> {
    let mut opened = Vec::new();
    for _ in 0..conns {
        let c = connect(addr, proto).await.context("connect")?;
        request(&c, proto, path).await.context("first request")?;
        opened.push(c);
    }
    let start = Instant::now();
    let mut set = JoinSet::new();
    for c in &opened {
        for _ in 0..per_conn {
            let c = c.clone();
            set.spawn(async move {
                let mut o = Outcome::default();
                while start.elapsed() < dur {
                    let t = Instant::now();
                    match request(&c, proto, path).await {
                        Ok(instance) => {
                            o.latencies.push(t.elapsed());
                            *o.instances.entry(instance).or_default() += 1;
                        }
                        Err(_) => o.failed += 1,
                    }
                }
                o
            });
        }
    }
    let mut all = Outcome::default();
    while let Some(r) = set.join_next().await {
        let o = r?;
        all.latencies.extend(o.latencies);
        all.failed += o.failed;
        for (k, v) in o.instances {
            *all.instances.entry(k).or_default() += v;
        }
    }
    all.secs = start.elapsed().as_secs_f64();
    Ok(all)
}
