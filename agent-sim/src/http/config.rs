//! Config entry endpoints: `PUT /v1/config` (with `?cas`), `GET /v1/config/:kind[/:name]`
//! (blocking), `DELETE /v1/config/:kind/:name`, with the ACL rule of each kind.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, put};
use serde_json::{Value, json};

use super::app::{Ctx, methods};
use super::error::ApiError;
use super::meta;
use super::query::QueryOpts;
use super::serve::{ReadSpec, server_read};
use crate::model::acl::{Authorizer, Level, Resource};
use crate::model::config_entry::{self, ConfigError, Kind};
use crate::state::control::Control;

pub(crate) fn routes() -> Router<Control> {
    Router::new()
        .route("/v1/config", methods("OPTIONS,PUT", put(apply)))
        .route(
            "/v1/config/",
            methods("OPTIONS,GET,DELETE", get(no_kind).delete(no_kind)),
        )
        .route(
            "/v1/config/{kind}",
            methods("OPTIONS,GET,DELETE", get(list).delete(delete_no_name)),
        )
        .route(
            "/v1/config/{kind}/{*name}",
            methods("OPTIONS,GET,DELETE", get(get_one).delete(delete)),
        )
}

/// Whether `authz` may read (or write) entry `name` of `kind`.
fn allowed(authz: &Authorizer, kind: Kind, name: &str, level: Level) -> Result<(), ApiError> {
    let r = match kind {
        Kind::ServiceIntentions => authz.require(Resource::Intention, name, level),
        Kind::ProxyDefaults if level == Level::Read => Ok(()),
        Kind::ProxyDefaults => authz.require(Resource::Mesh, "", Level::Write),
        // `MeshConfigEntry.CanRead` allows anyone; `CanWrite` needs `mesh:write`.
        Kind::Mesh if level == Level::Read => Ok(()),
        Kind::Mesh => authz.require(Resource::Mesh, "", Level::Write),
        // `JWTProviderConfigEntry.CanRead`: any `service:write` (so sidecars can read
        // providers, hashicorp/consul#17886), else `mesh:read`; `CanWrite`: `mesh:write`.
        Kind::JwtProvider if level == Level::Read && authz.allows_service_write_any() => Ok(()),
        Kind::JwtProvider => authz.require(Resource::Mesh, "", level),
        _ => authz.require(Resource::Service, name, level),
    };
    r.map_err(ApiError::from_text)
}

fn parse_kind(kind: &str) -> Result<Kind, ApiError> {
    Kind::parse(kind)
        .ok_or_else(|| ApiError::bad_request(format!("invalid config entry kind: {kind}")))
}

fn parse_cas(ctx: &Ctx) -> Result<Option<u64>, ApiError> {
    ctx.query
        .non_empty("cas")
        .map(|v| {
            v.parse()
                .map_err(|_| ApiError::bad_request(format!("Failed to parse cas parameter: {v:?}")))
        })
        .transpose()
}

async fn apply(State(c): State<Control>, ctx: Ctx, body: Bytes) -> Result<Response, ApiError> {
    let entry = config_entry::decode_entry(&body).map_err(ApiError::from)?;
    let authz = c.authz(&ctx)?;
    allowed(&authz, entry.kind(), entry.name(), Level::Write)?;
    let cas = parse_cas(&ctx)?;
    if c.store.servers_down() {
        return Err(ApiError::no_servers());
    }
    let ok = c
        .store
        .write(|st| {
            let index = st.next_index();
            st.upsert_config(entry, cas, index)
        })
        .map_err(ApiError::from)?;
    Ok(meta::json(&Value::Bool(ok), ctx.pretty))
}

async fn no_kind() -> ApiError {
    ApiError::bad_request("Must provide either a kind or both kind and name")
}

async fn delete_no_name() -> ApiError {
    ApiError::not_found("Must provide both a kind and name to delete")
}

async fn list(
    State(c): State<Control>,
    ctx: Ctx,
    Path(kind): Path<String>,
) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let kind = parse_kind(&kind)?;
    let authz = c.authz(&ctx)?;
    let spec = ReadSpec {
        cache_key: None,
        suppress_unchanged: false,
        index_of: None,
    };
    let a = server_read(&c.store, &opts, spec, |st| {
        let items: Vec<Value> = st
            .config
            .list(kind)
            .into_iter()
            .filter(|e| allowed(&authz, kind, e.name(), Level::Read).is_ok())
            .map(config_entry::ConfigEntry::to_json)
            .collect();
        Ok((st.config.max_index(), Value::Array(items)))
    })
    .await?;
    Ok(meta::json_with(&a.body, ctx.pretty, Some(a.meta), None))
}

async fn get_one(
    State(c): State<Control>,
    ctx: Ctx,
    Path((kind, name)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let kind = parse_kind(&kind)?;
    let authz = c.authz(&ctx)?;
    allowed(&authz, kind, &name, Level::Read)?;
    let spec = ReadSpec {
        cache_key: None,
        suppress_unchanged: false,
        index_of: None,
    };
    let a = server_read(&c.store, &opts, spec, |st| {
        match st.config.get(kind, &name) {
            Some(e) => Ok((st.config.max_index(), e.to_json())),
            None => Err(ApiError::from(ConfigError::NotFound {
                kind: kind.as_str().to_owned(),
                name: name.clone(),
            })),
        }
    })
    .await?;
    Ok(meta::json_with(&a.body, ctx.pretty, Some(a.meta), None))
}

async fn delete(
    State(c): State<Control>,
    ctx: Ctx,
    Path((kind, name)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let kind = parse_kind(&kind)?;
    let authz = c.authz(&ctx)?;
    allowed(&authz, kind, &name, Level::Write)?;
    let cas = parse_cas(&ctx)?;
    if c.store.servers_down() {
        return Err(ApiError::no_servers());
    }
    let ok = c
        .store
        .write(|st| {
            let index = st.next_index();
            st.config.delete(kind, &name, cas, index)
        })
        .map_err(ApiError::from)?;
    let body = if cas.is_some() {
        Value::Bool(ok)
    } else {
        json!({})
    };
    Ok(meta::json(&body, ctx.pretty))
}
