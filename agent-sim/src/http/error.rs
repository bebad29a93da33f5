//! `ApiError`: an HTTP error rendered the way Consul's agent renders one: plain text body,
//! `text/plain; charset=utf-8`, and a status derived from the error text when it came from an RPC.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::state::error::{NO_SERVERS, StateError, rpc_status};

/// An error response of the simulated agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Plain-text body, exactly as Consul writes it.
    pub body: String,
    /// `Allow` header, for 405 and OPTIONS answers.
    pub allow: Option<&'static str>,
}

impl ApiError {
    /// An error with an explicit status.
    pub fn new(status: StatusCode, body: impl Into<String>) -> Self {
        Self {
            status,
            body: body.into(),
            allow: None,
        }
    }

    /// An error with a numeric status (500 when the number is not a status).
    pub fn with_status(status: u16, body: impl Into<String>) -> Self {
        Self::new(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            body,
        )
    }

    /// 400 with `body`.
    pub fn bad_request(body: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, body)
    }

    /// 404 with `body`.
    pub fn not_found(body: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, body)
    }

    /// An error text as Consul's HTTP layer classifies it (reference §0 "Responses and errors"):
    /// 403 for ACL texts, 429 for the rate limit, otherwise 500.
    pub fn from_text(text: impl Into<String>) -> Self {
        let text = text.into();
        Self::with_status(rpc_status(&text), text)
    }

    /// 500 `No known Consul servers`: an RPC attempted while the servers are unreachable.
    pub fn no_servers() -> Self {
        Self::from_text(NO_SERVERS)
    }

    /// 405 `method X not allowed` with the `Allow` header.
    pub fn method_not_allowed(method: &str, allow: &'static str) -> Self {
        Self {
            allow: Some(allow),
            ..Self::new(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("method {method} not allowed"),
            )
        }
    }

    /// 404 for a path under `/v1/` that no endpoint serves.
    pub fn unknown_path() -> Self {
        Self::not_found("Invalid URL path: not a recognized HTTP API endpoint\n")
    }
}

/// A state error: Consul's status for its kind, its text as the body.
impl From<StateError> for ApiError {
    fn from(e: StateError) -> Self {
        Self::with_status(e.status(), e.to_string())
    }
}

/// Model errors carry their HTTP status through [`StateError`] (one mapping for both the HTTP
/// API and the Rust API's `SimError::Rejected`); their text is the body.
macro_rules! from_domain_error {
    ($($ty:ty),* $(,)?) => {$(
        impl From<$ty> for ApiError {
            fn from(e: $ty) -> Self {
                StateError::from(e).into()
            }
        }
    )*};
}

from_domain_error! {
    crate::go::filter::FilterError,
    crate::model::service::RegisterError,
    crate::model::chain::ChainError,
    crate::model::ca::CaError,
    crate::model::config_entry::ConfigError,
    crate::model::intention::IntentionError,
}

/// The Rust API's error, as the `/_sim/` control API answers it.
impl From<crate::state::error::SimError> for ApiError {
    fn from(e: crate::state::error::SimError) -> Self {
        match e {
            crate::state::error::SimError::Rejected { status, message } => {
                Self::with_status(status, message)
            }
            other => Self::from_text(other.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, self.body).into_response();
        let headers = resp.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        if let Some(allow) = self.allow {
            headers.insert(header::ALLOW, HeaderValue::from_static(allow));
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_like_consul() {
        assert_eq!(
            ApiError::from_text("Permission denied: x").status,
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            ApiError::from_text("rpc error making call: ACL not found").status,
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            ApiError::from_text("Rate limit reached, try again later").status,
            StatusCode::TOO_MANY_REQUESTS
        );
        assert_eq!(
            ApiError::no_servers().status,
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }
}
