//! The proxy as the real binary in a child process (so fd and RSS numbers are the proxy's alone),
//! killed when the guard drops (also when a test panics), and what `/proc` says about it: open
//! file descriptors, resident memory, and its TCP sockets by local and remote port.

use std::collections::BTreeSet;
use std::fs::File;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use tokio::process::{Child, Command};

use crate::e2e::support::*;

/// Descriptors the proxy may hold above its baseline once settled: its agent client's pool may
/// keep a blocking-query connection or two more than when the baseline was taken. Attackers'
/// connections are counted exactly ([`ProxyChild::accepted_on`], [`ProxyChild::dialed_to`]).
pub(crate) const FD_SLACK: usize = 2;

/// The proxy binary running `db-sidecar-proxy` for a [`World`]; killed on drop.
pub(crate) struct ProxyChild {
    child: Child,
    pid: u32,
    /// Its stderr (log level `warn`), shown when a test fails.
    log: tempfile::NamedTempFile,
}

impl ProxyChild {
    /// Starts the binary against `w`'s sim and waits until `web` completes an mTLS handshake on
    /// the public listener (so its configuration is complete, L4 or L7).
    pub(crate) async fn start(w: &World) -> Self {
        let log = tempfile::NamedTempFile::new().unwrap();
        let stderr = File::options().append(true).open(log.path()).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_proxy-under-test"))
            .args(["-proxy-id", "db-sidecar-proxy", "-log-level", "warn"])
            .env("CONSUL_HTTP_ADDR", w.sim.http_addr())
            .env("CONSUL_HTTP_TOKEN", &w.token)
            .env_remove("CONSUL_HTTP_TOKEN_FILE")
            .env_remove("CONNECT_PROXY_ID")
            .env_remove("CONNECT_SIDECAR_FOR")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let pid = child.id().unwrap();
        let me = Self { child, pid, log };
        let web = w.probe("web");
        eventually("the proxy binary serves", PATIENCE, || async {
            web.connect(w.public()).await.is_ok()
        })
        .await;
        me
    }

    /// Panics (with the proxy's log) if the process has exited.
    pub(crate) fn assert_alive(&mut self, after: &str) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "the proxy exited ({status}) after {after}; its log:\n{}",
                self.logs()
            );
        }
    }

    pub(crate) fn logs(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// Number of open file descriptors.
    pub(crate) fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid)).map_or(0, Iterator::count)
    }

    /// Resident memory in KiB (`VmRSS`).
    pub(crate) fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// The proxy's connected (not listening) TCP sockets whose local port is `port`: the
    /// connections it accepted on that listener.
    pub(crate) fn accepted_on(&self, port: u16) -> usize {
        self.sockets()
            .iter()
            .filter(|s| !s.listening && s.local == port)
            .count()
    }

    /// The proxy's TCP sockets whose remote port is `port` (its connections to that server).
    pub(crate) fn dialed_to(&self, port: u16) -> usize {
        self.sockets().iter().filter(|s| s.remote == port).count()
    }

    /// The proxy's TCP sockets: its `socket:[inode]` fds matched against its `/proc/net/tcp{,6}`.
    fn sockets(&self) -> Vec<Sock> {
        let inodes: BTreeSet<u64> = std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .map(|d| {
                d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                    .filter_map(|l| {
                        let l = l.to_str()?.to_owned();
                        l.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
                    })
                    .collect()
            })
            .unwrap_or_default();
        ["tcp", "tcp6"]
            .iter()
            .filter_map(|f| std::fs::read_to_string(format!("/proc/{}/net/{f}", self.pid)).ok())
            .flat_map(|t| {
                t.lines()
                    .skip(1)
                    .filter_map(Sock::parse)
                    .collect::<Vec<_>>()
            })
            .filter(|s| inodes.contains(&s.inode))
            .collect()
    }

    /// Waits until the proxy has accepted nothing on `port` and holds no more than `fds` (+
    /// [`FD_SLACK`]) open descriptors; returns how long it took.
    pub(crate) async fn settles(&self, port: u16, fds: usize, what: &str) -> Duration {
        eventually(what, PATIENCE, || async {
            self.accepted_on(port) == 0 && self.fds() <= fds + FD_SLACK
        })
        .await
    }
}

impl Drop for ProxyChild {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        if std::thread::panicking() {
            eprintln!("proxy log:\n{}", self.logs());
        }
    }
}

/// One line of `/proc/net/tcp`.
struct Sock {
    local: u16,
    remote: u16,
    listening: bool,
    inode: u64,
}

impl Sock {
    /// `sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...`, addresses `HEX:PORT`.
    fn parse(line: &str) -> Option<Self> {
        let f: Vec<&str> = line.split_whitespace().collect();
        let port = |a: &str| u16::from_str_radix(a.rsplit(':').next()?, 16).ok();
        Some(Self {
            local: port(f.get(1)?)?,
            remote: port(f.get(2)?)?,
            listening: *f.get(3)? == "0A",
            inode: f.get(9)?.parse().ok()?,
        })
    }
}

/// Raises this process's `RLIMIT_NOFILE` soft limit to the hard limit (children inherit it);
/// returns the new soft limit.
pub(crate) fn raise_fd_limit() -> u64 {
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 0;
    };
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return hard;
    }
    soft
}
