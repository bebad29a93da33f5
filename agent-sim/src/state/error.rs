//! `SimError`: what the library's Rust API can fail with. Each variant has a stable machine name
//! (`SimError::kind`) for reports.

use std::net::SocketAddr;

use crate::ca::CaError;

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

impl From<crate::http::error::ApiError> for SimError {
    fn from(e: crate::http::error::ApiError) -> Self {
        Self::Rejected {
            status: e.status.as_u16(),
            message: e.body,
        }
    }
}

impl From<SimError> for crate::http::error::ApiError {
    fn from(e: SimError) -> Self {
        match e {
            SimError::Rejected { status, message } => Self::with_status(status, message),
            other => Self::from_text(other.to_string()),
        }
    }
}
