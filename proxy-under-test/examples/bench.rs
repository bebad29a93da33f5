//! Benchmark of one proxy hop: mTLS throughput over one connection (a large stream into a sink)
//! and added latency of small request/response round trips (on one connection, and with a new
//! connection each time), client -> proxy inbound (mTLS) -> local app, against plain loopback
//! TCP to the same app, in the same run. Prints a Markdown table.
//!
//! Run with `cargo run --release -p proxy-under-test --example bench` (optional argument: MiB to
//! stream per round, default 1024). The proxy runs in-process against an in-process agent-sim;
//! every phase has a time cap (streams 8 s, round-trip phases 6 s each), so the whole run stays
//! under a minute.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proxy_under_test::tls::{ExpectedServer, Leaf, TrustRoots};
use proxy_under_test::{AgentClient, Proxy};
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use serde_json::json;
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

/// How to reach the app: directly or through the proxy with a `web` leaf.
#[derive(Clone)]
enum Path {
    Plain(SocketAddr),
    Proxy(SocketAddr, Arc<ClientConfig>),
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
            Self::Proxy(addr, cfg) => {
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
/// both paths see the same background load; returns (plain, proxied) durations.
async fn round_trips(plain: &Path, via: &Path) -> Result<(Vec<Duration>, Vec<Duration>), BoxError> {
    let (mut a, mut b) = (plain.connect().await?, via.connect().await?);
    a.write_all(b"E").await?;
    b.write_all(b"E").await?;
    let mut warm = Vec::new();
    round_trips_on(&mut a, 500, &mut warm).await?;
    round_trips_on(&mut b, 500, &mut warm).await?;
    let (mut pa, mut pb) = (Vec::new(), Vec::new());
    let phase = Instant::now();
    for _ in 0..BATCHES {
        round_trips_on(&mut a, ROUND_TRIPS / BATCHES, &mut pa).await?;
        round_trips_on(&mut b, ROUND_TRIPS / BATCHES, &mut pb).await?;
        if phase.elapsed() > PHASE_CAP {
            break;
        }
    }
    Ok((pa, pb))
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

/// New-connection round trips in alternating batches; returns (plain, proxied) durations.
async fn connect_round_trips(
    plain: &Path,
    via: &Path,
) -> Result<(Vec<Duration>, Vec<Duration>), BoxError> {
    let (mut pa, mut pb) = (Vec::new(), Vec::new());
    let phase = Instant::now();
    for _ in 0..BATCHES {
        connects(plain, CONNECTS / BATCHES, &mut pa).await?;
        connects(via, CONNECTS / BATCHES, &mut pb).await?;
        if phase.elapsed() > PHASE_CAP {
            break;
        }
    }
    Ok((pa, pb))
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

fn diff(plain: Duration, via: Duration) -> String {
    let d = via.as_secs_f64() - plain.as_secs_f64();
    format!("{:+.1} µs", d * 1e6)
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// Starts agent-sim, the app and the proxy for `db`; returns both paths to the app.
async fn setup() -> Result<(agent_sim::Listening, Path, Path), BoxError> {
    let sim = agent_sim::AgentSim::builder()
        .run_checks(false)
        .start()
        .await?;
    let c = sim.control();
    let app = app().await?;
    let public = TcpListener::bind("127.0.0.1:0").await?.local_addr()?.port();
    c.register(
        &json!({"Name": "db", "Address": "127.0.0.1", "Port": app.port(),
        "Connect": {"SidecarService": {"Port": public}}}),
    )?;
    c.put_intention("web", "db", &json!({"Action": "allow"}))?;
    let proxy = Proxy::new(
        AgentClient::new(&sim.http_addr(), None)?,
        "db-sidecar-proxy",
    )
    .start()
    .await?;
    let id = c.issue_identity("web")?;
    let leaf = Leaf::from_pem(&id.cert_chain_pem, &id.private_key_pem)?;
    let roots = TrustRoots::from_pems(c.root_pems().iter().map(String::as_str), "")?;
    let expected = ExpectedServer {
        namespace: "default".into(),
        datacenter: "dc1".into(),
        service: "db".into(),
    };
    let cfg = proxy_under_test::tls::outbound(&leaf, &roots, expected)?;
    let via = Path::Proxy(proxy.inbound_addr(), cfg);
    // The proxy lives as long as the process; the data plane stops when it is dropped.
    std::mem::forget(proxy);
    Ok((sim, Path::Plain(app), via))
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
    format!("{cpus} CPUs ({model}), loopback, client, proxy and app in one process")
}

async fn run(mib: u64) -> Result<(), BoxError> {
    let (_sim, plain, via) = setup().await?;
    let mut rows: Vec<[String; 4]> = Vec::new();

    // Alternate plain and proxied streams; report the median of each.
    let (mut pts, mut vts, mut streamed) = (Vec::new(), Vec::new(), (0, 0));
    for _ in 0..STREAM_ROUNDS {
        let (pb, ps) = throughput(&plain, mib).await?;
        let (vb, vs) = throughput(&via, mib).await?;
        pts.push(pb as f64 / ps / 1e6);
        vts.push(vb as f64 / vs / 1e6);
        streamed = (pb >> 20, vb >> 20);
    }
    let (pt, vt) = (median(&mut pts), median(&mut vts));
    rows.push([
        format!(
            "throughput, one connection, median of {STREAM_ROUNDS} ({} MiB / {} MiB each)",
            streamed.0, streamed.1
        ),
        format!("{pt:.0} MB/s"),
        format!("{vt:.0} MB/s"),
        format!("{:.0}% of plain", vt / pt * 100.0),
    ]);

    let (mut p, mut v) = round_trips(&plain, &via).await?;
    for (name, q) in [("p50", 0.5), ("p99", 0.99)] {
        let (a, b) = (percentile(&mut p, q), percentile(&mut v, q));
        rows.push([
            format!(
                "{SMALL} B round trip, same connection, {name} (n = {} / {})",
                p.len(),
                v.len()
            ),
            micros(a),
            micros(b),
            diff(a, b),
        ]);
    }

    let (mut p, mut v) = connect_round_trips(&plain, &via).await?;
    for (name, q) in [("p50", 0.5), ("p99", 0.99)] {
        let (a, b) = (percentile(&mut p, q), percentile(&mut v, q));
        rows.push([
            format!(
                "new connection + {SMALL} B round trip, {name} (n = {} / {})",
                p.len(),
                v.len()
            ),
            micros(a),
            micros(b),
            diff(a, b),
        ]);
    }

    println!("Machine: {}", machine());
    println!();
    println!("| measurement | plain loopback TCP | via proxy-under-test (mTLS) | difference |");
    println!("|---|---:|---:|---:|");
    for r in rows {
        println!("| {} | {} | {} | {} |", r[0], r[1], r[2], r[3]);
    }
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let mib = std::env::args()
        .nth(1)
        .map(|a| a.parse::<u64>())
        .transpose()?
        .unwrap_or(1024);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    rt.block_on(run(mib))?;
    eprintln!("bench took {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}
