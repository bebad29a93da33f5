//! The router (`app()`), the request context extractor, Consul's 404/405 answers, and the
//! middleware that logs every request and plays the request-level faults.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use tokio::time::Instant;

use super::error::ApiError;
use super::meta;
use super::query::{RawQuery, request_token};
use crate::model::acl::{self, Authorizer};
use crate::state::control::Control;
use crate::state::request_log::Arrival;

/// Builds the whole HTTP API: Consul's `/v1/` endpoints and the sim's `/_sim/` control API.
pub fn app(control: Control) -> Router {
    let v1 = Router::new()
        .merge(super::connect::routes())
        .merge(super::intentions::routes())
        .merge(super::config::routes())
        .merge(super::chain::routes())
        .merge(super::health::routes())
        .merge(super::agent::routes())
        .merge(super::agent_local::routes())
        .merge(super::agent_check::routes())
        .merge(super::catalog::routes())
        .merge(super::status::routes())
        .merge(super::prepared_query::routes())
        .fallback(|| async { ApiError::unknown_path() })
        .layer(axum::middleware::from_fn_with_state(
            control.clone(),
            observe,
        ));
    Router::new()
        .merge(v1)
        .nest("/_sim", control_routes(&control))
        .with_state(control)
}

/// The `/_sim/` routes behind the management-token check (with ACLs on).
fn control_routes(control: &Control) -> Router<Control> {
    super::control::routes().layer(axum::middleware::from_fn_with_state(
        control.clone(),
        super::control_auth::require_management,
    ))
}

/// Serves only the `/_sim/` control API (for the separate control port).
pub fn control_app(control: Control) -> Router {
    Router::new()
        .nest("/_sim", control_routes(&control))
        .with_state(control)
}

/// Consul's handling of other methods on a path: 405 with `Allow`, and 200 for OPTIONS.
pub(crate) fn methods(allow: &'static str, mr: MethodRouter<Control>) -> MethodRouter<Control> {
    mr.fallback(move |method: Method| async move {
        if method == Method::OPTIONS {
            let mut r = StatusCode::OK.into_response();
            meta::set(r.headers_mut(), "allow", allow);
            return r;
        }
        ApiError::method_not_allowed(method.as_str(), allow).into_response()
    })
}

/// What most handlers need from the request.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub(crate) query: RawQuery,
    pub(crate) headers: HeaderMap,
    pub(crate) pretty: bool,
}

impl<S: Send + Sync> FromRequestParts<S> for Ctx {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let query = RawQuery::parse(parts.uri.query());
        let pretty = query.has("pretty");
        Ok(Self {
            query,
            headers: parts.headers.clone(),
            pretty,
        })
    }
}

impl Ctx {
    /// The secret the request carries.
    pub(crate) fn token(&self) -> Option<String> {
        request_token(&self.query, &self.headers).0
    }
}

impl Control {
    /// Resolves the request's token; 403 `ACL not found` for an unknown one.
    pub(crate) fn authz(&self, ctx: &Ctx) -> Result<Authorizer, ApiError> {
        let token = ctx.token();
        self.store
            .read(|st| acl::resolve(&self.store.cfg.acl, &st.tokens, token.as_deref()))
            .map_err(|e| ApiError::from_text(e.to_string()))
    }
}

/// Logs the request, plays hung/latency/error faults, and adds the headers every answer has.
async fn observe(State(c): State<Control>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let query = RawQuery::parse(req.uri().query());
    let (token, token_source) = request_token(&query, req.headers());
    let path = req.uri().path().to_owned();
    let seq = c.log.arrive(Arrival {
        method: req.method().to_string(),
        path: path.clone(),
        query: req.uri().query().unwrap_or_default().to_owned(),
        token,
        token_source,
        index: query.non_empty("index").and_then(|i| i.parse().ok()),
        hash: query.non_empty("hash").map(str::to_owned),
        wait: query.non_empty("wait").map(str::to_owned),
    });
    let mut faults = c.faults.subscribe();
    while faults.borrow_and_update().hung {
        // Never answer while hung; a dropped connection ends this future.
        if faults.changed().await.is_err() {
            break;
        }
    }
    let set = Arc::clone(&faults.borrow());
    let delay = set.delay_for(&path);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let mut resp = match set.error_for(&path) {
        Some((status, body)) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            ApiError::new(status, body).into_response()
        }
        None => next.run(req).await,
    };
    meta::set_static(
        resp.headers_mut(),
        "x-consul-default-acl-policy",
        c.store.cfg.acl.default_policy.as_str(),
    );
    c.log.finish(seq, resp.status().as_u16(), started.elapsed());
    resp
}
