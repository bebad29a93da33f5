//! `bench grpc`: gRPC unary calls per second and their latency (p50, p99) through one mTLS hop
//! between two sidecars, the reference proxy pair against an Envoy pair in the same run, with
//! a plain cleartext HTTP/2 baseline straight to the server. `db` is registered with protocol
//! `grpc` (service-defaults), so the sidecars treat its traffic as gRPC (L7, HTTP/2 both sides).
//!
//! The server is a minimal gRPC echo over cleartext HTTP/2 (hyper, no codegen: one
//! length-prefixed message in, the same out, `grpc-status: 0` in the trailers). The client opens
//! one HTTP/2 connection per path to the entry point (plain: the server; a pair: sidecar A's
//! upstream listener) and keeps `IN_FLIGHT` calls outstanding on it for `DURATION`, recording
//! every call's latency; a call counts only with `grpc-status: 0`. Paths alternate in
//! `BATCHES` slices so they share the machine's background load.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::envoy::{self, Envoy, Pem};
use super::setup::{Mesh, free_addr, mesh};
use super::{BoxError, micros, percentile};

/// Calls outstanding at once on the connection.
const IN_FLIGHT: usize = 16;
/// Measuring time per path, split into batches.
const DURATION: Duration = Duration::from_secs(6);
const BATCHES: u32 = 6;
/// Request message size.
const MESSAGE: usize = 64;

fn frame(msg: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(5 + msg.len());
    b.put_u8(0);
    b.put_u32(u32::try_from(msg.len()).unwrap_or(u32::MAX));
    b.put_slice(msg);
    b.freeze()
}

/// The gRPC echo server (h2c, prior knowledge).
async fn server() -> Result<SocketAddr, BoxError> {
    let l = TcpListener::bind("127.0.0.1:0").await?;
    let addr = l.local_addr()?;
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    |req: hyper::Request<hyper::body::Incoming>| async move {
                        let body = req
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let mut trailers = http::HeaderMap::new();
                        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
                        let mut resp = hyper::Response::new(
                            Full::new(body).with_trailers(async move { Some(Ok(trailers)) }),
                        );
                        resp.headers_mut().insert(
                            "content-type",
                            http::HeaderValue::from_static("application/grpc"),
                        );
                        Ok::<_, Infallible>(resp)
                    },
                );
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    Ok(addr)
}

async fn connect(to: SocketAddr) -> Result<SendRequest<Full<Bytes>>, BoxError> {
    let s = TcpStream::connect(to).await?;
    s.set_nodelay(true)?;
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(s)).await?;
    tokio::spawn(conn);
    Ok(sender)
}

/// One unary call; Ok only with grpc-status 0.
async fn call(mut s: SendRequest<Full<Bytes>>) -> Result<(), BoxError> {
    s.ready().await?;
    let req = hyper::Request::builder()
        .method("POST")
        .uri("http://db/conformance.Echo/Unary")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(Full::new(frame(&[7u8; MESSAGE])))?;
    let resp = s.send_request(req).await?;
    let body = resp.into_body().collect().await?;
    let status = body
        .trailers()
        .and_then(|t| t.get("grpc-status"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match status.as_deref() {
        Some("0") => Ok(()),
        other => Err(format!("grpc-status {other:?}").into()),
    }
}

/// Calls for `for_`, `IN_FLIGHT` at a time; the latency of each successful call.
async fn load(s: &SendRequest<Full<Bytes>>, for_: Duration, out: &mut Vec<Duration>) -> usize {
    let end = Instant::now() + for_;
    let mut set = JoinSet::new();
    let mut failed = 0;
    let spawn = |set: &mut JoinSet<_>| {
        let s = s.clone();
        set.spawn(async move {
            let t = Instant::now();
            call(s).await.map(|()| t.elapsed())
        });
    };
    for _ in 0..IN_FLIGHT {
        spawn(&mut set);
    }
    while let Some(r) = set.join_next().await {
        match r {
            Ok(Ok(d)) => out.push(d),
            _ => failed += 1,
        }
        if Instant::now() < end {
            spawn(&mut set);
        }
    }
    failed
}

/// Waits until a call through `to` succeeds (a pair needs its config first).
async fn wait_working(
    to: SocketAddr,
    within: Duration,
) -> Result<SendRequest<Full<Bytes>>, BoxError> {
    let deadline = Instant::now() + within;
    loop {
        let attempt = async {
            let s = connect(to).await?;
            call(s.clone()).await?;
            Ok::<_, BoxError>(s)
        };
        match tokio::time::timeout(Duration::from_secs(5), attempt).await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e)) if Instant::now() > deadline => return Err(e),
            Err(_) if Instant::now() > deadline => return Err("timed out".into()),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

pub(crate) async fn run(envoy_bin: &std::path::Path) -> Result<(), BoxError> {
    let app = server().await?;
    let Mesh {
        sim,
        db_proxy,
        web_proxy,
    } = mesh(app, Some("grpc")).await?;
    let c = sim.control();
    let td = c.trust_domain();
    let ref_entry = web_proxy
        .upstream_addr("db")
        .ok_or("the web sidecar has no upstream listener for db")?;

    let mut paths: Vec<(String, SendRequest<Full<Bytes>>)> = vec![(
        "plain h2c to the gRPC server".into(),
        wait_working(app, Duration::from_secs(5)).await?,
    )];
    match wait_working(ref_entry, Duration::from_secs(10)).await {
        Ok(s) => paths.push(("proxy-under-test A → mTLS → proxy-under-test B".into(), s)),
        Err(e) => eprintln!(
            "reference pair skipped: no gRPC call got through ({e}); the reference proxy needs \
             HTTP/2 support for protocol grpc"
        ),
    }
    let dir = tempfile::tempdir()?;
    let mut envoys = Vec::new();
    if envoy_bin.is_file() {
        let web = c.issue_identity("web")?;
        let db = c.issue_identity("db")?;
        let roots = c.root_pems().join("");
        let (b_listen, a_listen) = (free_addr().await?, free_addr().await?);
        let (b_admin, a_admin) = (free_addr().await?.port(), free_addr().await?.port());
        let b_leaf = Pem {
            chain: db.cert_chain_pem,
            key: db.private_key_pem,
        };
        let a_leaf = Pem {
            chain: web.cert_chain_pem,
            key: web.private_key_pem,
        };
        let b_cfg =
            super::envoy_grpc::server_bootstrap(b_listen, app, b_admin, &b_leaf, &roots, &td);
        envoys.push(Envoy::start(envoy_bin, dir.path(), "envoy-grpc-b", &b_cfg, b_listen).await?);
        let a_cfg =
            super::envoy_grpc::client_bootstrap(a_listen, b_listen, a_admin, &a_leaf, &roots, &td);
        envoys.push(Envoy::start(envoy_bin, dir.path(), "envoy-grpc-a", &a_cfg, a_listen).await?);
        let s = wait_working(a_listen, Duration::from_secs(30)).await?;
        paths.push(("Envoy A → mTLS → Envoy B".into(), s));
        println!("Envoy: {}", envoy::version(envoy_bin));
    } else {
        eprintln!("no Envoy at {}: Envoy pair skipped", envoy_bin.display());
    }

    let mut samples = vec![Vec::new(); paths.len()];
    let mut failed = vec![0usize; paths.len()];
    let mut spent = vec![Duration::ZERO; paths.len()];
    for _ in 0..BATCHES {
        for (i, (_, s)) in paths.iter().enumerate() {
            let t = Instant::now();
            failed[i] += load(s, DURATION / BATCHES, &mut samples[i]).await;
            spent[i] += t.elapsed();
        }
    }
    println!();
    println!(
        "| path | unary calls/s ({IN_FLIGHT} in flight, one connection) | p50 | p99 | calls | failed |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (i, (label, _)) in paths.iter().enumerate() {
        let n = samples[i].len();
        println!(
            "| {label} | {:.0} | {} | {} | {n} | {} |",
            n as f64 / spent[i].as_secs_f64(),
            micros(percentile(&mut samples[i], 0.5)),
            micros(percentile(&mut samples[i], 0.99)),
            failed[i],
        );
    }
    drop(envoys);
    drop((db_proxy, web_proxy));
    Ok(())
}
