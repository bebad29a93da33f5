//! The proxy under test as a child process: spawned from an argv (no shell) in its own process
//! group with the agent address and token in its environment, output captured into bounded
//! rings, readiness = every given port accepts connections, and teardown of the whole group
//! (SIGTERM, grace, SIGKILL). A Drop guard kills the group if teardown never ran (panics), and
//! a process-wide registry lets the CLI kill every live group on Ctrl-C: no child outlives
//! the run.

mod listen;
mod orphans;
mod output;

use std::collections::BTreeSet;
use std::fmt;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use parking_lot::Mutex;
use tokio::process::{Child, Command};
use tokio::time::Instant;

pub(crate) use self::output::drain;
pub use self::output::{DEFAULT_CAPACITY, OutputRing};
use crate::error::Error;

pub use self::listen::ListenAddr;
pub use self::orphans::{adopt_orphans, kill_orphans};

/// What to run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyCommand {
    /// Program and arguments (already substituted).
    pub argv: Vec<String>,
    /// Variables to set.
    pub env: Vec<(String, String)>,
    /// Variables to remove from the inherited environment.
    pub env_remove: Vec<String>,
    /// Run as this user and group ID (transparent mode; needs root). `None`: as we run.
    pub uid: Option<u32>,
}

/// A running proxy process group.
#[derive(Debug)]
pub struct ProxyProcess {
    child: Child,
    pgid: i32,
    started: Instant,
    stdout: Arc<OutputRing>,
    stderr: Arc<OutputRing>,
    exit: Option<ExitStatus>,
    torn_down: bool,
    drains: Vec<tokio::task::JoinHandle<()>>,
}

/// Why the proxy was not ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReady {
    /// How long the harness waited.
    pub waited: Duration,
    /// Ports that never accepted a connection.
    pub pending: Vec<ListenAddr>,
    /// Set when the proxy exited while the harness waited.
    pub exited: Option<String>,
}

/// How teardown ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Teardown {
    /// The exit status, as text.
    pub exit: String,
    /// Whether SIGKILL was needed (SIGTERM grace ran out).
    pub killed: bool,
}

static LIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Sends SIGKILL to every live proxy process group (the CLI's Ctrl-C handler).
pub fn kill_all_live() -> usize {
    let groups: Vec<i32> = LIVE.lock().iter().copied().collect();
    for g in &groups {
        let _ = killpg(Pid::from_raw(*g), Signal::SIGKILL);
    }
    groups.len()
}

/// Process groups started and not yet torn down.
pub fn live_groups() -> Vec<i32> {
    LIVE.lock().iter().copied().collect()
}

/// A running proxy under test (a process or a container) that can say whether it has ended.
pub(crate) trait Supervised {
    /// How the proxy ended (its exit status as text), or `None` while it runs.
    fn exit_text(&mut self) -> impl Future<Output = Option<String>> + Send;
}

/// Polls until every one of `targets` accepts connections, `timeout` passes, or the proxy ends
/// (asked before each round): the readiness wait of a process and of a container alike.
pub(crate) async fn wait_listening(
    proxy: &mut impl Supervised,
    targets: &[ListenAddr],
    timeout: Duration,
) -> Result<Duration, NotReady> {
    let start = Instant::now();
    let deadline = start + timeout;
    let mut pending: Vec<ListenAddr> = targets.to_vec();
    loop {
        if let Some(status) = proxy.exit_text().await {
            return Err(NotReady {
                waited: start.elapsed(),
                pending,
                exited: Some(status),
            });
        }
        pending = still_refusing(pending).await;
        if pending.is_empty() {
            return Ok(start.elapsed());
        }
        if Instant::now() >= deadline {
            return Err(NotReady {
                waited: start.elapsed(),
                pending,
                exited: None,
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The addresses of `pending` that do not accept a connection now (each tried for 500 ms).
pub(crate) async fn still_refusing(pending: Vec<ListenAddr>) -> Vec<ListenAddr> {
    let mut still = Vec::new();
    for d in pending {
        let attempt = tokio::time::timeout(Duration::from_millis(500), d.accepts());
        if !matches!(attempt.await, Ok(Ok(()))) {
            still.push(d);
        }
    }
    still
}

// === impl ProxyProcess ===

impl ProxyCommand {
    /// The command, ready to spawn: the program and its arguments, stdin closed, the scrubbed
    /// variables removed before the given ones are set, the user if any, killed when dropped.
    /// Also returns the program; `what` names the command when it is empty.
    pub(crate) fn command(&self, what: &str) -> Result<(Command, &str), Error> {
        let (program, args) = self
            .argv
            .split_first()
            .ok_or_else(|| Error::Usage(format!("the {what} command is empty")))?;
        let mut c = Command::new(program);
        c.args(args).stdin(Stdio::null()).kill_on_drop(true);
        for k in &self.env_remove {
            c.env_remove(k);
        }
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(id) = self.uid {
            c.uid(id).gid(id);
        }
        Ok((c, program))
    }
}

impl Supervised for ProxyProcess {
    async fn exit_text(&mut self) -> Option<String> {
        self.exited().map(|status| status.to_string())
    }
}

impl ProxyProcess {
    /// Spawns `cmd` in a new process group with piped output. Must be called inside a tokio
    /// runtime (output is drained by tasks).
    pub fn spawn(cmd: &ProxyCommand) -> Result<Self, Error> {
        let (mut c, program) = cmd.command("proxy")?;
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = c.spawn().map_err(|source| Error::Spawn {
            program: program.to_owned(),
            source,
        })?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| Error::Usage("the proxy exited before it got a process id".into()))?;
        LIVE.lock().insert(pgid);
        let started = Instant::now();
        let stdout = Arc::new(OutputRing::new(DEFAULT_CAPACITY, started));
        let stderr = Arc::new(OutputRing::new(DEFAULT_CAPACITY, started));
        let mut drains = Vec::new();
        if let Some(s) = child.stdout.take() {
            drains.push(drain(s, stdout.clone()));
        }
        if let Some(s) = child.stderr.take() {
            drains.push(drain(s, stderr.clone()));
        }
        Ok(Self {
            child,
            pgid,
            started,
            stdout,
            stderr,
            exit: None,
            torn_down: false,
            drains,
        })
    }

    /// The process group id (= the child's pid).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Captured stdout.
    pub fn stdout(&self) -> &OutputRing {
        &self.stdout
    }

    /// Captured stderr.
    pub fn stderr(&self) -> &OutputRing {
        &self.stderr
    }

    /// The exit status if the process has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            self.exit = self.child.try_wait().ok().flatten();
        }
        self.exit
    }

    /// Waits until every address accepts a TCP connection, the process exits, or `timeout`
    /// passes. Ok = how long it took.
    pub async fn wait_ready(
        &mut self,
        targets: &[ListenAddr],
        timeout: Duration,
    ) -> Result<Duration, NotReady> {
        wait_listening(self, targets, timeout).await
    }

    /// SIGTERM to the group, up to `grace` for the child to exit, then SIGKILL to the group
    /// (always: grandchildren may have outlived the child).
    pub async fn teardown(&mut self, grace: Duration) -> Teardown {
        let group = Pid::from_raw(self.pgid);
        let _ = killpg(group, Signal::SIGTERM);
        let mut killed = false;
        if self.exited().is_none() {
            match tokio::time::timeout(grace, self.child.wait()).await {
                Ok(Ok(status)) => self.exit = Some(status),
                _ => killed = true,
            }
        }
        let _ = killpg(group, Signal::SIGKILL);
        if self.exit.is_none()
            && let Ok(Ok(status)) =
                tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await
        {
            self.exit = Some(status);
        }
        // The group is gone, so the pipes are closed: let the drains read the last lines.
        for d in self.drains.drain(..) {
            let _ = tokio::time::timeout(Duration::from_secs(1), d).await;
        }
        self.torn_down = true;
        LIVE.lock().remove(&self.pgid);
        Teardown {
            exit: self
                .exit
                .map_or_else(|| "unknown (not reaped)".into(), |s| s.to_string()),
            killed,
        }
    }

    /// How long the process has been running.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }
}

impl Drop for ProxyProcess {
    fn drop(&mut self) {
        if !self.torn_down {
            let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
            LIVE.lock().remove(&self.pgid);
        }
    }
}

impl fmt::Display for NotReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.exited {
            Some(status) => write!(
                f,
                "the proxy exited ({status}) after {} ms before its ports accepted connections",
                self.waited.as_millis()
            )?,
            None => write!(
                f,
                "ports still refused connections after {} ms",
                self.waited.as_millis()
            )?,
        }
        if !self.pending.is_empty() {
            let list: Vec<String> = self.pending.iter().map(ToString::to_string).collect();
            write!(f, " (not accepting: {})", list.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
