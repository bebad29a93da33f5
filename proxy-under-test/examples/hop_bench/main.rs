//! `hop_bench`: one mTLS hop between two sidecars, every proxy as separate processes, the
//! reference proxy against Envoy 1.40 in the same run (issue 23; issue 19's routed L7 path):
//! client -> A (upstream listener) -> mTLS -> B (public listener) -> app, plain loopback to the
//! same apps as the ceiling. agent-sim runs in this process as the control plane (HTTP API for the
//! reference proxy, xDS for Envoy, certificates for both); the apps run in a child process; the
//! load generator (tokio + hyper) here. Two Envoy variants: `envoy-full` (the hop pinned to
//! TLS 1.3 by a `mesh` entry, resumption off by agent-sim's sim-only render option: the issue's
//! comparison, which the targets are checked against) and `envoy-consul` (as Consul renders it:
//! TLS 1.2 on the hop, sessions resumed). Interleaved rounds, medians, same-round ratios, CPU
//! seconds of each pair from `/proc/<pid>/stat`, peak RSS (`VmHWM`). Prints Markdown.
//!
//! `cargo run --release -p proxy-under-test --example hop_bench -- [--quick]` (see `--help`).

mod apps;
mod checks;
mod l4;
mod l7;
mod launch;
mod mesh;
mod procs;
mod report;
mod rounds;
mod sheet;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;

use crate::launch::{Driver, Kind, Plane};

/// One mTLS hop between two sidecars: the reference proxy against Envoy, separate processes.
#[derive(Debug, Parser)]
#[command(name = "hop_bench")]
pub(crate) struct Args {
    /// Short run (3 rounds of 0.4 s phases, 4 router changes): about a minute and a half.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Interleaved rounds (default 5; 3 with --quick).
    #[arg(long)]
    pub(crate) rounds: Option<usize>,
    /// Milliseconds per phase and path in each round (default 1200; 400 with --quick).
    #[arg(long)]
    pub(crate) phase_ms: Option<u64>,
    /// Router changes timed per proxy (default 8; 4 with --quick).
    #[arg(long)]
    pub(crate) changes: Option<usize>,
    /// The reference proxy binary (default: `proxy-under-test` beside this program's directory,
    /// built first when run through `cargo run`).
    #[arg(long)]
    pub(crate) ref_bin: Option<PathBuf>,
    /// Another reference-proxy variant, `LABEL=PATH[,VAR=VALUE...]` (repeatable), e.g.
    /// `--also 'before=/tmp/put-before'` or `--also '2 threads=target/release/proxy-under-test,TOKIO_WORKER_THREADS=2'`.
    #[arg(long)]
    pub(crate) also: Vec<String>,
    /// The Envoy binary (default: the workspace's `.tools/envoy-1.40.0/envoy/_bin/envoy`).
    #[arg(long, env = "ENVOY_BIN")]
    pub(crate) envoy: Option<PathBuf>,
    /// Envoy's `--concurrency` (both Envoy variants).
    #[arg(long, default_value_t = 1)]
    pub(crate) envoy_concurrency: u32,
    /// Leave out `envoy-consul` (Envoy as Consul renders it: the hop at TLS 1.2 with resumed
    /// sessions) and run only `envoy-full` (TLS 1.3, full handshakes: the comparison).
    #[arg(long)]
    pub(crate) no_envoy_consul: bool,
    /// Also run the two mixed meshes, in the same rounds: Envoy's A calling the reference
    /// proxy's B (`envoy→ref`, Envoy as Consul renders it: TLS 1.2 on the hop) and the
    /// reference proxy's A calling Envoy's B (`ref→envoy`). Every path is checked through
    /// both before measuring: the two interoperate.
    #[arg(long)]
    pub(crate) mixed: bool,
    /// Only the phases whose name contains this (`L4 throughput`, `L4 round trip`,
    /// `L4 new connections`, `HTTP/1.1`, `HTTP/2`, `gRPC`, `router`).
    #[arg(long)]
    pub(crate) only: Option<String>,
    /// Keep every sidecar's log and Envoy bootstrap in this directory (default: a temporary
    /// directory, removed at the end).
    #[arg(long)]
    pub(crate) logs: Option<PathBuf>,
    /// Give up (and end every process) after this many minutes.
    #[arg(long, default_value_t = 20)]
    pub(crate) max_minutes: u64,
    /// Internal: run the applications (the child process).
    #[arg(long, hide = true)]
    pub(crate) apps: bool,
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Variables `cargo run` sets for the program it runs (the package's manifest, metadata and
/// build-script output directory), which a nested `cargo build` must not inherit.
fn set_by_cargo_run(key: &str) -> bool {
    matches!(
        key,
        "OUT_DIR"
            | "CARGO_TARGET_TMPDIR"
            | "CARGO_MANIFEST_DIR"
            | "CARGO_MANIFEST_PATH"
            | "CARGO_MANIFEST_LINKS"
            | "CARGO_CRATE_NAME"
            | "CARGO_BIN_NAME"
            | "CARGO_PRIMARY_PACKAGE"
            | "CARGO_RUSTC_CURRENT_DIR"
    ) || key.starts_with("CARGO_PKG_")
}

/// The reference binary: given, or beside this program (`target/<profile>/`), built first when
/// this program was started by `cargo run` (cargo builds examples, not the package's binaries).
fn ref_bin(args: &Args) -> anyhow::Result<PathBuf> {
    if let Some(b) = &args.ref_bin {
        return Ok(b.clone());
    }
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .context("cannot find this program's target directory")?;
    if let Ok(cargo) = std::env::var("CARGO") {
        let release = dir.file_name().is_some_and(|n| n == "release");
        let mut cmd = std::process::Command::new(cargo);
        // `cargo run` gave this program the package's own variables; a nested build that sees
        // them re-runs the build scripts that watch them (ring's watches OUT_DIR and
        // CARGO_MANIFEST_DIR), and the next plain `cargo build` rebuilds ring and all above it
        // again (about 2.5 minutes each way on the 2-core machine).
        for (key, _) in std::env::vars_os() {
            if key.to_str().is_some_and(set_by_cargo_run) {
                cmd.env_remove(&key);
            }
        }
        cmd.args([
            "build",
            "-p",
            "proxy-under-test",
            "--bin",
            "proxy-under-test",
        ]);
        if release {
            cmd.arg("--release");
        }
        let ok = cmd.current_dir(workspace()).status()?.success();
        if !ok {
            bail!("building proxy-under-test failed");
        }
    }
    let bin = dir.join("proxy-under-test");
    if !bin.is_file() {
        bail!(
            "no {}: build it with `cargo build --release -p proxy-under-test` or pass --ref-bin",
            bin.display()
        );
    }
    Ok(bin)
}

fn kinds(args: &Args) -> anyhow::Result<Vec<Kind>> {
    let mut v = vec![Kind {
        label: "reference".into(),
        key: "r0".into(),
        driver: Driver::Ref {
            bin: ref_bin(args)?,
            env: Vec::new(),
        },
        b_driver: None,
        plane: Plane::Consul,
    }];
    for (i, spec) in args.also.iter().enumerate() {
        let (label, rest) = spec
            .split_once('=')
            .with_context(|| format!("--also {spec:?}: expected LABEL=PATH[,VAR=VALUE...]"))?;
        let mut parts = rest.split(',');
        let bin = PathBuf::from(parts.next().unwrap_or_default());
        if !bin.is_file() {
            bail!("--also {spec:?}: no binary at {}", bin.display());
        }
        let mut env = Vec::new();
        for kv in parts {
            let (k, val) = kv
                .split_once('=')
                .with_context(|| format!("--also {spec:?}: {kv:?} is not VAR=VALUE"))?;
            env.push((k.to_owned(), val.to_owned()));
        }
        v.push(Kind {
            label: label.to_owned(),
            key: format!("r{}", i + 1),
            driver: Driver::Ref { bin, env },
            b_driver: None,
            plane: Plane::Consul,
        });
    }
    let envoy = args
        .envoy
        .clone()
        .unwrap_or_else(|| workspace().join(".tools/envoy-1.40.0/envoy/_bin/envoy"));
    if envoy.is_file() {
        let driver = Driver::Envoy {
            bin: envoy,
            concurrency: args.envoy_concurrency,
        };
        // The comparison first: its ratios carry the targets.
        v.push(Kind {
            label: "envoy-full".into(),
            key: "f".into(),
            driver: driver.clone(),
            b_driver: None,
            plane: Plane::Full,
        });
        if args.mixed {
            let reference = v[0].driver.clone();
            for (label, key, a, b) in [
                ("envoy→ref", "m1", driver.clone(), reference.clone()),
                ("ref→envoy", "m2", reference, driver.clone()),
            ] {
                v.push(Kind {
                    label: label.into(),
                    key: key.into(),
                    driver: a,
                    b_driver: Some(b),
                    plane: Plane::Consul,
                });
            }
        }
        if !args.no_envoy_consul {
            v.push(Kind {
                label: "envoy-consul".into(),
                key: "e".into(),
                driver,
                b_driver: None,
                plane: Plane::Consul,
            });
        }
    } else {
        eprintln!(
            "no Envoy at {} (scripts/install-envoy.sh, or --envoy PATH): no Envoy column",
            envoy.display()
        );
    }
    Ok(v)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if args.apps {
        return rt.block_on(apps::serve());
    }
    let kinds = kinds(&args)?;
    let started = Instant::now();
    let bound = Duration::from_secs(args.max_minutes * 60);
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        // Every child is owned by `report::run`'s future: dropping it (error, signal, time
        // bound) kills each process group.
        tokio::select! {
            r = tokio::time::timeout(bound, report::run(&args, kinds)) => {
                r.map_err(|_| anyhow::anyhow!("gave up after {} minutes", args.max_minutes))?
            }
            _ = tokio::signal::ctrl_c() => bail!("interrupted"),
            _ = term.recv() => bail!("terminated"),
        }
    })?;
    eprintln!("hop_bench took {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}
