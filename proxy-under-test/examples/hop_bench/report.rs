//! The run, start to end: apps child, agent-sim, every kind deployed and checked, the rounds, the
//! router changes, then everything printed as Markdown (stdout; progress on stderr).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::apps::AppPorts;
use crate::launch::{Deployed, Driver, Kind, Plane, deploy};
use crate::rounds::Path;
use crate::sheet::{Sheet, median};
use crate::{Args, checks, mesh, procs, rounds};

async fn start_apps() -> anyhow::Result<(procs::Proc, AppPorts)> {
    let mut cmd = tokio::process::Command::new(std::env::current_exe()?);
    cmd.arg("--apps");
    let mut p = procs::Proc::spawn("apps", cmd, None)?;
    let out = p.stdout().context("apps stdout")?;
    let mut line = String::new();
    tokio::time::timeout(
        Duration::from_secs(10),
        BufReader::new(out).read_line(&mut line),
    )
    .await
    .context("the apps did not start")??;
    Ok((p, serde_json::from_str(&line).context("apps' port line")?))
}

fn envoy_version(kinds: &[Kind]) -> Option<String> {
    kinds.iter().find_map(|k| match &k.driver {
        Driver::Envoy { bin, .. } => std::process::Command::new(bin)
            .arg("--version")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned()),
        Driver::Ref { .. } => None,
    })
}

pub(crate) async fn run(args: &Args, kinds: Vec<Kind>) -> anyhow::Result<()> {
    let (rounds_n, phase, changes) = if args.quick {
        (
            args.rounds.unwrap_or(3),
            args.phase_ms.unwrap_or(400),
            args.changes.unwrap_or(4),
        )
    } else {
        (
            args.rounds.unwrap_or(5),
            args.phase_ms.unwrap_or(1200),
            args.changes.unwrap_or(8),
        )
    };
    let load_start = procs::load_average();
    let t_start = Instant::now();
    let (_apps, ports) = start_apps().await?;
    // One sim per plane: the `mesh` entry and the render option are sim-wide.
    let sim = mesh::start_sim(false).await?;
    let sim_full = if kinds.iter().any(|k| k.plane == Plane::Full) {
        Some(mesh::start_sim(true).await?)
    } else {
        None
    };
    let plane = |p: Plane| match (p, &sim_full) {
        (Plane::Full, Some(s)) => s,
        _ => &sim,
    };
    let tmp = tempfile::tempdir()?;
    let dir = match &args.logs {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => tmp.path().to_path_buf(),
    };
    let mut deployed: Vec<Deployed> = Vec::new();
    for k in &kinds {
        let s = plane(k.plane);
        let m = mesh::register(s.control(), &k.key, ports)?;
        eprintln!("starting {} ...", k.label);
        deployed.push(deploy(k.clone(), m, s, &dir).await?);
    }
    let mut handshakes = Vec::new();
    for d in &deployed {
        let c = plane(d.kind.plane).control();
        handshakes.push((d.kind.label.clone(), checks::second_handshake(c, d).await?));
    }

    let plain = Path {
        label: "plain loopback".into(),
        entry: [
            ("tcp", ports.tcp),
            ("h1", ports.http),
            ("h2", ports.http),
            ("grpc", ports.http),
            ("api", ports.v1),
        ]
        .into_iter()
        .map(|(k, p)| (k, AppPorts::addr(p)))
        .collect(),
        deployed: None,
    };
    let mut paths = vec![plain];
    for d in &deployed {
        paths.push(Path {
            label: d.kind.label.clone(),
            entry: d.mesh.entry.clone(),
            deployed: Some(d),
        });
    }
    let mut sheet = Sheet::new(paths.iter().map(|p| p.label.clone()).collect());
    let mut splits = BTreeMap::new();
    let only = args.only.as_deref().unwrap_or("");
    let dur = Duration::from_millis(phase);
    rounds::run(&paths, rounds_n, dur, only, &mut sheet, &mut splits).await?;
    for (i, d) in deployed.iter().enumerate() {
        let all: Vec<f64> = std::iter::once(&d.a)
            .chain(d.b.values())
            .map(procs::Proc::peak_rss_mib)
            .collect();
        let max = all.iter().copied().fold(0.0, f64::max);
        sheet.add(
            "peak RSS per process (max of the 7), MiB",
            None,
            1,
            i + 1,
            max,
        );
        let pair = d.a.peak_rss_mib() + d.b["tcp"].peak_rss_mib();
        sheet.add("peak RSS A + B(tcp), MiB", None, 1, i + 1, pair);
    }
    let mut envoy_tls = Vec::new();
    for d in deployed.iter().filter(|d| !d.admin.is_empty()) {
        envoy_tls.push((d.kind.clone(), checks::envoy_tls(d).await?));
    }
    // Router changes time xDS delivery, which the TLS plane does not change: envoy-full is left
    // out when envoy-consul runs (a bounded run).
    let consul_envoy = kinds
        .iter()
        .any(|k| k.is_envoy() && k.plane == Plane::Consul);
    let mut change_rows = Vec::new();
    for d in &deployed {
        if (d.kind.is_envoy() && d.kind.plane == Plane::Full && consul_envoy) || d.kind.is_mixed() {
            continue;
        }
        eprintln!("router changes: {}", d.kind.label);
        let c = plane(d.kind.plane).control();
        let t = checks::router_changes(c, d, changes).await?;
        change_rows.push((d.kind.label.clone(), t));
    }
    let load_end = procs::load_average();

    println!("## hop_bench results\n");
    println!("- machine: {}", procs::machine());
    println!(
        "- load average (1 min) at start {load_start:.2}, at end {load_end:.2}; run took {:.0} s",
        t_start.elapsed().as_secs_f64()
    );
    if let Some(v) = envoy_version(&kinds) {
        println!(
            "- Envoy: `{v}`, `--concurrency {}`, configured by agent-sim's xDS; `envoy-full`: a \
             `mesh` entry with TLS 1.3 as floor and ceiling both ways and agent-sim's sim-only \
             `xds_no_tls_resumption` and `xds_tls_ecdh_curves` X25519 (not Consul's rendering), \
             the issue's comparison and the targets' base; `envoy-consul`: as Consul renders it \
             (no `mesh` entry)",
            args.envoy_concurrency
        );
    }
    for k in kinds.iter().filter(|k| !k.is_mixed()) {
        if let Driver::Ref { bin, env } = &k.driver {
            println!("- {}: `{}` {env:?}", k.label, bin.display());
        }
    }
    if kinds.iter().any(Kind::is_mixed) {
        println!(
            "- `envoy→ref`: Envoy's A (as Consul renders it) calling the reference proxy's B; \
             `ref→envoy`: the reference proxy's A calling Envoy's B (both on the first sim)"
        );
    }
    println!(
        "- {rounds_n} interleaved rounds, {phase} ms per phase and path; medians over rounds; \
         ratios are medians of same-round ratios\n"
    );
    // Envoy paths in kind order (envoy-full first: the targets' base).
    let bases: Vec<usize> = (0..deployed.len())
        .filter(|&i| deployed[i].is_envoy_kind())
        .map(|i| i + 1)
        .collect();
    let compared: Vec<usize> = (1..paths.len()).filter(|i| !bases.contains(i)).collect();
    println!("{}", sheet.markdown(&compared, &bases));
    println!(
        "TLS on B's public listener, probed by the reference proxy's outbound TLS config with \
         resumption turned on (two connections; the second's handshake):"
    );
    for (label, h) in &handshakes {
        println!("- {label}: {h}");
    }
    println!("\nEnvoy's own TLS counters over the run:");
    for (k, (a, b)) in &envoy_tls {
        if let Some(a) = a {
            println!("- {}: A's upstream clusters: {a}", k.label);
        }
        if let Some(b) = b {
            println!("- {}: B(tcp)'s public listener: {b}", k.label);
        }
        let ends = || a.iter().chain(b);
        let reused: u64 = ends().map(|t| t.reused).sum();
        let not13 = ends()
            .flat_map(|t| t.versions.keys())
            .any(|v| v != "TLSv1.3");
        let not_x25519 = ends().flat_map(|t| t.curves.keys()).any(|c| c != "X25519");
        if k.plane == Plane::Full && (reused > 0 || not13 || not_x25519) {
            println!(
                "- **{}: the hop resumed sessions or negotiated something other than TLS 1.3 \
                 with X25519: not the issue's comparison**",
                k.label
            );
        }
    }
    println!(
        "\nAnswers on the router+splitter path (`/bench` falls through to the 50/50 splitter):"
    );
    for ((i, inst), n) in &splits {
        println!("- {}: {inst}: {n}", paths[*i].label);
    }
    println!(
        "\n| router change (service-router write) → first request on the new route | p50 ms | max ms | changes |"
    );
    println!("|---|---:|---:|---:|");
    for (label, t) in &change_rows {
        let ms: Vec<f64> = t.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        let max = ms.iter().copied().fold(0.0, f64::max);
        println!("| {label} | {:.1} | {max:.1} | {} |", median(&ms), ms.len());
    }
    drop(paths);
    drop(deployed);
    drop(sim_full);
    drop(sim);
    Ok(())
}
