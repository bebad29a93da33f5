//! `Error`: what the runner itself can fail with (as opposed to what a proxy does wrong, which
//! ends up as failed checks). Every variant has a stable snake_case machine name (`kind`) that
//! reports carry in `ErrorInfo::kind`.

use std::path::PathBuf;

use agent_sim::SimError;
use agent_sim::play::PlayError;
use reports::ReportError;

/// A harness error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A manifest file (or the equivalent flags) is invalid.
    #[error("{origin}: {message}")]
    Manifest {
        /// The file, or `flags`.
        origin: String,
        /// What is wrong, naming the field.
        message: String,
    },
    /// The command template cannot be split or names an unknown placeholder.
    #[error("command template {template:?}: {message}")]
    Template {
        /// The template.
        template: String,
        /// What is wrong.
        message: String,
    },
    /// A command-line value is invalid.
    #[error("{0}")]
    Usage(String),
    /// A scenario file cannot be read or parsed.
    #[error("{path}: {message}")]
    Scenario {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The proxy process could not be started at all.
    #[error("cannot start the proxy {program:?}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The simulated agent could not be started or refused a change.
    #[error("agent-sim: {0}")]
    Sim(#[from] SimError),
    /// Playing the scenario's setup or an agent-side step failed.
    #[error("agent-sim: {0}")]
    Play(#[from] PlayError),
    /// Local IO for the world (ports, apps, token file).
    #[error("cannot {action}: {source}")]
    Io {
        /// What was being done.
        action: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// TLS material from the sim could not be used.
    #[error("TLS material: {0}")]
    Tls(String),
    /// The transparent-mode redirect step (or the pod's network setup) failed.
    #[error("{0}")]
    Redirect(String),
    /// A step refers to something the scenario never created.
    #[error("scenario step: {0}")]
    Step(String),
    /// The xDS proxy rejected configuration the simulated agent pushed (a NACK, with Envoy's
    /// `error_detail`): the harness's xDS server is at fault, not the proxy.
    #[error("xDS push rejected: {0}")]
    XdsNack(String),
    /// A push the xDS proxy never answered (no ACK, no NACK) on a stream that stayed open.
    #[error("xDS push never answered: {0}")]
    XdsUnanswered(String),
    /// The world of an xDS proxy could not be prepared (no gRPC address, bootstrap rendering).
    #[error("xDS: {0}")]
    Xds(String),
    /// No Docker daemon answers, or the proxy image is not available locally (`--proxy-image`).
    #[error("docker: {0}")]
    Docker(String),
    /// The proxy's container could not be started.
    #[error("container: {0}")]
    Container(String),
    /// Reading or writing a report.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// A report given to `conformance merge` cannot be read.
    #[error("{}: {source}", path.display())]
    ReadReport {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: ReportError,
    },
    /// Shard reports that are not the shards of one run (`conformance merge`).
    #[error(transparent)]
    Merge(#[from] reports::MergeError),
    /// Writing report files.
    #[error("cannot write reports to {}: {source}", path.display())]
    ReportDir {
        /// The directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: ReportError,
    },
}

impl Error {
    /// The stable machine name.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Manifest { .. } => "manifest_invalid",
            Self::Template { .. } => "template_invalid",
            Self::Usage(_) => "usage",
            Self::Scenario { .. } => "scenario_invalid",
            Self::Spawn { .. } => "proxy_spawn_failed",
            Self::Sim(_) => "agent_start_failed",
            Self::Play(e) => e.kind(),
            Self::Io { .. } => "harness_io",
            Self::Tls(_) => "tls_material",
            Self::Redirect(_) => "redirect_failed",
            Self::Step(_) => "step_invalid",
            Self::XdsNack(_) => "xds_nack",
            Self::XdsUnanswered(_) => "xds_unanswered",
            Self::Xds(_) => "xds_setup",
            Self::Docker(_) => "docker_unavailable",
            Self::Container(_) => "container_start_failed",
            Self::Report(e) => e.kind(),
            Self::ReportDir { .. } => "report_write_failed",
            Self::ReadReport { source, .. } => source.kind(),
            Self::Merge(e) => e.kind(),
        }
    }

    /// An `Io` error for `action`.
    pub(crate) fn io(action: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            action: action.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_stable_snake_case() {
        let errors = [
            Error::Usage("x".into()),
            Error::io("bind", std::io::Error::other("x")),
            Error::Tls("bad pem".into()),
            Error::Play(PlayError::UnknownInstance("c".into())),
            Error::XdsNack("x".into()),
            Error::XdsUnanswered("x".into()),
            Error::Docker("x".into()),
            Error::Container("x".into()),
        ];
        let kinds: Vec<_> = errors.iter().map(Error::kind).collect();
        assert_eq!(
            kinds,
            [
                "usage",
                "harness_io",
                "tls_material",
                "unknown_instance",
                "xds_nack",
                "xds_unanswered",
                "docker_unavailable",
                "container_start_failed"
            ]
        );
    }
}
