//! Why playing a setup or step failed ([`PlayError`], with stable machine names), and the
//! wrapper that names what was being done when the simulator refused it.

use crate::state::error::SimError;

/// Why playing a setup or step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlayError {
    /// The simulator rejected a state change.
    #[error("{what}: {source}")]
    Sim {
        /// What was being done.
        what: String,
        /// The simulator's error.
        #[source]
        source: SimError,
    },
    /// A step names an instance that was never set up.
    #[error("unknown instance {0:?}")]
    UnknownInstance(String),
    /// An upstream or instance has no port in [`Ports`](super::Ports).
    #[error("no port was picked for {0}")]
    NoPort(String),
    /// `add-upstream` names an upstream that is not in the setup.
    #[error("upstream {0:?} is not in the setup")]
    UnknownUpstream(String),
    /// A duration is neither a named timeout nor a Go duration.
    #[error("invalid duration {0:?}")]
    BadDuration(String),
    /// `key_type`/`key_bits` name a key kind the CA does not run.
    #[error("unsupported CA key {0}: ec 256/384 or rsa 2048/4096")]
    UnsupportedKey(String),
    /// `agent-server-cert` on an agent that serves no TLS.
    #[error("agent-server-cert: the agent serves no TLS (the setup has no agent_tls)")]
    NoAgentTls,
}

impl PlayError {
    /// A stable machine name for reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Sim { .. } => "agent_control_failed",
            Self::UnknownInstance(_) => "unknown_instance",
            Self::NoPort(_) => "no_port",
            Self::UnknownUpstream(_) => "unknown_upstream",
            Self::BadDuration(_) => "bad_duration",
            Self::UnsupportedKey(_) => "unsupported_ca_key",
            Self::NoAgentTls => "no_agent_tls",
        }
    }
}

/// The simulator's refusal of `what`, as a [`PlayError`].
pub(super) fn sim<T>(what: &str, r: Result<T, SimError>) -> Result<T, PlayError> {
    r.map_err(|source| PlayError::Sim {
        what: what.to_owned(),
        source,
    })
}
