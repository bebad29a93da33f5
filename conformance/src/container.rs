//! The proxy under test as a container (`--proxy-image` / `image = "..."`), started through
//! testcontainers with host networking: the command template's program is the entrypoint and
//! the rest its arguments, the environment is the process's, the user is the harness's (as a
//! process would run; the scenario's files are private to it), and the scenario's directory
//! (token file, bootstrap, unix sockets) is bind-mounted at the same path. Output is followed
//! into the same timestamped rings as a process's; readiness is the same port probing; teardown
//! stops the container (SIGTERM, grace, SIGKILL) and removes it. A Drop guard removes it if
//! teardown never ran (panics), and a process-wide registry lets the CLI remove every live
//! container on Ctrl-C: no container outlives the run.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use testcontainers::bollard::Docker;
use testcontainers::bollard::query_parameters::{ListContainersOptions, RemoveContainerOptions};
use testcontainers::core::Mount;
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};
use tokio::time::Instant;

use crate::error::Error;
use crate::proxy::{DEFAULT_CAPACITY, ListenAddr, NotReady, OutputRing, ProxyCommand, Teardown};

/// Label on every container the harness starts (value: the harness's pid), so stray ones can be
/// found with `docker ps -a --filter label=conformance.proxy`.
pub const LABEL: &str = "conformance.proxy";

/// How long a Docker API call may take before the harness gives up (never a hang).
const API_TIMEOUT: Duration = Duration::from_secs(20);

/// How long starting a container may take (create + start; the image is local).
const START_TIMEOUT: Duration = Duration::from_secs(60);

static LIVE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// A parsed image reference: `name[:tag]` (the tag defaults to `latest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// Repository, with any registry host (`localhost:5000/proxy`).
    pub name: String,
    /// Tag.
    pub tag: String,
}

impl ImageRef {
    /// Parses `name[:tag]`; a `:` before the last `/` belongs to a registry host.
    pub fn parse(s: &str) -> Result<Self, Error> {
        let s = s.trim();
        if s.is_empty() || s.chars().any(char::is_whitespace) || s.contains('@') {
            return Err(Error::Usage(format!(
                "proxy image {s:?}: expected NAME[:TAG] (no digests, no spaces)"
            )));
        }
        let slash = s.rfind('/').map_or(0, |i| i + 1);
        Ok(match s[slash..].rfind(':') {
            Some(i) if i + 1 < s.len() - slash => Self {
                name: s[..slash + i].to_owned(),
                tag: s[slash + i + 1..].to_owned(),
            },
            Some(_) => {
                return Err(Error::Usage(format!("proxy image {s:?}: empty tag")));
            }
            None => Self {
                name: s.to_owned(),
                tag: "latest".into(),
            },
        })
    }
}

impl std::fmt::Display for ImageRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.name, self.tag)
    }
}

fn docker() -> Result<Docker, Error> {
    Docker::connect_with_defaults().map_err(|e| {
        Error::Docker(format!(
            "cannot reach a Docker daemon ({e}): start one (as root: scripts/dockerd.sh start) \
             or set DOCKER_HOST"
        ))
    })
}

/// Checks, within bounded time, that a Docker daemon answers and has `image` locally (no
/// registry is contacted). Errors name what to do.
pub async fn preflight(image: &ImageRef) -> Result<(), Error> {
    let d = docker()?;
    match tokio::time::timeout(Duration::from_secs(5), d.ping()).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            return Err(Error::Docker(format!(
                "no Docker daemon answers ({e}): start one (as root: scripts/dockerd.sh start) \
                 or set DOCKER_HOST"
            )));
        }
        Err(_) => {
            return Err(Error::Docker(
                "the Docker daemon did not answer a ping within 5 s: check it (docker info)".into(),
            ));
        }
    }
    match tokio::time::timeout(API_TIMEOUT, d.inspect_image(&image.to_string())).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(Error::Docker(format!(
            "image {image} is not available locally ({e}): build it (scripts/build-images.sh \
             builds the reference proxy, agent-sim and envoy images) or `docker pull` it"
        ))),
        Err(_) => Err(Error::Docker(format!(
            "the Docker daemon did not answer about image {image} within {} s",
            API_TIMEOUT.as_secs()
        ))),
    }
}

/// Force-removes every container the harness started and has not torn down. Returns how many
/// were removed.
pub async fn remove_all_live() -> usize {
    let ids: Vec<String> = LIVE.lock().iter().cloned().collect();
    remove_ids(ids).await
}

/// Force-removes every container labelled as started by the harness with process id `pid`,
/// torn down or not, created or running (the CLI's Ctrl-C handler, once no scenario runs).
pub async fn remove_labelled(pid: u32) -> usize {
    let mut ids = labelled(Some(pid)).await.unwrap_or_default();
    ids.extend(live_containers());
    ids.sort();
    ids.dedup();
    remove_ids(ids).await
}

async fn remove_ids(ids: Vec<String>) -> usize {
    let Ok(d) = docker() else {
        return 0;
    };
    let mut n = 0;
    for id in ids {
        if force_remove(&d, &id).await {
            n += 1;
        }
        LIVE.lock().remove(&id);
    }
    n
}

/// Containers started and not yet torn down.
pub fn live_containers() -> Vec<String> {
    LIVE.lock().iter().cloned().collect()
}

/// Every container (running or not) carrying [`LABEL`], or only those a harness with process id
/// `pid` started: their ids. For checks that nothing survived a run.
pub async fn labelled(pid: Option<u32>) -> Result<Vec<String>, Error> {
    let d = docker()?;
    let filter = match pid {
        Some(p) => format!("{LABEL}={p}"),
        None => LABEL.to_owned(),
    };
    let opts = ListContainersOptions {
        all: true,
        filters: Some([("label".to_owned(), vec![filter])].into_iter().collect()),
        ..ListContainersOptions::default()
    };
    match tokio::time::timeout(API_TIMEOUT, d.list_containers(Some(opts))).await {
        Ok(Ok(list)) => Ok(list.into_iter().filter_map(|c| c.id).collect()),
        Ok(Err(e)) => Err(Error::Docker(format!("cannot list containers: {e}"))),
        Err(_) => Err(Error::Docker("listing containers timed out".into())),
    }
}

async fn force_remove(d: &Docker, id: &str) -> bool {
    let opts = RemoveContainerOptions {
        force: true,
        v: true,
        link: false,
    };
    matches!(
        tokio::time::timeout(API_TIMEOUT, d.remove_container(id, Some(opts))).await,
        Ok(Ok(()))
    )
}

/// A running proxy container.
pub struct ProxyContainer {
    // Boxed: the testcontainers handle is large.
    container: Option<Box<ContainerAsync<GenericImage>>>,
    id: String,
    started: Instant,
    stdout: Arc<OutputRing>,
    stderr: Arc<OutputRing>,
    exit: Option<String>,
    drains: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for ProxyContainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyContainer")
            .field("id", &self.id)
            .field("exit", &self.exit)
            .finish_non_exhaustive()
    }
}

impl ProxyContainer {
    /// Starts `cmd` in `image` with host networking and `dir` bind-mounted at the same path.
    pub async fn start(image: &ImageRef, cmd: &ProxyCommand, dir: &Path) -> Result<Self, Error> {
        let (program, args) = cmd
            .argv
            .split_first()
            .ok_or_else(|| Error::Usage("the proxy command is empty".into()))?;
        let dir = dir.display().to_string();
        let mut req = GenericImage::new(image.name.clone(), image.tag.clone())
            .with_entrypoint(program)
            .with_cmd(args.iter().cloned())
            .with_network("host")
            .with_mount(Mount::bind_mount(dir.clone(), dir))
            .with_label(LABEL, std::process::id().to_string())
            .with_startup_timeout(START_TIMEOUT);
        for (k, v) in &cmd.env {
            req = req.with_env_var(k.clone(), v.clone());
        }
        // As the harness's own user, like a process: the scenario directory is private to it.
        let user = match cmd.uid {
            Some(uid) => format!("{uid}:{uid}"),
            None => format!("{}:{}", nix::unistd::getuid(), nix::unistd::getgid()),
        };
        req = req.with_user(user);
        let container = match tokio::time::timeout(START_TIMEOUT, req.start()).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                return Err(Error::Container(format!(
                    "cannot start {image} (entrypoint {program:?}): {e}"
                )));
            }
            Err(_) => {
                return Err(Error::Container(format!(
                    "starting {image} took over {} s",
                    START_TIMEOUT.as_secs()
                )));
            }
        };
        let id = container.id().to_owned();
        LIVE.lock().insert(id.clone());
        let started = Instant::now();
        let stdout = Arc::new(OutputRing::new(DEFAULT_CAPACITY, started));
        let stderr = Arc::new(OutputRing::new(DEFAULT_CAPACITY, started));
        let drains = vec![
            crate::proxy::drain(container.stdout(true), stdout.clone()),
            crate::proxy::drain(container.stderr(true), stderr.clone()),
        ];
        Ok(Self {
            container: Some(Box::new(container)),
            id,
            started,
            stdout,
            stderr,
            exit: None,
            drains,
        })
    }

    /// The container id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Captured stdout.
    pub fn stdout(&self) -> &OutputRing {
        &self.stdout
    }

    /// Captured stderr.
    pub fn stderr(&self) -> &OutputRing {
        &self.stderr
    }

    /// The exit status if the container has exited.
    pub async fn exited(&mut self) -> Option<String> {
        if self.exit.is_none()
            && let Some(c) = &self.container
            && let Ok(Ok(Some(code))) = tokio::time::timeout(API_TIMEOUT, c.exit_code()).await
        {
            self.exit = Some(format!("exit status: {code}"));
        }
        self.exit.clone()
    }

    /// Waits until every address accepts a TCP connection, the container exits, or `timeout`
    /// passes (as [`crate::proxy::ProxyProcess::wait_ready`]).
    pub async fn wait_ready(
        &mut self,
        targets: &[ListenAddr],
        timeout: Duration,
    ) -> Result<Duration, NotReady> {
        crate::proxy::wait_listening(self, targets, timeout).await
    }

    /// Stops the container (SIGTERM, up to `grace`, SIGKILL) and removes it.
    pub async fn teardown(&mut self, grace: Duration) -> Teardown {
        let Some(c) = self.container.take() else {
            return Teardown {
                exit: self.exit.clone().unwrap_or_else(|| "unknown".into()),
                killed: false,
            };
        };
        let already = self.exited_with(&c).await;
        let secs = i32::try_from(grace.as_secs().max(1)).unwrap_or(i32::MAX);
        let stop = tokio::time::timeout(grace + API_TIMEOUT, c.stop_with_timeout(Some(secs))).await;
        let code = match tokio::time::timeout(API_TIMEOUT, c.exit_code()).await {
            Ok(Ok(code)) => code,
            _ => None,
        };
        // Docker reports 137 (128 + SIGKILL) when the grace ran out.
        let killed = already.is_none() && code == Some(137);
        if self.exit.is_none() {
            self.exit = code.map(|c| format!("exit status: {c}"));
        }
        // The container stopped, so the log streams end: let the drains read the last lines.
        for d in self.drains.drain(..) {
            let _ = tokio::time::timeout(Duration::from_secs(1), d).await;
        }
        let removed = matches!(tokio::time::timeout(API_TIMEOUT, c.rm()).await, Ok(Ok(())));
        if !removed && let Ok(d) = docker() {
            force_remove(&d, &self.id).await;
        }
        LIVE.lock().remove(&self.id);
        let mut exit = self
            .exit
            .clone()
            .unwrap_or_else(|| "unknown (not inspected)".into());
        if !matches!(stop, Ok(Ok(()))) {
            exit.push_str(" (stop failed; container force-removed)");
        }
        Teardown { exit, killed }
    }

    async fn exited_with(&mut self, c: &ContainerAsync<GenericImage>) -> Option<String> {
        if self.exit.is_none()
            && let Ok(Ok(Some(code))) = tokio::time::timeout(API_TIMEOUT, c.exit_code()).await
        {
            self.exit = Some(format!("exit status: {code}"));
        }
        self.exit.clone()
    }

    /// How long the container has been running.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }
}

impl crate::proxy::Supervised for ProxyContainer {
    async fn exit_text(&mut self) -> Option<String> {
        self.exited().await
    }
}

impl Drop for ProxyContainer {
    fn drop(&mut self) {
        // `ContainerAsync`'s own Drop removes the container (teardown never ran: a panic or
        // an aborted task); the registry entry goes with it.
        if self.container.is_some() {
            LIVE.lock().remove(&self.id);
        }
        for d in &self.drains {
            d.abort();
        }
    }
}

#[cfg(test)]
mod tests;
