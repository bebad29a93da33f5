//! Benchmark of one mTLS proxy hop, the reference proxy against Envoy in the same run:
//! throughput over one connection (a large stream into a sink), small request/response round
//! trips on an open connection, and new connections (connect + one round trip, sequential, so
//! also connections per second). Paths to the same local app, measured in alternating batches:
//! plain loopback TCP; client mTLS -> proxy-under-test -> app; client mTLS -> Envoy -> app; and
//! the two-sidecar hop client -> sidecar A (plain) -> mTLS -> sidecar B -> app for both the
//! reference proxy and an Envoy pair. Prints Markdown tables.
//!
//! Run with `cargo run --release -p proxy-under-test --example bench [-- [MiB] [--envoy PATH]]`;
//! `bench -- grpc [--envoy PATH]` measures gRPC unary calls through a sidecar pair instead
//! (`grpc.rs`).
//! (MiB streamed per round, default 1024; Envoy defaults to the workspace's
//! `.tools/envoy-1.40.0/envoy/_bin/envoy`, and without it the Envoy paths are skipped). The
//! proxies run in-process against an in-process agent-sim, Envoy as child processes with static
//! bootstraps and `--concurrency 1`; every phase has a time cap (streams 8 s, round-trip phases
//! 6 s each), so the whole run stays around a minute.

mod envoy;
mod envoy_grpc;
mod grpc;
mod setup;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsConnector;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const CHUNK: usize = 64 * 1024;
const SMALL: usize = 64;
const ROUND_TRIPS: usize = 10_000;
const CONNECTS: usize = 300;
const STREAM_CAP: Duration = Duration::from_secs(8);
const STREAM_ROUNDS: usize = 3;
const PHASE_CAP: Duration = Duration::from_secs(6);
const BATCHES: usize = 10;

/// The app behind the proxy. First byte `S`: sink (read to EOF, answer the byte count as a
/// big-endian u64); `E`: echo.
async fn app() -> Result<SocketAddr, BoxError> {
    let l = TcpListener::bind("127.0.0.1:0").await?;
    let addr = l.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                let mut mode = [0u8; 1];
                if s.read_exact(&mut mode).await.is_err() {
                    return;
                }
                if mode[0] == b'S' {
                    let mut buf = vec![0u8; CHUNK];
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
    });
    Ok(addr)
}

/// How to reach the app: plain TCP (to the app or a sidecar's upstream listener), or mTLS
/// with a `web` leaf to a sidecar's public listener.
#[derive(Clone)]
enum Path {
    Plain(SocketAddr),
    Tls(SocketAddr, Arc<ClientConfig>),
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

impl Path {
    async fn connect(&self) -> Result<Box<dyn Io>, BoxError> {
        match self {
            Self::Plain(addr) => {
                let s = TcpStream::connect(addr).await?;
                s.set_nodelay(true)?;
                Ok(Box::new(s))
            }
            Self::Tls(addr, cfg) => {
                let s = TcpStream::connect(addr).await?;
                s.set_nodelay(true)?;
                let name = ServerName::try_from("db.default.dc1.internal.consul")?;
                Ok(Box::new(
                    TlsConnector::from(cfg.clone()).connect(name, s).await?,
                ))
            }
        }
    }
}

/// Streams up to `mib` MiB (or until `STREAM_CAP`) into the sink; returns (bytes, seconds).
async fn throughput(path: &Path, mib: u64) -> Result<(u64, f64), BoxError> {
    let mut s = path.connect().await?;
    s.write_all(b"S").await?;
    let chunk = vec![0x5au8; CHUNK];
    let goal = mib * 1024 * 1024;
    let start = Instant::now();
    let mut sent = 0u64;
    while sent < goal && start.elapsed() < STREAM_CAP {
        s.write_all(&chunk).await?;
        sent += CHUNK as u64;
    }
    s.flush().await?;
    s.shutdown().await?;
    let mut count = [0u8; 8];
    s.read_exact(&mut count).await?;
    let secs = start.elapsed().as_secs_f64();
    let got = u64::from_be_bytes(count);
    if got != sent {
        return Err(format!("sink counted {got} bytes, {sent} sent").into());
    }
    Ok((sent, secs))
}

/// `n` small round trips on an open echo connection, appending each duration to `out`.
async fn round_trips_on(
    s: &mut Box<dyn Io>,
    n: usize,
    out: &mut Vec<Duration>,
) -> Result<(), BoxError> {
    let msg = [0x42u8; SMALL];
    let mut buf = [0u8; SMALL];
    for _ in 0..n {
        let t = Instant::now();
        s.write_all(&msg).await?;
        s.read_exact(&mut buf).await?;
        out.push(t.elapsed());
    }
    Ok(())
}

/// Small round trips on one connection per path, after a warm-up, in alternating batches so
/// every path sees the same background load; returns the durations per path.
async fn round_trips(paths: &[&Path]) -> Result<Vec<Vec<Duration>>, BoxError> {
    let mut conns = Vec::new();
    let mut warm = Vec::new();
    for p in paths {
        let mut s = p.connect().await?;
        s.write_all(b"E").await?;
        round_trips_on(&mut s, 500, &mut warm).await?;
        conns.push(s);
    }
    let mut out = vec![Vec::new(); paths.len()];
    let phase = Instant::now();
    for _ in 0..BATCHES {
        for (s, o) in conns.iter_mut().zip(out.iter_mut()) {
            round_trips_on(s, ROUND_TRIPS / BATCHES, o).await?;
        }
        if phase.elapsed() > PHASE_CAP {
            break;
        }
    }
    Ok(out)
}

/// A new connection (TCP, or TCP + mTLS handshake) plus one small round trip, `n` times.
async fn connects(path: &Path, n: usize, out: &mut Vec<Duration>) -> Result<(), BoxError> {
    let msg = [0x42u8; SMALL];
    let mut buf = [0u8; SMALL];
    for _ in 0..n {
        let t = Instant::now();
        let mut s = path.connect().await?;
        s.write_all(b"E").await?;
        s.write_all(&msg).await?;
        s.read_exact(&mut buf).await?;
        out.push(t.elapsed());
    }
    Ok(())
}

/// New-connection round trips in alternating batches; returns the durations per path.
async fn connect_round_trips(paths: &[&Path]) -> Result<Vec<Vec<Duration>>, BoxError> {
    let mut out = vec![Vec::new(); paths.len()];
    let phase = Instant::now();
    for _ in 0..BATCHES {
        for (p, o) in paths.iter().zip(out.iter_mut()) {
            connects(p, CONNECTS / BATCHES, o).await?;
        }
        if phase.elapsed() > PHASE_CAP {
            break;
        }
    }
    Ok(out)
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples.get(i).copied().unwrap_or_default()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_unstable_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!(
        "{cpus} CPUs ({model}), loopback; client, reference proxies, app and agent-sim in one \
         process (multi-thread tokio runtime), each Envoy its own process with --concurrency 1"
    )
}

async fn run(mib: u64, envoy_bin: &std::path::Path) -> Result<(), BoxError> {
    let app = app().await?;
    let world = setup::world(app, envoy_bin).await?;
    let paths: Vec<&Path> = world.paths.iter().map(|(_, p)| p).collect();

    // Alternate the paths' streams; report the median of each.
    let mut rates = vec![Vec::new(); paths.len()];
    let mut streamed = vec![0u64; paths.len()];
    for _ in 0..STREAM_ROUNDS {
        for (i, p) in paths.iter().enumerate() {
            let (bytes, secs) = throughput(p, mib).await?;
            rates[i].push(bytes as f64 / secs / 1e6);
            streamed[i] = bytes >> 20;
        }
    }
    let mut rt = round_trips(&paths).await?;
    let mut nc = connect_round_trips(&paths).await?;

    println!("Machine: {}", machine());
    if let Some(v) = &world.envoy_version {
        println!("Envoy: {v}");
    }
    println!();
    println!(
        "| path | throughput, 1 connection (median of {STREAM_ROUNDS}) | {SMALL} B round trip p50 | p99 \
         | new connection + round trip p50 | p99 | new connections/s (sequential) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (i, (label, _)) in world.paths.iter().enumerate() {
        let conns_per_s = nc[i].len() as f64 / nc[i].iter().map(Duration::as_secs_f64).sum::<f64>();
        println!(
            "| {label} | {:.0} MB/s ({} MiB) | {} | {} | {} | {} | {:.0} |",
            median(&mut rates[i]),
            streamed[i],
            micros(percentile(&mut rt[i], 0.5)),
            micros(percentile(&mut rt[i], 0.99)),
            micros(percentile(&mut nc[i], 0.5)),
            micros(percentile(&mut nc[i], 0.99)),
            conns_per_s,
        );
    }
    println!();
    println!(
        "samples per path: round trips {}, new connections {}",
        rt.first().map_or(0, Vec::len),
        nc.first().map_or(0, Vec::len)
    );
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let mut mib = 1024;
    let mut envoy_bin = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../.tools/envoy-1.40.0/envoy/_bin/envoy");
    let mut grpc = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "grpc" => grpc = true,
            "--envoy" => envoy_bin = args.next().ok_or("--envoy needs a path")?.into(),
            n => mib = n.parse::<u64>().map_err(|e| format!("{n:?}: {e}"))?,
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    rt.block_on(async {
        // Ctrl-C or SIGTERM ends the run; dropping the world kills the Envoy children.
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = async {
                if grpc {
                    grpc::run(&envoy_bin).await
                } else {
                    run(mib, &envoy_bin).await
                }
            } => r,
            _ = tokio::signal::ctrl_c() => Err("interrupted".into()),
            _ = term.recv() => Err("terminated".into()),
        }
    })?;
    eprintln!("bench took {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}
