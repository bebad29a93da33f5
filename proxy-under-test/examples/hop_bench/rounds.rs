//! Interleaved rounds: in every round each phase runs on every path back to back (the path order
//! rotates from round to round, and each phase waits for the machine to settle from the last),
//! so the paths of a round share the machine's background load; each phase records its figures
//! and, for proxied paths, the CPU seconds its processes used.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;

use crate::l4;
use crate::l7::{self, H2_STREAMS, Proto};
use crate::launch::Deployed;
use crate::sheet::{Sheet, Target, percentile};

/// A path: plain loopback to the apps, or through a kind's A -> mTLS -> B.
pub(crate) struct Path<'a> {
    pub(crate) label: String,
    pub(crate) entry: BTreeMap<&'static str, SocketAddr>,
    pub(crate) deployed: Option<&'a Deployed>,
}

impl Path<'_> {
    fn cpu(&self, dest: &str) -> f64 {
        self.deployed.map_or(f64::NAN, |d| d.cpu(dest))
    }
}

/// One L7 load shape.
struct L7Phase {
    name: &'static str,
    dest: &'static str,
    proto: Proto,
    conns: usize,
    per_conn: usize,
    path: &'static str,
    /// Targets on rps and p99 (issue 23) or rps and p50 (issue 19's router path).
    targets: [Option<Target>; 3],
}

fn l7_phases() -> Vec<L7Phase> {
    let hop = [Some(Target::AtLeast(1.3)), None, Some(Target::AtMost(1.0))];
    let routed = [Some(Target::AtLeast(1.0)), Some(Target::AtMost(1.0)), None];
    let mut v = Vec::new();
    for (name, dest, proto, path, t) in [
        ("HTTP/1.1 keep-alive", "h1", Proto::H1, "/bench", hop),
        ("HTTP/2", "h2", Proto::H2, "/bench", hop),
        ("gRPC unary", "grpc", Proto::Grpc, "/", hop),
        (
            "router+splitter HTTP/1.1",
            "api",
            Proto::H1,
            "/bench",
            routed,
        ),
        ("router+splitter HTTP/2", "api", Proto::H2, "/bench", routed),
    ] {
        let one = if proto == Proto::H1 { 1 } else { H2_STREAMS };
        v.push(L7Phase {
            name,
            dest,
            proto,
            conns: 1,
            per_conn: one,
            path,
            targets: t,
        });
        v.push(L7Phase {
            name,
            dest,
            proto,
            conns: 64,
            per_conn: 1,
            path,
            targets: t,
        });
    }
    v
}

/// Runs `rounds` rounds of every phase over `paths`, `dur` per phase and path.
/// Only the phases whose name contains `only` (all when empty): `L4 throughput`, `L4 round
/// trip`, `L4 new connections`, or an L7 name (`HTTP/1.1`, `HTTP/2`, `gRPC`, `router`).
pub(crate) async fn run(
    paths: &[Path<'_>],
    rounds: usize,
    dur: Duration,
    only: &str,
    sheet: &mut Sheet,
    splits: &mut BTreeMap<(usize, String), u64>,
) -> anyhow::Result<()> {
    let n = paths.len();
    let on = |name: &str| name.contains(only);
    for round in 0..rounds {
        eprintln!(
            "round {}/{rounds} (load average {:.2})",
            round + 1,
            crate::procs::load_average()
        );
        let order: Vec<usize> = (0..n).map(|i| (i + round) % n).collect();
        for &i in order.iter().filter(|_| on("L4 throughput")) {
            settled(&paths[i], "L4 throughput").await;
            l4_throughput(&paths[i], i, dur, sheet).await?;
        }
        for &i in order.iter().filter(|_| on("L4 round trip")) {
            let p = &paths[i];
            settled(p, "L4 round trip").await;
            let mut rt = l4::round_trips(p.entry["tcp"], dur)
                .await
                .with_context(|| format!("{}: round trips", p.label))?;
            sheet.add(
                "L4 64 B round trip p50, µs",
                Some(Target::AtMost(0.9)),
                1,
                i,
                percentile(&mut rt, 0.5),
            );
            sheet.add(
                "L4 64 B round trip p99, µs",
                Some(Target::AtMost(1.0)),
                1,
                i,
                percentile(&mut rt, 0.99),
            );
        }
        for &i in order.iter().filter(|_| on("L4 new connections")) {
            let p = &paths[i];
            settled(p, "L4 new connections").await;
            let cpu0 = p.cpu("tcp");
            let (count, secs) = l4::connections(p.entry["tcp"], dur)
                .await
                .with_context(|| format!("{}: new connections", p.label))?;
            let cpu = p.cpu("tcp") - cpu0;
            sheet.add(
                &format!(
                    "L4 new connections/s ({} clients, connect + 64 B echo)",
                    l4::CONNECTORS
                ),
                Some(Target::AtLeast(1.5)),
                0,
                i,
                count as f64 / secs,
            );
            sheet.add(
                "L4 pair CPU-s per 1k connections",
                None,
                2,
                i,
                cpu / (count as f64 / 1e3),
            );
        }
        for ph in l7_phases().into_iter().filter(|ph| on(ph.name)) {
            for &i in &order {
                settled(&paths[i], ph.name).await;
                l7_phase(&paths[i], i, &ph, dur, sheet, splits).await?;
            }
        }
    }
    Ok(())
}

/// Lets the machine settle before a phase ([`crate::procs::settle`]); says so when it did not.
async fn settled(p: &Path<'_>, phase: &str) {
    if !crate::procs::settle().await {
        eprintln!(
            "{}: {phase}: the machine was still busy 2 s after the previous phase; measuring anyway",
            p.label
        );
    }
}

async fn l4_throughput(
    p: &Path<'_>,
    i: usize,
    dur: Duration,
    sheet: &mut Sheet,
) -> anyhow::Result<()> {
    let cpu0 = p.cpu("tcp");
    let (bytes, secs) = l4::throughput(p.entry["tcp"], dur)
        .await
        .with_context(|| format!("{}: throughput", p.label))?;
    let cpu = p.cpu("tcp") - cpu0;
    sheet.add(
        "L4 one-stream throughput, MB/s",
        Some(Target::AtLeast(1.3)),
        0,
        i,
        bytes as f64 / secs / 1e6,
    );
    sheet.add(
        "L4 pair CPU-s per GB",
        Some(Target::AtMost(0.8)),
        2,
        i,
        cpu / (bytes as f64 / 1e9),
    );
    Ok(())
}

async fn l7_phase(
    p: &Path<'_>,
    i: usize,
    ph: &L7Phase,
    dur: Duration,
    sheet: &mut Sheet,
    splits: &mut BTreeMap<(usize, String), u64>,
) -> anyhow::Result<()> {
    let shape = if ph.conns == 1 {
        format!("1 conn, {} in flight", ph.per_conn)
    } else {
        format!("{} conns", ph.conns)
    };
    let cpu0 = p.cpu(ph.dest);
    let mut o = l7::load(
        p.entry[ph.dest],
        ph.proto,
        ph.conns,
        ph.per_conn,
        ph.path,
        dur,
    )
    .await
    .with_context(|| format!("{}: {} {shape}", p.label, ph.name))?;
    let cpu = p.cpu(ph.dest) - cpu0;
    let ok = o.latencies.len() as f64;
    let name = format!("{} ({shape})", ph.name);
    let [rps, p50, p99] = ph.targets;
    sheet.add(&format!("{name} req/s"), rps, 0, i, ok / o.secs);
    sheet.add(
        &format!("{name} p50, µs"),
        p50,
        0,
        i,
        percentile(&mut o.latencies, 0.5),
    );
    sheet.add(
        &format!("{name} p99, µs"),
        p99,
        0,
        i,
        percentile(&mut o.latencies, 0.99),
    );
    sheet.add(
        &format!("{name} pair CPU-µs per request"),
        None,
        1,
        i,
        cpu / ok * 1e6,
    );
    if o.failed > 0 {
        eprintln!("{}: {name}: {} failed requests", p.label, o.failed);
        *splits.entry((i, "failed".into())).or_default() += o.failed;
    }
    if ph.dest == "api" {
        for (inst, n) in o.instances {
            *splits.entry((i, inst)).or_default() += n;
        }
    }
    Ok(())
}
