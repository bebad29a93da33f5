//! `GET|POST /v1/discovery-chain/:service`: the compiled chain for a service, with POST
//! overrides, blocking on the config entries with wakeup suppression.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;

use super::app::{Ctx, methods};
use super::error::ApiError;
use super::meta;
use super::query::QueryOpts;
use super::serve::{ReadSpec, server_read};
use crate::model::acl::{Level, Resource};
use crate::model::chain::{self, ChainRequest};
use crate::state::control::Control;
use crate::state::queries;

pub(crate) fn routes() -> Router<Control> {
    Router::new()
        .route(
            "/v1/discovery-chain/",
            methods("OPTIONS,GET,POST", get(missing).post(missing)),
        )
        .route(
            "/v1/discovery-chain/{*service}",
            methods("OPTIONS,GET,POST", get(get_chain).post(post_chain)),
        )
}

async fn missing() -> ApiError {
    ApiError::bad_request("Missing chain name")
}

async fn get_chain(
    State(c): State<Control>,
    ctx: Ctx,
    Path(service): Path<String>,
) -> Result<Response, ApiError> {
    serve(c, ctx, service, None).await
}

async fn post_chain(
    State(c): State<Control>,
    ctx: Ctx,
    Path(service): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let overrides = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Some(body)
    };
    serve(c, ctx, service, overrides).await
}

async fn serve(
    c: Control,
    ctx: Ctx,
    service: String,
    body: Option<Bytes>,
) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let mut req = ChainRequest {
        service: service.clone(),
        datacenter: ctx
            .query
            .non_empty("compile-dc")
            .unwrap_or(&c.store.cfg.datacenter)
            .to_owned(),
        trust_domain: c.trust_domain(),
        override_protocol: None,
        override_connect_timeout: None,
        override_mesh_gateway_mode: None,
        virtual_ips: None,
    };
    if let Some(body) = &body {
        req = req.with_overrides(chain::decode_overrides(body).map_err(ApiError::from)?);
    }
    let authz = c.authz(&ctx)?;
    authz
        .require(Resource::Service, &service, Level::Read)
        .map_err(ApiError::from_text)?;
    let cache_key = opts
        .cached
        .then(|| format!("chain:{service}:{:?}", body.as_deref()));
    let spec = ReadSpec {
        cache_key,
        suppress_unchanged: true,
        index_of: None,
    };
    let a = server_read(&c.store, &opts, spec, |st| {
        let mut req = req.clone();
        req.virtual_ips = st
            .virtual_ip(&service)
            .map(|ip| (vec![ip.to_string()], Vec::new()));
        let compiled =
            chain::compile(&queries::chain_entries(&st.config), &req).map_err(ApiError::from)?;
        let body =
            serde_json::to_value(&compiled).map_err(|e| ApiError::from_text(e.to_string()))?;
        Ok((st.config.max_index(), body))
    })
    .await?;
    let m = a.meta.with_consistency(opts.stale, opts.consistent);
    Ok(meta::json_with(&a.body, ctx.pretty, Some(m), a.cache))
}
