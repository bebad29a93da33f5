//! `GET /v1/status/leader` and `/v1/status/peers`: the (simulated) server's address, or Consul's
//! error while the servers are unreachable.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use serde_json::json;

use super::app::{Ctx, methods};
use super::error::ApiError;
use super::meta;
use crate::state::control::Control;

/// The RPC address the simulated leader reports.
const LEADER: &str = "127.0.0.1:8300";

pub(crate) fn routes() -> Router<Control> {
    Router::new()
        .route("/v1/status/leader", methods("OPTIONS,GET", get(leader)))
        .route("/v1/status/peers", methods("OPTIONS,GET", get(peers)))
}

async fn leader(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    if c.store.servers_down() {
        return Err(ApiError::no_servers());
    }
    Ok(meta::json(&json!(LEADER), ctx.pretty))
}

async fn peers(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    if c.store.servers_down() {
        return Err(ApiError::no_servers());
    }
    Ok(meta::json(&json!([LEADER]), ctx.pretty))
}
