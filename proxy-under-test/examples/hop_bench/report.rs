//! The run, start to end: apps child, agent-sim, every kind deployed and checked, the rounds, the
//! router changes, then everything printed as Markdown (stdout; progress on stderr).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::apps::AppPorts;
use crate::launch::{Deployed, Driver, Kind, deploy};
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
            args.phase_ms.unwrap_or(500),
            args.changes.unwrap_or(4),
        )
    } else {
        (
            args.rounds.unwrap_or(5),
            args.phase_ms.unwrap_or(1500),
            args.changes.unwrap_or(8),
        )
    };
    let load_start = procs::load_average();
    let t_start = Instant::now();
    let (_apps, ports) = start_apps().await?;
    let sim = mesh::start_sim().await?;
    let c = sim.control().clone();
    let dir = tempfile::tempdir()?;
    let mut deployed: Vec<Deployed> = Vec::new();
    for k in &kinds {
        let m = mesh::register(&c, &k.key, ports)?;
        eprintln!("starting {} ...", k.label);
        deployed.push(deploy(k.clone(), m, &sim, dir.path()).await?);
    }
    let mut handshakes = Vec::new();
    for d in &deployed {
        handshakes.push((d.kind.label.clone(), checks::second_handshake(&c, d).await?));
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
    let mut resumed = Vec::new();
    for d in deployed.iter().filter(|d| d.kind.is_envoy()) {
        resumed.push((d.kind.label.clone(), checks::envoy_resumptions(d).await?));
    }
    let mut change_rows = Vec::new();
    for d in &deployed {
        eprintln!("router changes: {}", d.kind.label);
        let t = checks::router_changes(&c, d, changes).await?;
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
            "- Envoy: `{v}`, `--concurrency {}`, configured by agent-sim's xDS",
            args.envoy_concurrency
        );
    }
    for k in &kinds {
        if let Driver::Ref { bin, env } = &k.driver {
            println!("- {}: `{}` {env:?}", k.label, bin.display());
        }
    }
    println!(
        "- {rounds_n} interleaved rounds, {phase} ms per phase and path; medians over rounds; \
         ratios are medians of same-round ratios\n"
    );
    let base = deployed
        .iter()
        .position(Deployed::is_envoy_kind)
        .map(|i| i + 1);
    let compared: Vec<usize> = (1..paths.len()).filter(|i| Some(*i) != base).collect();
    println!("{}", sheet.markdown(&compared, base));
    println!("TLS on B's public listener, a client offering resumption:");
    for (label, h) in &handshakes {
        println!("- {label}: {h}");
    }
    for (label, (reused, hs, tls12)) in &resumed {
        println!(
            "- {label}: over the run, B's public listener counted {hs} handshakes ({tls12} of them \
             TLS 1.2); A and B counted {reused} resumed sessions"
        );
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
    drop(sim);
    Ok(())
}
