//! The leak test's probes: a `conformance run` child with its own `TMPDIR` and environment
//! marker, waiting for events, signals, and what it left (marked survivors with their listening
//! sockets, files in its `TMPDIR`, new named network namespaces, labelled containers).

use std::fmt;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use nix::sys::signal::Signal;
use parking_lot::Mutex;
use reports::{Report, Verdict};

use super::EVENT;

/// The variable every descendant of a run inherits.
const MARKER_VAR: &str = "CONFORMANCE_LEAK_MARKER";

/// How often conditions are polled while waiting for an event.
const POLL: Duration = Duration::from_millis(50);

/// A running `conformance run`.
pub(crate) struct Run {
    child: Mutex<Child>,
    pid: u32,
    marker: String,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
    work: tempfile::TempDir,
    tmp: tempfile::TempDir,
    netns_before: Vec<String>,
}

/// What a finished run left.
pub(crate) struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    pid: u32,
    marker: String,
    work: tempfile::TempDir,
    tmp: tempfile::TempDir,
    netns_before: Vec<String>,
}

/// How a wait ended.
pub(crate) enum Waited {
    Seen(Run),
    Exited(Box<Out>),
}

impl Run {
    /// Starts `conformance run ARGS` in a fresh directory with a fresh empty `TMPDIR`.
    pub(crate) fn start(args: &[&str], env: &[(&str, &str)]) -> Result<Self, Failed> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let marker = format!(
            "leaks-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let work = tempfile::tempdir().map_err(|e| e.to_string())?;
        let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
        let netns_before = netns();
        let mut child = Command::new(env!("CARGO_BIN_EXE_conformance"))
            .arg("run")
            .args(args)
            .current_dir(work.path())
            .env("TMPDIR", tmp.path())
            .env(MARKER_VAR, &marker)
            .envs(env.iter().copied())
            .env_remove("CI")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let (stdout, stderr) = (Arc::default(), Arc::default());
        let mut readers = Vec::new();
        if let Some(o) = child.stdout.take() {
            readers.push(collect(o, Arc::clone(&stdout)));
        }
        if let Some(e) = child.stderr.take() {
            readers.push(collect(e, Arc::clone(&stderr)));
        }
        Ok(Self {
            pid: child.id(),
            child: Mutex::new(child),
            marker,
            stdout,
            stderr,
            readers,
            work,
            tmp,
            netns_before,
        })
    }

    /// Its stderr so far (progress lines).
    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().clone()
    }

    /// Its marked descendants whose command line mentions `what`.
    pub(crate) fn descendants(&self, what: &str) -> usize {
        marked(&self.marker)
            .into_iter()
            .filter(|p| *p != self.pid)
            .filter(|p| cmdline(*p).contains(what))
            .count()
    }

    /// Containers labelled with its pid.
    pub(crate) fn containers(&self) -> usize {
        containers(self.pid).len()
    }

    /// Waits until `seen` holds; an error if the run ends first or [`EVENT`] passes.
    pub(crate) fn wait_for(&self, what: &str, seen: impl Fn(&Self) -> bool) -> Result<(), Failed> {
        let started = Instant::now();
        loop {
            if seen(self) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.lock().try_wait() {
                let out = format!("stderr so far:\n{}", self.stderr());
                return Err(format!("the run ended ({status}) before {what}\n{out}").into());
            }
            if started.elapsed() > EVENT {
                return Err(format!("no {what} within {EVENT:?}\n{}", self.stderr()).into());
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits until `seen` holds (the run, still going) or the run ends (what it left).
    pub(crate) fn wait_for_or_exit(
        self,
        what: &str,
        seen: impl Fn(&Self) -> bool,
    ) -> Result<Waited, Failed> {
        let started = Instant::now();
        loop {
            if seen(&self) {
                return Ok(Waited::Seen(self));
            }
            if matches!(self.child.lock().try_wait(), Ok(Some(_))) {
                return Ok(Waited::Exited(Box::new(self.wait_exit()?)));
            }
            if started.elapsed() > EVENT {
                return Err(format!("no {what} within {EVENT:?}\n{}", self.stderr()).into());
            }
            std::thread::sleep(POLL);
        }
    }

    /// Sends `sig` to the harness (only).
    pub(crate) fn signal(&self, sig: Signal) -> Result<(), Failed> {
        let pid = i32::try_from(self.pid).map_err(|e| e.to_string())?;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Waits for the harness to exit (at most [`EVENT`]), then for its marked descendants to be
    /// gone (the kernel may still be reaping a SIGKILLed group).
    pub(crate) fn wait_exit(self) -> Result<Out, Failed> {
        let started = Instant::now();
        let status = loop {
            if let Ok(Some(s)) = self.child.lock().try_wait() {
                break s;
            }
            if started.elapsed() > EVENT {
                let _ = self.child.lock().kill();
                return Err(
                    format!("the run did not exit within {EVENT:?}\n{}", self.stderr()).into(),
                );
            }
            std::thread::sleep(POLL);
        };
        for r in self.readers {
            let _ = r.join();
        }
        let gone = Instant::now() + Duration::from_secs(5);
        while !marked(&self.marker).is_empty() && Instant::now() < gone {
            std::thread::sleep(POLL);
        }
        Ok(Out {
            code: status.code(),
            stdout: self.stdout.lock().clone(),
            stderr: self.stderr.lock().clone(),
            pid: self.pid,
            marker: self.marker,
            work: self.work,
            tmp: self.tmp,
            netns_before: self.netns_before,
        })
    }
}

impl Out {
    /// Fails unless the exit code is `code`.
    pub(crate) fn expect_code(&self, code: i32) -> Result<(), Failed> {
        self.expect(self.code == Some(code), &format!("exit code {code}"))
    }

    /// Exit code 130/143, nothing left, and all four reports written with at least one
    /// scenario `interrupted`.
    pub(crate) fn expect_interrupted(&self, sig: Signal) -> Result<(), Failed> {
        let code = if sig == Signal::SIGINT { 130 } else { 143 };
        self.expect_code(code)?;
        self.expect_clean()?;
        for f in reports::REPORT_FILES {
            self.expect(self.reports().join(f).is_file(), &format!("{f} written"))?;
        }
        let r = self.report()?;
        self.expect(
            r.scenarios
                .iter()
                .any(|s| s.verdict == Verdict::Interrupted),
            "a scenario marked interrupted",
        )?;
        self.expect(
            r.profiles
                .iter()
                .all(|p| p.outcome != reports::Outcome::Success),
            "no profile with an interrupted scenario is a success",
        )?;
        let md = std::fs::read_to_string(self.reports().join("report.md")).unwrap_or_default();
        let junit = std::fs::read_to_string(self.reports().join("junit.xml")).unwrap_or_default();
        let html = std::fs::read_to_string(self.reports().join("report.html")).unwrap_or_default();
        self.expect(md.contains("interrupted by"), "report.md gives the reason")?;
        self.expect(junit.contains("type=\"interrupted\""), "junit.xml marks it")?;
        self.expect(html.contains("v-interrupted"), "report.html marks it")
    }

    /// No marked process (and so none of its listening sockets), an empty `TMPDIR`, no new
    /// named network namespace.
    pub(crate) fn expect_clean(&self) -> Result<(), Failed> {
        let survivors: Vec<String> = marked(&self.marker)
            .into_iter()
            .map(|p| {
                let ports = listening_ports(p);
                format!("{p} {:?} listening on {ports:?}", cmdline(p))
            })
            .collect();
        self.expect(
            survivors.is_empty(),
            &format!("no surviving process; left: {survivors:?}"),
        )?;
        let left: Vec<PathBuf> = std::fs::read_dir(self.tmp.path())
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        self.expect(left.is_empty(), &format!("an empty TMPDIR; left: {left:?}"))?;
        let new: Vec<String> = netns()
            .into_iter()
            .filter(|n| !self.netns_before.contains(n))
            .collect();
        self.expect(
            new.is_empty(),
            &format!("no new network namespace; new: {new:?}"),
        )
    }

    /// No container labelled with the harness's pid.
    pub(crate) fn expect_no_containers(&self) -> Result<(), Failed> {
        let left = containers(self.pid);
        self.expect(
            left.is_empty(),
            &format!("no container left; left: {left:?}"),
        )
    }

    /// The JSON report.
    pub(crate) fn report(&self) -> Result<Report, Failed> {
        let json = std::fs::read_to_string(self.reports().join("report.json"))
            .map_err(|e| format!("report.json: {e}\n{self}"))?;
        Report::from_json(&json).map_err(|e| format!("report.json: {e}").into())
    }

    /// Fails with the run's output unless `ok`.
    pub(crate) fn expect(&self, ok: bool, what: &str) -> Result<(), Failed> {
        if ok {
            Ok(())
        } else {
            Err(format!("expected {what}\n{self}").into())
        }
    }

    /// Its stderr.
    pub(crate) fn stderr(&self) -> &str {
        &self.stderr
    }

    fn reports(&self) -> PathBuf {
        self.work.path().join("conformance-report")
    }
}

impl fmt::Display for Out {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

fn collect(mut from: impl Read + Send + 'static, into: Arc<Mutex<String>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            into.lock().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
}

/// Processes whose environment has `MARKER_VAR=marker`.
fn marked(marker: &str) -> Vec<u32> {
    let want = format!("{MARKER_VAR}={marker}");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == want.as_bytes()))
        })
        .collect()
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default()
}

/// The TCP ports `pid` listens on (its socket inodes in `/proc/net/tcp{,6}` LISTEN entries).
fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let mut ports = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else {
                continue;
            };
            if *state == "0A" && inodes.iter().any(|i| i == inode) {
                let port = local.rsplit(':').next().unwrap_or("0");
                ports.push(u16::from_str_radix(port, 16).unwrap_or(0));
            }
        }
    }
    ports
}

/// `ip netns list` names (none where `ip` is missing).
fn netns() -> Vec<String> {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()
}

/// Containers labelled as started by harness `pid` (none where Docker does not answer).
fn containers(pid: u32) -> Vec<String> {
    runtime()
        .and_then(|rt| {
            rt.block_on(conformance::container::labelled(Some(pid)))
                .ok()
        })
        .unwrap_or_default()
}

/// The proxy image (`CONFORMANCE_PROXY_IMAGE`, else `proxy-under-test:latest`), or why the
/// image trial cannot run here.
pub(crate) fn image() -> Result<String, String> {
    let image = std::env::var("CONFORMANCE_PROXY_IMAGE")
        .unwrap_or_else(|_| "proxy-under-test:latest".into());
    let r = conformance::container::ImageRef::parse(&image).map_err(|e| e.to_string())?;
    runtime()
        .ok_or("no runtime")?
        .block_on(conformance::container::preflight(&r))
        .map_err(|e| e.to_string())?;
    Ok(image)
}
