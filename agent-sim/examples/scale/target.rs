//! The agent-sim under test: a child process running this same program with `--serve` (so its
//! memory is measured alone), or in-process for the smoke test; its RSS from `/proc`.

use std::process::Stdio;

use agent_sim::AgentSim;
use anyhow::Context;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

/// The sim's settings for the benchmark: no health checks run, and a CA rotation re-issues
/// leaves at once (no jitter), so the leaf watchers' wake-up measures the sim, not the jitter.
fn builder() -> agent_sim::Builder {
    AgentSim::builder()
        .run_checks(false)
        .ca_change_jitter(std::time::Duration::ZERO)
}

/// A running sim and how to measure it.
pub(crate) struct Target {
    /// `http://127.0.0.1:PORT`.
    pub(crate) base: String,
    /// Child process mode: the child (killed on drop).
    child: Option<Child>,
    /// In-process mode: the sim.
    sim: Option<agent_sim::Listening>,
}

/// Memory of a process, in MiB.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Mem {
    pub(crate) rss: f64,
    pub(crate) hwm: f64,
}

impl Target {
    pub(crate) async fn start(in_process: bool) -> anyhow::Result<Self> {
        if in_process {
            let sim = builder().start().await?;
            return Ok(Self {
                base: sim.url(),
                child: None,
                sim: Some(sim),
            });
        }
        let mut child = Command::new(std::env::current_exe()?)
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdout = child.stdout.take().context("child stdout")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).await?;
        let base = line
            .trim()
            .strip_prefix("listening ")
            .with_context(|| format!("child said {line:?}"))?
            .to_owned();
        Ok(Self {
            base,
            child: Some(child),
            sim: None,
        })
    }

    /// The sim process's memory (the whole process in in-process mode: client included).
    pub(crate) fn mem(&self) -> Mem {
        let pid = self.child.as_ref().and_then(Child::id);
        mem_of(
            pid.map_or_else(|| "self".to_owned(), |p| p.to_string())
                .as_str(),
        )
    }

    /// Whether the sim runs in its own process (its memory is its own).
    pub(crate) fn separate(&self) -> bool {
        self.child.is_some()
    }

    pub(crate) async fn stop(mut self) {
        if let Some(mut child) = self.child.take() {
            // Closing stdin asks the child to exit; kill it if it does not.
            drop(child.stdin.take());
            if tokio::time::timeout(std::time::Duration::from_secs(5), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        }
        if let Some(sim) = self.sim.take() {
            sim.shutdown().await;
        }
    }
}

/// This process's memory.
pub(crate) fn own_mem() -> Mem {
    mem_of("self")
}

fn mem_of(pid: &str) -> Mem {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0)
    };
    Mem {
        rss: field("VmRSS:"),
        hwm: field("VmHWM:"),
    }
}

/// Child mode: start the sim, print its URL, serve until stdin closes.
pub(crate) async fn serve() -> anyhow::Result<()> {
    let sim = builder().start().await?;
    println!("listening {}", sim.url());
    let mut sink = Vec::new();
    let _ = tokio::io::stdin().read_to_end(&mut sink).await;
    sim.shutdown().await;
    Ok(())
}

/// Raises the open-file limit to the hard limit (10,000 watchers need 10,000 sockets on each
/// side); returns the soft limit now in force.
pub(crate) fn raise_fd_limit() -> u64 {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
    getrlimit(Resource::RLIMIT_NOFILE).map_or(0, |(soft, _)| soft)
}
