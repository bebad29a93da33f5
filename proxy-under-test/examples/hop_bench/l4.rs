//! The L4 load: one stream into the sink (throughput), 64-byte echoes on one open connection
//! (round trips), and new connections each carrying one 64-byte echo, from a few concurrent
//! clients (connections per second; every proxied one is a full mTLS handshake on the hop).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::socket::{setsockopt, sockopt::IpBindAddressNoPort};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinSet;

/// Bytes per write of the throughput stream.
const CHUNK: usize = 64 * 1024;
/// Round-trip message size.
pub(crate) const SMALL: usize = 64;
/// Concurrent clients opening new connections.
pub(crate) const CONNECTORS: usize = 4;

/// Loopback source addresses the clients take in turn (127.0.1.0 to 127.0.1.255).
const SOURCES: u32 = 256;

/// Connects from the next of [`SOURCES`] loopback addresses, the port left to `connect`
/// (`IP_BIND_ADDRESS_NO_PORT`). Every client connection ends in TIME_WAIT on this side, tens
/// of thousands a minute (plain loopback alone makes 15,000 a second), and from one source
/// address the kernel's ephemeral-port search in `connect` walks past them: 11% of the
/// machine's samples in the new-connections phase, in the load generator, on every
/// connection's path and the same for every proxy. From 256 addresses it takes the first port.
async fn connect(addr: SocketAddr) -> anyhow::Result<TcpStream> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let s = match addr {
        SocketAddr::V4(v4) if v4.ip().is_loopback() => {
            let n = NEXT.fetch_add(1, Ordering::Relaxed) % SOURCES;
            let sock = TcpSocket::new_v4()?;
            setsockopt(&sock, IpBindAddressNoPort, &true)?;
            sock.bind(SocketAddr::from((Ipv4Addr::new(127, 0, 1, n as u8), 0)))?;
            sock.connect(addr).await?
        }
        _ => TcpStream::connect(addr).await?,
    };
    s.set_nodelay(true)?;
    Ok(s)
}

/// Streams into the sink for `dur`; returns the bytes the sink counted (checked against the
/// bytes sent) and the seconds until its answer.
pub(crate) async fn throughput(addr: SocketAddr, dur: Duration) -> anyhow::Result<(u64, f64)> {
    let mut s = connect(addr).await?;
    s.write_all(b"S").await?;
    let chunk = vec![0x5au8; CHUNK];
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < dur {
        s.write_all(&chunk).await?;
        sent += CHUNK as u64;
    }
    s.shutdown().await?;
    let mut count = [0u8; 8];
    s.read_exact(&mut count)
        .await
        .context("sink's byte count")?;
    let secs = start.elapsed().as_secs_f64();
    let got = u64::from_be_bytes(count);
    if got != sent {
        bail!("sink counted {got} bytes, {sent} sent");
    }
    Ok((sent, secs))
}

async fn echo(s: &mut TcpStream) -> anyhow::Result<()> {
    let msg = [0x42u8; SMALL];
    let mut buf = [0u8; SMALL];
    s.write_all(&msg).await?;
    s.read_exact(&mut buf).await?;
    if buf != msg {
        bail!("echo changed the bytes");
    }
    Ok(())
}

/// 64-byte round trips on one open echo connection for `dur` (after 200 unmeasured ones).
pub(crate) async fn round_trips(addr: SocketAddr, dur: Duration) -> anyhow::Result<Vec<Duration>> {
    let mut s = connect(addr).await?;
    s.write_all(b"E").await?;
    for _ in 0..200 {
        echo(&mut s).await?;
    }
    let mut out = Vec::with_capacity(20_000);
    let start = Instant::now();
    while start.elapsed() < dur {
        let t = Instant::now();
        echo(&mut s).await?;
        out.push(t.elapsed());
    }
    Ok(out)
}

/// One new connection with one echo on it.
pub(crate) async fn one_connection(addr: SocketAddr) -> anyhow::Result<()> {
    let mut s = connect(addr).await?;
    s.write_all(b"E").await?;
    echo(&mut s).await
}

/// New connections (each: connect, one echo, close) from `CONNECTORS` clients for `dur`;
/// returns how many completed and the seconds taken.
pub(crate) async fn connections(addr: SocketAddr, dur: Duration) -> anyhow::Result<(u64, f64)> {
    let start = Instant::now();
    let mut set = JoinSet::new();
    for _ in 0..CONNECTORS {
        set.spawn(async move {
            let mut n = 0u64;
            while start.elapsed() < dur {
                one_connection(addr).await?;
                n += 1;
            }
            Ok::<_, anyhow::Error>(n)
        });
    }
    let mut total = 0;
    while let Some(r) = set.join_next().await {
        total += r??;
    }
    Ok((total, start.elapsed().as_secs_f64()))
}
