//! The applications behind the sidecars, run in a child process of their own (`hop_bench
//! --apps`): a TCP app (first byte `S`: sink that answers the byte count at EOF; `E`: echo) and
//! three HTTP apps (`main`, `v1`, `v2`) speaking HTTP/1.1 and h2c (prior knowledge) on one
//! port each. An HTTP app answers every request with 64 bytes and `x-instance: <name>`, and a
//! gRPC call (`content-type: application/grpc`) with its own message and `grpc-status: 0`.
//! The ports go to stdout as one JSON line.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The answer body of the HTTP apps.
pub(crate) const BODY: [u8; 64] = [b'x'; 64];

/// Where the apps listen (printed by the child, read by the bench).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct AppPorts {
    pub(crate) tcp: u16,
    pub(crate) http: u16,
    pub(crate) v1: u16,
    pub(crate) v2: u16,
}

impl AppPorts {
    pub(crate) fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }
}

/// The child's main: binds, prints the ports, serves until killed.
pub(crate) async fn serve() -> anyhow::Result<()> {
    let tcp = TcpListener::bind("127.0.0.1:0").await?;
    let mut http = Vec::new();
    for name in ["main", "v1", "v2"] {
        http.push((name, TcpListener::bind("127.0.0.1:0").await?));
    }
    let ports = AppPorts {
        tcp: tcp.local_addr()?.port(),
        http: http[0].1.local_addr()?.port(),
        v1: http[1].1.local_addr()?.port(),
        v2: http[2].1.local_addr()?.port(),
    };
    println!("{}", serde_json::to_string(&ports)?);
    for (name, l) in http {
        tokio::spawn(http_app(l, name));
    }
    tcp_app(tcp).await;
    Ok(())
}

async fn tcp_app(l: TcpListener) {
    while let Ok((mut s, _)) = l.accept().await {
        let _ = s.set_nodelay(true);
        tokio::spawn(async move {
            let mut mode = [0u8; 1];
            if s.read_exact(&mut mode).await.is_err() {
                return;
            }
            if mode[0] == b'S' {
                let mut buf = vec![0u8; 256 * 1024];
                let mut total = 0u64;
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => total += n as u64,
                    }
                }
                let _ = s.write_all(&total.to_be_bytes()).await;
            } else {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            }
        });
    }
}

async fn http_app(l: TcpListener, name: &'static str) {
    while let Ok((s, _)) = l.accept().await {
        let _ = s.set_nodelay(true);
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| answer(req, name));
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(s), svc)
                .await;
        });
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

async fn answer(
    req: hyper::Request<Incoming>,
    name: &'static str,
) -> Result<hyper::Response<Body>, Infallible> {
    let grpc = req
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let mut resp = if grpc {
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        let mut r = hyper::Response::new(
            Full::new(body)
                .with_trailers(async move { Some(Ok(trailers)) })
                .boxed(),
        );
        r.headers_mut().insert(
            "content-type",
            http::HeaderValue::from_static("application/grpc"),
        );
        r
    } else {
        hyper::Response::new(Full::new(Bytes::from_static(&BODY)).boxed())
    };
    resp.headers_mut()
        .insert("x-instance", http::HeaderValue::from_static(name));
    Ok(resp)
}
