//! `ApiError`: an HTTP error rendered the way Consul's agent renders one: plain text body,
//! `text/plain; charset=utf-8`, and a status derived from the error text when it came from an RPC.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The text Consul returns when no server can be reached.
pub(crate) const NO_SERVERS: &str = "No known Consul servers";

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
        let status = if text.contains("Permission denied") || text.contains("ACL not found") {
            StatusCode::FORBIDDEN
        } else if text.contains("Rate limit reached, try again later") {
            StatusCode::TOO_MANY_REQUESTS
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        Self::new(status, text)
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

/// Domain errors carry their HTTP status; their text is the body.
macro_rules! from_domain_error {
    ($($ty:ty => $status:expr),* $(,)?) => {$(
        impl From<$ty> for ApiError {
            fn from(e: $ty) -> Self {
                let status: fn(&$ty) -> u16 = $status;
                Self::with_status(status(&e), e.to_string())
            }
        }
    )*};
}

from_domain_error! {
    crate::filter::FilterError => |_| 500,
    crate::service::RegisterError => crate::service::RegisterError::status,
    crate::chain::ChainError => crate::chain::ChainError::status,
    crate::ca::CaError => crate::ca::CaError::http_status,
    crate::config_entry::ConfigError => |e| match e {
        crate::config_entry::ConfigError::Decode(_) => 400,
        crate::config_entry::ConfigError::NotFound { .. } => 404,
        _ => 500,
    },
    crate::intention::IntentionError => |e| match e {
        crate::intention::IntentionError::BadRequest(_) | crate::intention::IntentionError::Decode(_) => 400,
        crate::intention::IntentionError::NotFound(_) => 404,
        crate::intention::IntentionError::PermissionDenied => 403,
        _ => 500,
    },
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
