//! The proxy under test as the runner sees it: a local process or a container (`--proxy-image`),
//! with one surface for starting, readiness, output and teardown; and the verdict for scenarios
//! a container cannot play (transparent mode).

use std::time::Duration;

use reports::{CheckResult, Requirement, ScenarioResult, Verdict};

use crate::container::{ImageRef, ProxyContainer};
use crate::error::Error;
use crate::proxy::{ListenAddr, NotReady, OutputRing, ProxyCommand, ProxyProcess, Teardown};

/// A started proxy.
#[derive(Debug)]
pub(super) enum Launched {
    /// A child process group.
    Process(ProxyProcess),
    /// A container with host networking.
    Container(ProxyContainer),
}

impl Launched {
    /// Starts `cmd` as a process, or in `image` with `dir` mounted at the same path.
    pub(super) async fn start(
        cmd: &ProxyCommand,
        image: Option<&ImageRef>,
        dir: &std::path::Path,
    ) -> Result<Self, Error> {
        match image {
            None => ProxyProcess::spawn(cmd).map(Self::Process),
            Some(image) => ProxyContainer::start(image, cmd, dir)
                .await
                .map(Self::Container),
        }
    }

    pub(super) fn stdout(&self) -> &OutputRing {
        match self {
            Self::Process(p) => p.stdout(),
            Self::Container(c) => c.stdout(),
        }
    }

    pub(super) fn stderr(&self) -> &OutputRing {
        match self {
            Self::Process(p) => p.stderr(),
            Self::Container(c) => c.stderr(),
        }
    }

    pub(super) async fn wait_ready(
        &mut self,
        targets: &[ListenAddr],
        timeout: Duration,
    ) -> Result<Duration, NotReady> {
        match self {
            Self::Process(p) => p.wait_ready(targets, timeout).await,
            Self::Container(c) => c.wait_ready(targets, timeout).await,
        }
    }

    pub(super) async fn teardown(&mut self, grace: Duration) -> Teardown {
        match self {
            Self::Process(p) => p.teardown(grace).await,
            Self::Container(c) => c.teardown(grace).await,
        }
    }

    /// What the "proxy started" event adds (the container's id; nothing for a process).
    pub(super) fn started_detail(&self) -> Option<String> {
        match self {
            Self::Process(_) => None,
            Self::Container(c) => Some(format!("container {}", short(c.id()))),
        }
    }
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// A transparent scenario with the proxy in an image: not supported (the proxy would have to
/// run inside the scenario's pod namespace as the redirect rules' exempt user).
pub(super) fn transparent_not_supported(result: &mut ScenarioResult) {
    result.mark_not_supported();
    result.checks.push(CheckResult::new(
        reports::ENVIRONMENT_CHECK,
        Requirement::Must,
        Verdict::NotSupported,
        "the proxy as a local process (transparent scenarios run it in a network namespace of \
         its own, as the user the redirect rules exempt)",
        "not supported for a proxy image (--proxy-image): its container shares the host's \
         network, not the scenario's pod namespace",
    ));
}
