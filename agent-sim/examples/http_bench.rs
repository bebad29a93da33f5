//! agent-sim HTTP API benchmark (a program, not a test). Run with
//! `cargo run --release -p agent-sim --example http_bench` and read the Markdown it prints.
//!
//! (a) authorize throughput over loopback keep-alive HTTP, as a ratio to a trivial handler served
//!     by the same HTTP stack in the same run (target >= 0.8);
//! (b) 10,000 concurrent blocking watchers on the roots endpoint, all answered after one CA
//!     rotation (target: last answer within 1 s of the rotation; peak memory < 300 MB). The
//!     watchers run in a child process so each process stays within the fd limit and the sim's
//!     memory is measured alone.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent_sim::AgentSim;
use anyhow::{Context, bail};
use axum::Router;
use axum::http::Method;
use axum::routing::post;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const CONNECTIONS: usize = 16;
const ROUND: Duration = Duration::from_secs(3);
const ROUNDS: usize = 3;
const WATCHERS: usize = 10_000;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--watch-clients") {
        return watch_clients(&args[2..]).await;
    }
    raise_fd_limit();
    println!("# agent-sim benchmark\n");
    println!(
        "machine: {} cores, loopback; release build\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let only = args.get(1).map(String::as_str);
    if only != Some("watchers") {
        authorize_ratio().await?;
    }
    if only != Some("authorize") {
        watchers().await?;
    }
    Ok(())
}

// === (a) authorize vs trivial ===

async fn authorize_ratio() -> anyhow::Result<()> {
    let sim = AgentSim::builder().run_checks(false).start().await?;
    let c = sim.control();
    c.put_intention("web", "db", &json!({"Action": "allow"}))?;
    c.put_intention("*", "db", &json!({"Action": "deny"}))?;
    let td = c.trust_domain();
    let body = json!({"Target": "db", "ClientCertURI": format!("spiffe://{td}/ns/default/dc/dc1/svc/web")}).to_string();
    let bare = trivial_server().await?;
    let (mut sim_rps, mut same_rps, mut bare_rps) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        sim_rps.push(
            load(
                sim.addr(),
                Method::POST,
                "/v1/agent/connect/authorize",
                &body,
            )
            .await?,
        );
        same_rps.push(load(sim.addr(), Method::GET, "/v1/status/leader", "").await?);
        bare_rps.push(load(bare, Method::POST, "/trivial", &body).await?);
    }
    let (s, t, b) = (
        median(&mut sim_rps),
        median(&mut same_rps),
        median(&mut bare_rps),
    );
    println!("## (a) authorize throughput\n");
    println!(
        "| handler | requests/s (median of {ROUNDS} x {}s, {CONNECTIONS} keep-alive connections) |",
        ROUND.as_secs()
    );
    println!("|---|---|");
    println!("| agent-sim `POST /v1/agent/connect/authorize` | {s:.0} |");
    println!(
        "| trivial handler served the same way: agent-sim `GET /v1/status/leader` (same server, middleware, request log) | {t:.0} |"
    );
    println!(
        "| trivial handler on a bare hyper + axum server (no middleware, no request log) | {b:.0} |"
    );
    println!(
        "\nratio authorize / trivial served the same way: **{:.2}** (target >= 0.80)",
        s / t
    );
    println!(
        "\nratio authorize / bare trivial server: {:.2} (for information)\n",
        s / b
    );
    Ok(())
}

/// A trivial handler behind the same stack agent-sim uses: hyper http1 + an axum router.
async fn trivial_server() -> anyhow::Result<SocketAddr> {
    let app = Router::new().route(
        "/trivial",
        post(|| async { axum::Json(json!({"Authorized": true, "Reason": "x"})) }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let svc = hyper_util::service::TowerToHyperService::new(app.clone());
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Ok(addr)
}

async fn load(addr: SocketAddr, method: Method, path: &str, body: &str) -> anyhow::Result<f64> {
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + ROUND;
    let mut tasks = Vec::new();
    for _ in 0..CONNECTIONS {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        let (done, path, body, method) = (
            done.clone(),
            path.to_owned(),
            Bytes::from(body.to_owned()),
            method.clone(),
        );
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                let req = hyper::Request::builder()
                    .method(method.clone())
                    .uri(path.as_str())
                    .header("host", "bench")
                    .body(Full::new(body.clone()))?;
                let resp = send.send_request(req).await?;
                if !resp.status().is_success() {
                    bail!("status {}", resp.status());
                }
                resp.into_body().collect().await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, anyhow::Error>(())
        }));
    }
    let started = Instant::now();
    for t in tasks {
        t.await??;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

// === (b) 10k watchers ===

async fn watchers() -> anyhow::Result<()> {
    let sim = AgentSim::builder().run_checks(false).start().await?;
    let c = sim.control().clone();
    let rss_before = peak_rss_kib();
    let roots = reqwest_free_get(sim.addr(), "/v1/agent/connect/ca/roots").await?;
    let index = header(&roots, "x-consul-index").context("no index")?;
    let exe = std::env::current_exe()?;
    let mut child = tokio::process::Command::new(exe)
        .args([
            "--watch-clients",
            &sim.addr().to_string(),
            &WATCHERS.to_string(),
            &index,
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let started = Instant::now();
    while c.log().entries().iter().filter(|e| e.blocking).count() < WATCHERS {
        if started.elapsed() > Duration::from_secs(120) {
            bail!("watchers did not all connect");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let blocked_after = started.elapsed();
    let rotated_at = unix_ms();
    c.rotate_ca(true)?;
    let mut out = String::new();
    child
        .stdout
        .take()
        .context("stdout")?
        .read_to_string(&mut out)
        .await?;
    child.wait().await?;
    let last_ms: u128 = out
        .trim()
        .parse()
        .with_context(|| format!("child said {out:?}"))?;
    let peak_mib = peak_rss_kib().saturating_sub(0) as f64 / 1024.0;
    println!("## (b) {WATCHERS} blocking watchers on /v1/agent/connect/ca/roots\n");
    println!("| measure | value | target |");
    println!("|---|---|---|");
    println!(
        "| all watchers blocked after | {:.2} s | - |",
        blocked_after.as_secs_f64()
    );
    println!(
        "| last answer after the rotation | {} ms | < 1000 ms |",
        last_ms.saturating_sub(rotated_at)
    );
    println!(
        "| sim process peak RSS (VmHWM) | {peak_mib:.0} MiB (before watchers: {:.0} MiB) | < 300 MB |",
        rss_before as f64 / 1024.0
    );
    Ok(())
}

/// Child mode: open N blocking watches, then print the wall-clock ms of the last answer.
async fn watch_clients(args: &[String]) -> anyhow::Result<()> {
    raise_fd_limit();
    let addr: SocketAddr = args.first().context("addr")?.parse()?;
    let n: usize = args.get(1).context("n")?.parse()?;
    let index: u64 = args.get(2).context("index")?.parse()?;
    let path = format!("/v1/agent/connect/ca/roots?index={index}&wait=120s");
    let mut tasks = Vec::with_capacity(n);
    for _ in 0..n {
        let path = path.clone();
        tasks.push(tokio::spawn(async move {
            let resp = reqwest_free_get(addr, &path).await?;
            let new: u64 = header(&resp, "x-consul-index")
                .context("no index")?
                .parse()?;
            anyhow::ensure!(new > index, "woke without a newer index");
            Ok::<_, anyhow::Error>(unix_ms())
        }));
    }
    let mut last = 0;
    for t in tasks {
        last = last.max(t.await??);
    }
    println!("{last}");
    Ok(())
}

/// A minimal HTTP/1.1 GET: returns the header block (the body is read and dropped).
async fn reqwest_free_get(addr: SocketAddr, path: &str) -> anyhow::Result<String> {
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await?;
    let text = String::from_utf8_lossy(&buf);
    let head = text.split("\r\n\r\n").next().unwrap_or_default().to_owned();
    anyhow::ensure!(
        head.starts_with("HTTP/1.1 200"),
        "unexpected answer: {head}"
    );
    Ok(head)
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
    })
}

fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn raise_fd_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}
