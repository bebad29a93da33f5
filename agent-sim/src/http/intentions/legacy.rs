//! The legacy by-ID intention endpoints Consul CE still serves (`agent/intentions_endpoint.go`
//! `IntentionCreate`, `IntentionSpecific*`): `POST /v1/connect/intentions` → `{"ID":"<uuid>"}`,
//! `GET|PUT|DELETE /v1/connect/intentions/:id`. ACLs as `Intention.Apply`/`Get` check them:
//! `intention:write` on the destination to write, `intention:read` on source or destination
//! to read; denial is 403 `Permission denied`.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::super::app::Ctx;
use super::super::error::ApiError;
use super::super::meta;
use super::super::query::QueryOpts;
use super::super::serve::{ReadSpec, server_read};
use crate::model::acl::{Level, Resource};
use crate::model::intention;
use crate::state::control::Control;

/// Go's `time.Time` JSON for now (RFC 3339, UTC).
fn now_text() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

fn last_segment(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or_default()
}

/// `POST /v1/connect/intentions`.
pub(super) async fn create(
    State(c): State<Control>,
    ctx: Ctx,
    body: Bytes,
) -> Result<Response, ApiError> {
    let parsed = intention::parse_body(&body, true).map_err(ApiError::from)?;
    let authz = c.authz(&ctx)?;
    if !authz.allows(
        Resource::Intention,
        last_segment(parsed.destination()),
        Level::Write,
    ) {
        return Err(ApiError::from(intention::IntentionError::PermissionDenied));
    }
    if c.store.servers_down() {
        return Err(ApiError::no_servers());
    }
    let id = c.store.with_rng(|rng| {
        uuid::Builder::from_random_bytes(rand::Rng::random(rng))
            .into_uuid()
            .to_string()
    });
    let now = now_text();
    let id = c
        .store
        .write(|st| {
            let index = st.next_index();
            intention::legacy_create(&mut st.config, parsed, &id, &now, index)
        })
        .map_err(ApiError::from)?;
    Ok(meta::json(&json!({ "ID": id }), ctx.pretty))
}

/// `GET /v1/connect/intentions/:id` (blocking on the config entries' index).
pub(super) async fn get_one(
    State(c): State<Control>,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let authz = c.authz(&ctx)?;
    let can_read = |src: &str, dst: &str| {
        authz.allows(Resource::Intention, src, Level::Read)
            || authz.allows(Resource::Intention, dst, Level::Read)
    };
    let a = server_read(&c.store, &opts, ReadSpec::default(), |st| {
        let ixn = intention::legacy_get(&st.config, &id, &can_read).map_err(ApiError::from)?;
        Ok((st.config.max_index(), ixn.to_json()))
    })
    .await?;
    Ok(meta::json_with(&a.body, ctx.pretty, Some(a.meta), None))
}

/// `PUT /v1/connect/intentions/:id` → `{"ID":"<id>"}`.
pub(super) async fn update(
    State(c): State<Control>,
    ctx: Ctx,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let parsed = intention::parse_body(&body, false).map_err(ApiError::from)?;
    let authz = c.authz(&ctx)?;
    if c.store.servers_down() {
        return Err(ApiError::no_servers());
    }
    let can_write = |dst: &str| authz.allows(Resource::Intention, dst, Level::Write);
    let now = now_text();
    c.store
        .write(|st| {
            let index = st.next_index();
            intention::legacy_update(&mut st.config, &id, parsed, &now, index, &can_write)
        })
        .map_err(ApiError::from)?;
    Ok(meta::json(&json!({ "ID": id }), ctx.pretty))
}

/// `DELETE /v1/connect/intentions/:id` → `true`.
pub(super) async fn delete(
    State(c): State<Control>,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let authz = c.authz(&ctx)?;
    if c.store.servers_down() {
        return Err(ApiError::no_servers());
    }
    let can_write = |dst: &str| authz.allows(Resource::Intention, dst, Level::Write);
    c.store
        .write(|st| {
            let index = st.next_index();
            intention::legacy_delete(&mut st.config, &id, index, &can_write)
        })
        .map_err(ApiError::from)?;
    Ok(meta::json(&Value::Bool(true), ctx.pretty))
}
