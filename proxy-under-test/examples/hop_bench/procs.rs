//! The child processes of the benchmark: each in its own process group, killed (the whole group,
//! SIGKILL) when its handle is dropped, so an error, Ctrl-C or SIGTERM ends every proxy, Envoy and
//! the app server; and what `/proc` says about them (CPU seconds, peak RSS).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use tokio::process::{Child, Command};

/// Clock ticks per second of `/proc/<pid>/stat`'s `utime`/`stime` (`sysconf(_SC_CLK_TCK)`, 100 on
/// every Linux the benchmark targets).
const TICKS: f64 = 100.0;

/// A child process in its own process group; dropping it kills the group.
pub(crate) struct Proc {
    pub(crate) name: String,
    pub(crate) pid: u32,
    child: Child,
    log: Option<std::path::PathBuf>,
}

impl Proc {
    /// Starts `cmd` in a new process group, stdout and stderr to `log` (a file in the run's
    /// directory; `None`: stdout piped, for the app server's port line).
    pub(crate) fn spawn(name: &str, mut cmd: Command, log: Option<&Path>) -> anyhow::Result<Self> {
        cmd.stdin(Stdio::null()).process_group(0).kill_on_drop(true);
        if let Some(log) = log {
            let f = std::fs::File::create(log)?;
            cmd.stdout(f.try_clone()?).stderr(f);
        } else {
            cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {name}"))?;
        let pid = child.id().context("child exited at once")?;
        Ok(Self {
            name: name.to_owned(),
            pid,
            child,
            log: log.map(Path::to_path_buf),
        })
    }

    /// The child's piped stdout (once).
    pub(crate) fn stdout(&mut self) -> Option<tokio::process::ChildStdout> {
        self.child.stdout.take()
    }

    /// Fails when the child has already exited (a proxy that refused its configuration), with
    /// the last lines of its log.
    pub(crate) fn check_alive(&mut self) -> anyhow::Result<()> {
        match self.child.try_wait()? {
            Some(status) => {
                let text = self
                    .log
                    .as_ref()
                    .and_then(|l| std::fs::read_to_string(l).ok())
                    .unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = lines[lines.len().saturating_sub(8)..].join("\n");
                anyhow::bail!("{} exited: {status}; its log ends:\n{tail}", self.name)
            }
            None => Ok(()),
        }
    }

    /// User + system CPU seconds so far (all threads).
    pub(crate) fn cpu_secs(&self) -> f64 {
        cpu_secs(self.pid).unwrap_or(0.0)
    }

    /// Peak resident set (`VmHWM`) in MiB.
    pub(crate) fn peak_rss_mib(&self) -> f64 {
        status_kib(self.pid, "VmHWM:").map_or(0.0, |k| k as f64 / 1024.0)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.pid) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        // kill_on_drop reaps the child.
    }
}

/// `utime + stime` of `/proc/<pid>/stat` in seconds.
fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; fields after its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14, stime 15.
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / TICKS)
}

/// A `kB` line of `/proc/<pid>/status`.
fn status_kib(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The machine: CPUs, model, kernel, load average now.
pub(crate) fn machine() -> String {
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
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    format!("{cpus} CPUs ({model}), Linux {kernel}")
}

/// The 1-minute load average.
pub(crate) fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0.0)
}

/// The longest [`settle`] waits.
const SETTLE_MAX: Duration = Duration::from_secs(2);
/// The window over which [`settle`] reads the machine's idle share.
const SETTLE_WINDOW: Duration = Duration::from_millis(50);

/// Waits until the machine is quiet before a phase: until one 50 ms window of `/proc/stat`
/// shows the CPUs at least 90% idle, at most 2 s; false if it never was. A phase can leave work
/// behind that the next one would pay for: after plain loopback's new-connections phase (about
/// 30,000 connections a second) the kernel goes on closing and freeing its sockets, and the
/// path that always ran right after it measured 4-8% fewer connections a second than the same
/// binary one slot later (level once the machine was let settle).
pub(crate) async fn settle() -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < SETTLE_MAX {
        let Some(a) = cpu_ticks() else { return true };
        tokio::time::sleep(SETTLE_WINDOW).await;
        let Some(b) = cpu_ticks() else { return true };
        let (idle, all) = (b.0 - a.0, b.1 - a.1);
        if all == 0 || idle * 10 >= all * 9 {
            return true;
        }
    }
    false
}

/// Idle (idle + iowait) and total ticks of all CPUs, from `/proc/stat`'s first line.
fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let v: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let idle = v.get(3)? + v.get(4).unwrap_or(&0);
    Some((idle, v.iter().sum()))
}
