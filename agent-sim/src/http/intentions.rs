//! Intention endpoints: list (blocking, `?filter`), match (blocking, with wakeup suppression and
//! `?cached`), check, the exact GET/PUT/DELETE and the legacy by-ID API (`intentions/legacy.rs`),
//! with Consul's ACL rules per endpoint.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use super::app::{Ctx, methods};
use super::connect::intention_default;
use super::error::ApiError;
use super::meta::{self, Body, SharedBody};
use super::query::QueryOpts;
use super::serve::{ReadSpec, server_read, server_read_memo};
use crate::go::filter::{Filter, INTENTION_FIELDS};
use crate::model::acl::{Level, Resource};
use crate::model::intention;
use crate::state::control::Control;

mod legacy;

/// `GET /v1/connect/intentions` (`Intention.List`): every intention in precedence order, the
/// ones the token may not read (`intention:read` on source or destination) left out, then the
/// `?filter`; `[]` when none; blocking on the config entries' index.
async fn list(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let filter = opts
        .filter
        .as_deref()
        .map(|f| Filter::parse_for(f, INTENTION_FIELDS))
        .transpose()?;
    let authz = c.authz(&ctx)?;
    let spec = ReadSpec::default();
    let a = server_read(&c.store, &opts, spec, |st| {
        let mut all = intention::all_intentions(&st.config);
        intention::sort_intentions(&mut all);
        let items: Vec<Value> = all
            .iter()
            .filter(|i| {
                authz.allows(Resource::Intention, &i.source_name, Level::Read)
                    || authz.allows(Resource::Intention, &i.destination_name, Level::Read)
            })
            .map(intention::Intention::to_json)
            .collect();
        let body = match &filter {
            Some(f) => f.apply(Value::Array(items))?,
            None => Value::Array(items),
        };
        Ok((st.config.max_index(), body))
    })
    .await?;
    Ok(meta::json_with(&a.body, ctx.pretty, Some(a.meta), None))
}

pub(crate) fn routes() -> Router<Control> {
    Router::new()
        .route(
            "/v1/connect/intentions",
            methods("OPTIONS,GET,POST", get(list).post(legacy::create)),
        )
        .route(
            "/v1/connect/intentions/{id}",
            methods(
                "OPTIONS,GET,PUT,DELETE",
                get(legacy::get_one)
                    .put(legacy::update)
                    .delete(legacy::delete),
            ),
        )
        .route(
            "/v1/connect/intentions/match",
            methods("OPTIONS,GET", get(match_)),
        )
        .route(
            "/v1/connect/intentions/check",
            methods("OPTIONS,GET", get(check)),
        )
        .route(
            "/v1/connect/intentions/exact",
            methods(
                "OPTIONS,GET,PUT,DELETE",
                get(exact_get).put(exact_put).delete(exact_delete),
            ),
        )
}

async fn match_(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let names = ctx.query.all("name");
    let (by, services) =
        intention::parse_match_query(ctx.query.get("by"), &names).map_err(ApiError::from)?;
    let authz = c.authz(&ctx)?;
    for s in &services {
        authz
            .require(Resource::Intention, s, Level::Read)
            .map_err(ApiError::from_text)?;
    }
    let by_word = ctx.query.get("by").unwrap_or_default();
    let cache_key = opts
        .cached
        .then(|| format!("intention-match:{by_word}:{}", names.join(",")));
    let spec = ReadSpec {
        cache_key,
        suppress_unchanged: true,
        // The index the evaluation below reports: a blocked match query re-renders only once
        // the config entries moved past its index, not on every write of the agent.
        index_of: Some(|st| st.config.max_index()),
    };
    // The answer depends on the config entries (their max index) and the query alone.
    let memo_key = format!("intention-match:{by_word}:{}", names.join("\n"));
    let a = server_read_memo(&c.store, &opts, spec, &memo_key, |st| {
        Ok((
            st.config.max_index(),
            SharedBody(Arc::new(Body::from_compact(Bytes::from(
                intention::match_compact(&st.config, by, &names),
            )))),
        ))
    })
    .await?;
    let m = a.meta.with_consistency(opts.stale, opts.consistent);
    Ok(meta::json_with(&a.body, ctx.pretty, Some(m), a.cache))
}

fn required<'a>(ctx: &'a Ctx, name: &str) -> Result<&'a str, ApiError> {
    ctx.query
        .non_empty(name)
        .ok_or_else(|| ApiError::from_text(format!("required query parameter '{name}' not set")))
}

async fn check(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let source = required(&ctx, "source")?.to_owned();
    let destination = required(&ctx, "destination")?.to_owned();
    let authz = c.authz(&ctx)?;
    let dest_name = destination.rsplit('/').next().unwrap_or_default();
    authz
        .require(Resource::Service, dest_name, Level::Read)
        .map_err(ApiError::from_text)?;
    let source_type = ctx.query.non_empty("source-type").map(str::to_owned);
    let default = intention_default(&c);
    let spec = ReadSpec {
        cache_key: None,
        suppress_unchanged: false,
        index_of: None,
    };
    let q = QueryOpts {
        min_index: 0,
        ..opts
    };
    let a = server_read(&c.store, &q, spec, |st| {
        let allowed = intention::check(
            &st.config,
            &source,
            &destination,
            source_type.as_deref(),
            &default,
        )
        .map_err(ApiError::from)?;
        Ok((st.config.max_index(), json!({ "Allowed": allowed })))
    })
    .await?;
    Ok(meta::json_with(&a.body, ctx.pretty, Some(a.meta), None))
}

async fn exact_get(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let source = required(&ctx, "source")?.to_owned();
    let destination = required(&ctx, "destination")?.to_owned();
    let authz = c.authz(&ctx)?;
    let last = |s: &str| s.rsplit('/').next().unwrap_or_default().to_owned();
    if !authz.allows(Resource::Intention, &last(&source), Level::Read)
        && !authz.allows(Resource::Intention, &last(&destination), Level::Read)
    {
        return Err(ApiError::from_text("Permission denied"));
    }
    let spec = ReadSpec {
        cache_key: None,
        suppress_unchanged: false,
        index_of: None,
    };
    let a = server_read(&c.store, &opts, spec, |st| {
        let ixn =
            intention::exact_get(&st.config, &source, &destination).map_err(ApiError::from)?;
        Ok((st.config.max_index(), ixn.to_json()))
    })
    .await?;
    Ok(meta::json_with(&a.body, ctx.pretty, Some(a.meta), None))
}

fn write_guard(c: &Control, ctx: &Ctx, destination: &str) -> Result<(), ApiError> {
    let authz = c.authz(ctx)?;
    let name = destination.rsplit('/').next().unwrap_or_default();
    authz
        .require(Resource::Intention, name, Level::Write)
        .map_err(ApiError::from_text)?;
    if c.store.servers_down() {
        return Err(ApiError::no_servers());
    }
    Ok(())
}

async fn exact_put(State(c): State<Control>, ctx: Ctx, body: Bytes) -> Result<Response, ApiError> {
    let source = required(&ctx, "source")?.to_owned();
    let destination = required(&ctx, "destination")?.to_owned();
    write_guard(&c, &ctx, &destination)?;
    c.store
        .write(|st| {
            let index = st.next_index();
            intention::exact_put(&mut st.config, &source, &destination, &body, index)
        })
        .map_err(ApiError::from)?;
    Ok(meta::json(&Value::Bool(true), ctx.pretty))
}

async fn exact_delete(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let source = required(&ctx, "source")?.to_owned();
    let destination = required(&ctx, "destination")?.to_owned();
    write_guard(&c, &ctx, &destination)?;
    c.store
        .write(|st| {
            let index = st.next_index();
            intention::exact_delete(&mut st.config, &source, &destination, index)
        })
        .map_err(ApiError::from)?;
    Ok(meta::json(&Value::Bool(true), ctx.pretty))
}
