//! The state floor's errors: [`StateError`], what a state change or read fails with (each surface
//! renders it: the HTTP API as Consul's status and plain-text body), and [`SimError`], what the
//! library's Rust API can fail with. Each variant has a stable machine name (`kind`) for reports.

use std::net::SocketAddr;

use crate::go::filter::FilterError;
use crate::model::ca::CaError;
use crate::model::chain::ChainError;
use crate::model::config_entry::ConfigError;
use crate::model::intention::IntentionError;
use crate::model::service::RegisterError;

/// An error of the simulator's Rust API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// A listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The CA refused an operation.
    #[error("CA: {0}")]
    Ca(#[from] CaError),
    /// A state change was rejected the way the HTTP API would reject it.
    #[error("rejected ({status}): {message}")]
    Rejected {
        /// The HTTP status the API would answer.
        status: u16,
        /// Consul's text.
        message: String,
    },
    /// A preload file could not be used.
    #[error("{path}: {message}")]
    Preload {
        /// The file.
        path: String,
        /// What is wrong, naming the entry and field.
        message: String,
    },
}

impl SimError {
    /// A stable machine name for reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Bind { .. } => "bind_failed",
            Self::Ca(_) => "ca_error",
            Self::Rejected { .. } => "rejected",
            Self::Preload { .. } => "preload_invalid",
        }
    }
}

impl From<StateError> for SimError {
    fn from(e: StateError) -> Self {
        Self::Rejected {
            status: e.status(),
            message: e.to_string(),
        }
    }
}

/// The text Consul returns when no server can be reached.
pub(crate) const NO_SERVERS: &str = "No known Consul servers";

/// Why a state change or read failed. The text is Consul's, byte for byte (the HTTP surface
/// writes it as the body); the variant says what kind of failure it is, and [`StateError::status`]
/// the status Consul's HTTP API answers it with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The request or the value is invalid (400).
    #[error("{0}")]
    Invalid(String),
    /// What was named does not exist (404).
    #[error("{0}")]
    NotFound(String),
    /// An ACL refused it (403).
    #[error("{0}")]
    PermissionDenied(String),
    /// A rate limit refused it (429).
    #[error("{0}")]
    RateLimited(String),
    /// No server can be reached (500 `No known Consul servers`).
    #[error("{NO_SERVERS}")]
    NoServers,
    /// A server call failed with this text; like Consul's HTTP layer, its words decide the
    /// status (403 for ACL texts, 429 for the rate limit, otherwise 500).
    #[error("{0}")]
    Rpc(String),
    /// Anything else (500).
    #[error("{0}")]
    Internal(String),
}

impl StateError {
    /// A stable machine name for reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "invalid",
            Self::NotFound(_) => "not_found",
            Self::PermissionDenied(_) => "permission_denied",
            Self::RateLimited(_) => "rate_limited",
            Self::NoServers => "no_servers",
            Self::Rpc(_) => "rpc_failed",
            Self::Internal(_) => "internal",
        }
    }

    /// The status Consul's HTTP API answers this error with.
    pub fn status(&self) -> u16 {
        match self {
            Self::Invalid(_) => 400,
            Self::NotFound(_) => 404,
            Self::PermissionDenied(_) => 403,
            Self::RateLimited(_) => 429,
            Self::NoServers | Self::Internal(_) => 500,
            Self::Rpc(text) => rpc_status(text),
        }
    }

    /// An error a model function reported with the status Consul answers it with.
    pub fn with_status(status: u16, text: String) -> Self {
        match status {
            400 => Self::Invalid(text),
            403 => Self::PermissionDenied(text),
            404 => Self::NotFound(text),
            429 => Self::RateLimited(text),
            _ => Self::Internal(text),
        }
    }
}

/// How Consul's HTTP layer classifies an error text that came from an RPC (reference §0
/// "Responses and errors"): 403 for ACL texts, 429 for the rate limit, otherwise 500.
pub(crate) fn rpc_status(text: &str) -> u16 {
    if text.contains("Permission denied") || text.contains("ACL not found") {
        403
    } else if text.contains("Rate limit reached, try again later") {
        429
    } else {
        500
    }
}

impl From<FilterError> for StateError {
    fn from(e: FilterError) -> Self {
        Self::Internal(e.to_string())
    }
}

impl From<RegisterError> for StateError {
    fn from(e: RegisterError) -> Self {
        Self::with_status(e.status(), e.to_string())
    }
}

impl From<ChainError> for StateError {
    fn from(e: ChainError) -> Self {
        Self::with_status(e.status(), e.to_string())
    }
}

impl From<CaError> for StateError {
    fn from(e: CaError) -> Self {
        Self::with_status(e.http_status(), e.to_string())
    }
}

impl From<ConfigError> for StateError {
    fn from(e: ConfigError) -> Self {
        let status = match e {
            ConfigError::Decode(_) => 400,
            ConfigError::NotFound { .. } => 404,
            _ => 500,
        };
        Self::with_status(status, e.to_string())
    }
}

impl From<IntentionError> for StateError {
    fn from(e: IntentionError) -> Self {
        let status = match e {
            IntentionError::BadRequest(_) | IntentionError::Decode(_) => 400,
            IntentionError::NotFound(_) => 404,
            IntentionError::PermissionDenied => 403,
            _ => 500,
        };
        Self::with_status(status, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_like_consul() {
        assert_eq!(StateError::Rpc("Permission denied: x".into()).status(), 403);
        assert_eq!(
            StateError::Rpc("rpc error making call: ACL not found".into()).status(),
            403
        );
        assert_eq!(
            StateError::Rpc("Rate limit reached, try again later".into()).status(),
            429
        );
        assert_eq!(StateError::Rpc("boom".into()).status(), 500);
        assert_eq!(StateError::NoServers.to_string(), NO_SERVERS);
        assert_eq!(StateError::with_status(418, "x".into()).status(), 500);
    }

    #[test]
    fn rejected_keeps_status_and_text() {
        let e = SimError::from(StateError::NotFound("Unknown service ID \"x\"".into()));
        assert_eq!(e.kind(), "rejected");
        assert_eq!(e.to_string(), "rejected (404): Unknown service ID \"x\"");
    }
}
