//! Who may use the `/_sim/` control API: with ACLs on, only a request carrying the management
//! token itself (header, `?token=` or bearer; the agent's default token does not count), so a
//! proxy under test holding an ordinary token cannot rotate the CA or forge identities.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::query::{RawQuery, request_token};
use crate::state::control::Control;

/// What a refused request is told (403 like Consul's ACL texts, so clients treat it as one).
pub(crate) fn refusal(token: Option<&str>, known: bool) -> ApiError {
    let who = match (token, known) {
        (None, _) => "the anonymous token".to_owned(),
        (Some(_), false) => return ApiError::new(StatusCode::FORBIDDEN, "ACL not found"),
        (Some(_), true) => "this token".to_owned(),
    };
    ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "Permission denied: {who} may not use the /_sim/ control API; with ACLs enabled it \
             requires the management token (X-Consul-Token)"
        ),
    )
}

/// Lets the request through when ACLs are off or it carries a management token.
pub(crate) async fn require_management(
    State(c): State<Control>,
    req: Request,
    next: Next,
) -> Response {
    let acl = &c.store.cfg.acl;
    if !acl.enabled {
        return next.run(req).await;
    }
    let query = RawQuery::parse(req.uri().query());
    let (token, _) = request_token(&query, req.headers());
    let lookup = token
        .as_deref()
        .map(|t| c.store.read(|st| st.tokens.get(t).map(|t| t.management)));
    match lookup {
        Some(Some(true)) => next.run(req).await,
        Some(Some(false)) => refusal(token.as_deref(), true).into_response(),
        Some(None) => refusal(token.as_deref(), false).into_response(),
        None => refusal(None, false).into_response(),
    }
}
