//! Catalog endpoints: one service's instances and its connect-capable instances (blocking,
//! `?filter`), the service, node and datacenter lists, and catalog register/deregister (used to
//! put instances on other nodes).

use std::collections::BTreeMap;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, put};
use serde_json::Value;

use super::app::{Ctx, methods};
use super::error::ApiError;
use super::meta;
use super::query::QueryOpts;
use super::serve::{ReadSpec, server_read};
use crate::go::filter::{CATALOG_SERVICE_FIELDS, Filter, NODE_FIELDS};
use crate::model::acl::{Level, Resource};
use crate::model::service;
use crate::state::control::Control;

pub(crate) fn routes() -> Router<Control> {
    Router::new()
        .route(
            "/v1/catalog/service/{*service}",
            methods("OPTIONS,GET", get(service_nodes)),
        )
        .route(
            "/v1/catalog/connect/{*service}",
            methods("OPTIONS,GET", get(connect_nodes)),
        )
        .route("/v1/catalog/nodes", methods("OPTIONS,GET", get(nodes)))
        .route(
            "/v1/catalog/datacenters",
            methods("OPTIONS,GET", get(datacenters)),
        )
        .route(
            "/v1/catalog/services",
            methods("OPTIONS,GET", get(services)),
        )
        .route(
            "/v1/catalog/register",
            methods("OPTIONS,PUT", put(register)),
        )
        .route(
            "/v1/catalog/deregister",
            methods("OPTIONS,PUT", put(deregister)),
        )
}

async fn service_nodes(
    State(c): State<Control>,
    ctx: Ctx,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    instances(c, ctx, name, false).await
}

/// `GET /v1/catalog/connect/:service`: `CatalogServiceNodes` with `Connect: true` (the sidecars
/// for the service and its connect-native instances).
async fn connect_nodes(
    State(c): State<Control>,
    ctx: Ctx,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    instances(c, ctx, name, true).await
}

async fn instances(
    c: Control,
    ctx: Ctx,
    name: String,
    connect: bool,
) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let tags = ctx.query.all("tag");
    let authz = c.authz(&ctx)?;
    let filter = opts
        .filter
        .as_deref()
        .map(|f| Filter::parse_for(f, CATALOG_SERVICE_FIELDS))
        .transpose()?;
    let cache_key = opts.cached.then(|| {
        format!(
            "catalog-service:{connect}:{name}:{tags:?}:{:?}",
            opts.filter
        )
    });
    let spec = ReadSpec {
        cache_key,
        suppress_unchanged: false,
        index_of: None,
    };
    let a = server_read(&c.store, &opts, spec, |st| {
        let (index, entries) = st.health_entries(&name, connect, false);
        let items: Vec<Value> = entries
            .into_iter()
            .filter(|(node, svc, _)| {
                tags.iter().all(|t| svc.tags.contains(t))
                    && authz.allows(Resource::Service, &svc.service, Level::Read)
                    && authz.allows(Resource::Node, &node.name, Level::Read)
            })
            .map(|(node, svc, _)| service::catalog_service_json(node, &st.with_virtual_ip(svc)))
            .collect();
        let body = match &filter {
            Some(f) => f.apply(Value::Array(items))?,
            None => Value::Array(items),
        };
        Ok((index, body))
    })
    .await?;
    Ok(meta::json_with(&a.body, ctx.pretty, Some(a.meta), a.cache))
}

/// `GET /v1/catalog/datacenters`: the known datacenters (no query metadata: the agent answers
/// from its router, not a blocking RPC).
async fn datacenters(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    if c.store.servers_down() {
        return Err(ApiError::no_servers());
    }
    let dcs = Value::Array(vec![Value::String(c.store.cfg.datacenter.clone())]);
    Ok(meta::json(&dcs, ctx.pretty))
}

/// `GET /v1/catalog/nodes`: every node the token may read (`node:read`) in name order, then
/// `?node-meta=key:value` (all must match) and `?filter`; `?near` is accepted (no coordinates
/// exist, so the order stays). `[]` when none; blocking on the nodes' index.
async fn nodes(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let authz = c.authz(&ctx)?;
    let filter = opts
        .filter
        .as_deref()
        .map(|f| Filter::parse_for(f, NODE_FIELDS))
        .transpose()?;
    let node_meta: Vec<(String, String)> = ctx
        .query
        .all("node-meta")
        .iter()
        .map(|kv| match kv.split_once(':') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => (kv.clone(), String::new()),
        })
        .collect();
    let spec = ReadSpec {
        cache_key: opts
            .cached
            .then(|| format!("catalog-nodes:{node_meta:?}:{:?}", opts.filter)),
        ..ReadSpec::default()
    };
    let a = server_read(&c.store, &opts, spec, |st| {
        let index = st
            .nodes
            .values()
            .map(|n| n.modify_index)
            .max()
            .unwrap_or(st.index);
        let items: Vec<Value> = st
            .nodes
            .values()
            .filter(|n| authz.allows(Resource::Node, &n.name, Level::Read))
            .filter(|n| {
                node_meta
                    .iter()
                    .all(|(k, v)| n.meta.get(k).is_some_and(|have| have == v))
            })
            .map(service::node_json)
            .collect();
        let body = match &filter {
            Some(f) => f.apply(Value::Array(items))?,
            None => Value::Array(items),
        };
        Ok((index, body))
    })
    .await?;
    Ok(meta::json_with(&a.body, ctx.pretty, Some(a.meta), a.cache))
}

async fn services(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let authz = c.authz(&ctx)?;
    let spec = ReadSpec {
        cache_key: opts.cached.then(|| "catalog-services".to_owned()),
        suppress_unchanged: false,
        index_of: None,
    };
    let a = server_read(&c.store, &opts, spec, |st| {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for svc in st
            .services
            .values()
            .filter(|s| authz.allows(Resource::Service, &s.service, Level::Read))
        {
            let tags = out.entry(svc.service.clone()).or_default();
            for t in &svc.tags {
                if !tags.contains(t) {
                    tags.push(t.clone());
                }
            }
        }
        let index = st.service_index.values().copied().max().unwrap_or(st.index);
        Ok((index, serde_json::to_value(out).unwrap_or_default()))
    })
    .await?;
    Ok(meta::json_with(&a.body, ctx.pretty, Some(a.meta), a.cache))
}

async fn register(State(c): State<Control>, ctx: Ctx, body: Bytes) -> Result<Response, ApiError> {
    let reg =
        service::decode_catalog_register(&body, &c.store.cfg.datacenter).map_err(ApiError::from)?;
    let authz = c.authz(&ctx)?;
    authz
        .require(Resource::Node, &reg.node.name, Level::Write)
        .map_err(ApiError::from_text)?;
    if let Some(svc) = &reg.service {
        authz
            .require(Resource::Service, &svc.service, Level::Write)
            .map_err(ApiError::from_text)?;
    }
    if c.store.servers_down() {
        return Err(ApiError::no_servers());
    }
    c.store.catalog_register(reg);
    Ok(meta::json(&Value::Bool(true), ctx.pretty))
}

async fn deregister(State(c): State<Control>, ctx: Ctx, body: Bytes) -> Result<Response, ApiError> {
    let req = service::decode_catalog_deregister(&body, &c.store.cfg.datacenter)
        .map_err(ApiError::from)?;
    let authz = c.authz(&ctx)?;
    authz
        .require(Resource::Node, &req.node, Level::Write)
        .map_err(ApiError::from_text)?;
    if c.store.servers_down() {
        return Err(ApiError::no_servers());
    }
    let sid = (!req.service_id.is_empty()).then_some(req.service_id.as_str());
    let cid = (!req.check_id.is_empty()).then_some(req.check_id.as_str());
    c.store.catalog_deregister(&req.node, sid, cid)?;
    Ok(meta::json(&Value::Bool(true), ctx.pretty))
}
