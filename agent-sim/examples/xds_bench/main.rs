//! xDS benchmark (a program, not a test); prints Markdown for `docs/benchmarks.md`:
//!
//! ```text
//! cargo run --release -p agent-sim --example xds_bench -- [--envoy PATH] [--tls-mode inline|sds|both]
//!     [--reps N] [--small N] [--large N] [--streams N] [--part envoy|streams|all] [--skip-shared]
//! ```
//!
//! Part 1 (`envoy`): a real Envoy 1.40 against an in-process agent-sim; change -> ACK times.
//! Part 2 (`streams`): 1,000 Envoy-like delta ADS streams from a child process; the sim's RSS,
//! CPU time and time until every stream ACKed a change. Part 2 runs first so the peak RSS it
//! reports is not inflated by part 1.

mod envoy;
mod streams;
mod util;

use std::path::PathBuf;
use std::time::Instant;

use agent_sim::xds::TlsMode;
use anyhow::bail;
use clap::{Parser, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    Inline,
    Sds,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Part {
    Envoy,
    Streams,
    All,
}

#[derive(Debug, Parser)]
#[command(about = "agent-sim xDS benchmark")]
struct Args {
    /// Envoy 1.40 binary (default: <workspace>/.tools/envoy-1.40.0/envoy/_bin/envoy).
    #[arg(long)]
    envoy: Option<PathBuf>,
    /// TLS mode(s) of part 1.
    #[arg(long, value_enum, default_value = "both")]
    tls_mode: Mode,
    /// Repetitions per kind of change (part 1).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Upstream endpoints of the first EDS measurement.
    #[arg(long, default_value_t = 1_000)]
    small: usize,
    /// Upstream endpoints of the second EDS measurement.
    #[arg(long, default_value_t = 10_000)]
    large: usize,
    /// Delta ADS streams of part 2.
    #[arg(long, default_value_t = 1_000)]
    streams: usize,
    /// Skip part 2's second layout (every stream for the same sidecar).
    #[arg(long)]
    skip_shared: bool,
    /// Which part to run.
    #[arg(long, value_enum, default_value = "all")]
    part: Part,
    /// Internal: run as the child process of part 2.
    #[arg(long, num_args = 3, hide = true)]
    ads_clients: Option<Vec<String>>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if let Some(child) = &args.ads_clients {
        return rt.block_on(streams::clients(child));
    }
    util::raise_fd_limit();
    let started = Instant::now();
    rt.block_on(async {
        // Ctrl-C or SIGTERM ends the run; dropping the futures kills Envoy and the client child.
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = run(&args) => r,
            _ = tokio::signal::ctrl_c() => bail!("interrupted"),
            _ = term.recv() => bail!("terminated"),
        }
    })?;
    eprintln!("xds_bench took {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

async fn run(args: &Args) -> anyhow::Result<()> {
    println!("# agent-sim xDS benchmark\n");
    println!(
        "machine: {} cores, load average at start {}; release build; loopback only\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        util::loadavg()
    );
    if args.part != Part::Envoy {
        let mut layouts = vec![false];
        if !args.skip_shared {
            layouts.push(true);
        }
        for shared in layouts {
            let r = streams::run(args.streams, shared).await?;
            print_streams(args.streams, &r);
        }
    }
    if args.part != Part::Streams {
        let bin = args.envoy.clone().unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../.tools/envoy-1.40.0/envoy/_bin/envoy")
        });
        if !bin.is_file() {
            bail!(
                "no Envoy at {} (run scripts/install-envoy.sh or pass --envoy)",
                bin.display()
            );
        }
        let modes = match args.tls_mode {
            Mode::Inline => vec![TlsMode::Inline],
            Mode::Sds => vec![TlsMode::Sds],
            Mode::Both => vec![TlsMode::Inline, TlsMode::Sds],
        };
        let opts = envoy::Opts {
            reps: args.reps,
            small: args.small,
            large: args.large.max(args.small),
        };
        let mut results = Vec::new();
        for mode in modes {
            results.push(envoy::run(&bin, mode, &opts).await?);
        }
        print_envoy(&bin, args.reps, &results);
    }
    println!("load average at end: {}", util::loadavg());
    Ok(())
}

fn print_streams(n: usize, r: &streams::Outcome) {
    println!("## {n} delta ADS streams ({})\n", r.layout);
    println!(
        "sim RSS before the streams (sidecars registered): {:.0} MiB\n",
        r.rss_before_mib
    );
    println!(
        "| phase | until the last ACK | sim CPU time | pushes | resource builds | sim RSS after |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for p in &r.phases {
        println!(
            "| {} | {:.0} ms | {:.0} ms | {} | {} | {:.0} MiB |",
            p.what,
            p.wall.as_secs_f64() * 1e3,
            p.cpu.as_secs_f64() * 1e3,
            p.pushes,
            p.builds,
            p.rss_mib
        );
    }
    println!("\nsim peak RSS (VmHWM): {:.0} MiB\n", r.hwm_mib);
}

fn print_envoy(bin: &std::path::Path, reps: usize, results: &[envoy::ModeResult]) {
    println!("## Envoy 1.40: change to ACK ({reps} repetitions each)\n");
    println!("Envoy: `{}`\n", bin.display());
    println!("| TLS mode | change | p50 | p99 | max | change -> push sent, p50 |");
    println!("|---|---|---:|---:|---:|---:|");
    for r in results {
        let mode = match r.mode {
            TlsMode::Inline => "inline",
            TlsMode::Sds => "sds",
        };
        for (what, s, push) in &r.rows {
            println!(
                "| {mode} | {what} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms |",
                s.p50, s.p99, s.max, push.p50
            );
        }
    }
    println!();
    for r in results {
        for n in &r.notes {
            println!("- {:?}: {n}", r.mode);
        }
    }
    println!();
}
