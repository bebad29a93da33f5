//! `GET /v1/health/connect/:service` and `GET /v1/health/service/:service`: instances with
//! their node and checks, `?passing`, tag, node-meta and `?filter` filters, blocking on the
//! service's index, the streaming-backend headers Consul sends for `?cached`/`?index` reads.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use serde_json::Value;

use super::app::{Ctx, methods};
use super::error::ApiError;
use super::meta;
use super::query::QueryOpts;
use super::serve::{ReadSpec, server_read};
use crate::go::filter::{Filter, HEALTH_ENTRY_FIELDS};
use crate::model::acl::{Level, Resource};
use crate::model::service;
use crate::state::control::Control;
use crate::state::queries;

pub(crate) fn routes() -> Router<Control> {
    Router::new()
        .route("/v1/health/connect/", methods("OPTIONS,GET", get(missing)))
        .route(
            "/v1/health/connect/{*service}",
            methods("OPTIONS,GET", get(connect)),
        )
        .route("/v1/health/service/", methods("OPTIONS,GET", get(missing)))
        .route(
            "/v1/health/service/{*service}",
            methods("OPTIONS,GET", get(by_service)),
        )
}

async fn missing() -> ApiError {
    ApiError::bad_request("Missing service name")
}

async fn connect(
    State(c): State<Control>,
    ctx: Ctx,
    Path(service): Path<String>,
) -> Result<Response, ApiError> {
    serve(c, ctx, service, true).await
}

async fn by_service(
    State(c): State<Control>,
    ctx: Ctx,
    Path(service): Path<String>,
) -> Result<Response, ApiError> {
    let connect = ctx.query.flag("connect").unwrap_or(false);
    serve(c, ctx, service, connect).await
}

async fn serve(c: Control, ctx: Ctx, service: String, connect: bool) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let passing = ctx
        .query
        .flag("passing")
        .ok_or_else(|| ApiError::bad_request("Invalid value for ?passing"))?;
    let tags = ctx.query.all("tag");
    let node_meta: Vec<(String, String)> = ctx
        .query
        .all("node-meta")
        .into_iter()
        .map(|p| {
            p.split_once(':')
                .map_or((p.clone(), String::new()), |(k, v)| {
                    (k.to_owned(), v.to_owned())
                })
        })
        .collect();
    let merge = ctx.query.has("merge-central-config");
    let authz = c.authz(&ctx)?;
    let filter = opts
        .filter
        .as_deref()
        .map(|f| Filter::parse_for(f, HEALTH_ENTRY_FIELDS))
        .transpose()?;
    if !authz.allows(Resource::Service, &service, Level::Read) {
        return Err(ApiError::from_text("Permission denied"));
    }
    let dc = c.store.cfg.datacenter.clone();
    let streaming = (opts.cached || opts.min_index > 0) && !ctx.query.has("near") && !merge;
    let cache_key = opts.cached.then(|| {
        format!(
            "health:{connect}:{service}:{passing}:{tags:?}:{node_meta:?}:{:?}",
            opts.filter
        )
    });
    let spec = ReadSpec {
        cache_key,
        suppress_unchanged: merge,
        index_of: None,
    };
    let a = server_read(&c.store, &opts, spec, |st| {
        let (index, entries) = st.health_entries(&service, connect, passing);
        let items: Vec<Value> = entries
            .into_iter()
            .filter(|(node, svc, _)| {
                tags.iter().all(|t| svc.tags.contains(t))
                    && node_meta.iter().all(|(k, v)| node.meta.get(k) == Some(v))
                    && authz.allows(Resource::Node, &node.name, Level::Read)
                    && authz.allows(Resource::Service, &svc.service, Level::Read)
            })
            .map(|(node, svc, checks)| {
                if merge && svc.kind == service::ServiceKind::ConnectProxy {
                    let central = st
                        .config
                        .central_config_for(&svc.proxy.destination_service_name);
                    let merged =
                        service::merge_central_config(svc, &queries::to_service_central(central));
                    return service::health_entry_json(node, &st.with_virtual_ip(&merged), &checks);
                }
                service::health_entry_json(node, &st.with_virtual_ip(svc), &checks)
            })
            .collect();
        let _ = &dc;
        let body = match &filter {
            Some(f) => f.apply(Value::Array(items))?,
            None => Value::Array(items),
        };
        Ok((index, body))
    })
    .await?;
    let m = a.meta.with_consistency(opts.stale, opts.consistent);
    let mut resp = meta::json_with(&a.body, ctx.pretty, Some(m), a.cache);
    if streaming {
        meta::set(resp.headers_mut(), "x-consul-query-backend", "streaming");
    }
    Ok(resp)
}
