//! Connect CA and authorization endpoints: agent roots (always cached), leaf (the agent's leaf
//! manager, blocking), authorize, the servers' roots, and the CA configuration (GET, and PUT,
//! which rotates the CA the way an operator does).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;
use time::OffsetDateTime;

use super::app::{Ctx, methods};
use super::error::ApiError;
use super::meta::{self, CacheMeta, QueryMeta};
use super::query::{QueryOpts, parse_wait_index, reject_enterprise};
use super::serve::{ReadSpec, server_read};
use crate::go::decode::{KeySchema, decode_body};
use crate::model::acl::{Level, Resource};
use crate::model::intention;
use crate::state::control::Control;
use crate::state::queries;
use crate::state::request_log::AuthorizeCall;

pub(crate) fn routes() -> Router<Control> {
    Router::new()
        .route(
            "/v1/agent/connect/ca/roots",
            methods("OPTIONS,GET", get(agent_roots)),
        )
        .route(
            "/v1/agent/connect/ca/leaf/",
            methods("OPTIONS,GET", get(leaf_empty)),
        )
        .route(
            "/v1/agent/connect/ca/leaf/{*service}",
            methods("OPTIONS,GET", get(leaf)),
        )
        .route(
            "/v1/agent/connect/authorize",
            methods("OPTIONS,POST", post(authorize)),
        )
        .route(
            "/v1/connect/ca/roots",
            methods("OPTIONS,GET", get(server_roots)),
        )
        .route(
            "/v1/connect/ca/configuration",
            methods("OPTIONS,GET,PUT", get(ca_config_get).put(ca_config_put)),
        )
}

async fn agent_roots(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let key = format!(
        "roots:{}",
        opts.dc.as_deref().unwrap_or(&c.store.cfg.datacenter)
    );
    let spec = ReadSpec {
        cache_key: Some(key),
        suppress_unchanged: false,
        index_of: Some(|st| st.ca.roots_index()),
    };
    let a = server_read(&c.store, &opts, spec, |st| {
        Ok((st.ca.roots_index(), st.roots_body()))
    })
    .await?;
    Ok(meta::json_with(&a.body, ctx.pretty, Some(a.meta), a.cache))
}

async fn server_roots(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let cache_key = opts.cached.then(|| "server-roots".to_owned());
    let spec = ReadSpec {
        cache_key,
        suppress_unchanged: false,
        index_of: Some(|st| st.ca.roots_index()),
    };
    let a = server_read(&c.store, &opts, spec, |st| {
        Ok((st.ca.roots_index(), st.roots_body()))
    })
    .await?;
    if ctx.query.get("pem").is_some_and(|v| v == "true") {
        let pems = a.body.value()["Roots"].as_array().into_iter().flatten();
        let bundle: String = pems.filter_map(|r| r["RootCert"].as_str()).collect();
        let mut resp = bundle.into_response();
        meta::set(
            resp.headers_mut(),
            "content-type",
            "application/pem-certificate-chain",
        );
        a.meta.apply(resp.headers_mut());
        return Ok(resp);
    }
    Ok(meta::json_with(&a.body, ctx.pretty, Some(a.meta), a.cache))
}

async fn leaf_empty() -> ApiError {
    ApiError::from_text("URI must be either service, agent, server, or kind")
}

async fn leaf(
    State(c): State<Control>,
    ctx: Ctx,
    Path(service): Path<String>,
) -> Result<Response, ApiError> {
    reject_enterprise(&ctx.query, &ctx.headers)?;
    let (wait, min_index) = parse_wait_index(&ctx.query)?;
    let authz = c.authz(&ctx)?;
    authz
        .require(Resource::Service, &service, Level::Write)
        .map_err(ApiError::from_text)?;
    let agent_dc = c.store.cfg.datacenter.clone();
    if let Some(dc) = ctx.query.non_empty("dc")
        && dc != agent_dc
    {
        return Err(ApiError::from_text(
            "SPIFFE ID in CSR from a different datacenter",
        ));
    }
    let answer = if min_index == 0 {
        c.store.leaf_now(&service, &agent_dc)?
    } else {
        let timeout = c.store.cfg.blocking.leaf_timeout(wait);
        c.store
            .leaf_blocking(&service, &agent_dc, min_index, timeout)
            .await?
    };
    let mut resp = meta::json(&answer.leaf.to_json(), ctx.pretty);
    meta::set(
        resp.headers_mut(),
        "x-consul-index",
        &answer.leaf.modify_index.max(1).to_string(),
    );
    let cache = if answer.hit {
        CacheMeta::Hit { age_secs: 0 }
    } else {
        CacheMeta::Miss
    };
    cache.apply(resp.headers_mut());
    Ok(resp)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthorizeRequest {
    #[serde(rename = "Target", default)]
    target: String,
    #[serde(rename = "ClientCertURI", default)]
    client_cert_uri: String,
    #[serde(rename = "ClientCertSerial", default)]
    client_cert_serial: String,
}

const AUTHORIZE_KEYS: KeySchema = KeySchema {
    canonical: &["Target", "ClientCertURI", "ClientCertSerial"],
    opaque: &[],
    keyed: &[],
};

pub(crate) fn intention_default(c: &Control) -> intention::DefaultPolicy {
    queries::default_policy(&c.store)
}

async fn authorize(State(c): State<Control>, ctx: Ctx, body: Bytes) -> Result<Response, ApiError> {
    // Fast path for the canonical spelling; anything else goes through Go-style key matching,
    // which accepts the same bodies and produces Go's error texts.
    let req: AuthorizeRequest = match serde_json::from_slice(&body) {
        Ok(req) => req,
        Err(_) => decode_body(&body, &AUTHORIZE_KEYS)
            .map_err(|e| ApiError::bad_request(format!("Request decode failed: {e}")))?,
    };
    if req.target.is_empty() {
        return Err(ApiError::bad_request("Target service must be specified"));
    }
    // Recorded for the harness: does the caller send its client's certificate serial?
    c.log.record_authorize(AuthorizeCall {
        target: req.target.clone(),
        client_cert_uri: req.client_cert_uri.clone(),
        client_cert_serial: req.client_cert_serial.clone(),
    });
    // Steps 3 and 4 come before the token is resolved; without ACLs the decision below gives
    // the same errors, so the URI is parsed once.
    match c
        .store
        .cfg
        .acl
        .enabled
        .then(|| crate::model::spiffe::parse(&req.client_cert_uri))
    {
        None => {}
        Some(Err(_)) => {
            return Err(ApiError::bad_request(
                "ClientCertURI not a valid Connect identifier",
            ));
        }
        Some(Ok(crate::model::spiffe::SpiffeId::Service { .. })) => {}
        Some(Ok(_)) => {
            return Err(ApiError::bad_request(
                "ClientCertURI not a valid Service identifier",
            ));
        }
    }
    // `fmt.Errorf("Could not resolve token to authorizer: %w", err)`: still a 403, as the text
    // contains `ACL not found`.
    let authz = c.authz(&ctx).map_err(|e| {
        ApiError::from_text(format!("Could not resolve token to authorizer: {}", e.body))
    })?;
    authz
        .require(Resource::Service, &req.target, Level::Write)
        .map_err(ApiError::from_text)?;
    let default = intention_default(&c);
    let opts = QueryOpts::default();
    let spec = ReadSpec {
        cache_key: Some(format!("intention-match:destination:{}", req.target)),
        suppress_unchanged: false,
        index_of: None,
    };
    let a = server_read(&c.store, &opts, spec, |st| {
        let matched = st.destination_intentions(&req.target);
        let d = intention::authorize_matched(&matched, &req.target, &req.client_cert_uri, &default)
            .map_err(ApiError::from)?;
        Ok((0, json!({ "Authorized": d.allowed, "Reason": d.reason })))
    })
    .await?;
    Ok(meta::json_with(&a.body, ctx.pretty, None, a.cache))
}

async fn ca_config_get(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let authz = c.authz(&ctx)?;
    authz
        .require(Resource::Operator, "", Level::Read)
        .map_err(ApiError::from_text)?;
    let spec = ReadSpec {
        cache_key: None,
        suppress_unchanged: false,
        index_of: None,
    };
    let a = server_read(&c.store, &opts, spec, |st| {
        Ok((st.ca_config_index, st.ca.config_json()))
    })
    .await?;
    Ok(meta::json_with(
        &a.body,
        ctx.pretty,
        Some(QueryMeta { ..a.meta }),
        None,
    ))
}

async fn ca_config_put(
    State(c): State<Control>,
    ctx: Ctx,
    body: Bytes,
) -> Result<Response, ApiError> {
    let authz = c.authz(&ctx)?;
    authz
        .require(Resource::Operator, "", Level::Write)
        .map_err(ApiError::from_text)?;
    if c.store.servers_down() {
        return Err(ApiError::no_servers());
    }
    let value = crate::go::decode::parse_json(&body)
        .map_err(|e| ApiError::bad_request(format!("Request decode failed: {e}")))?;
    let now = OffsetDateTime::now_utc();
    c.store.write(|st| {
        let index = st.next_index();
        c.store
            .with_rng(|r| st.ca.apply_config(&value, now, index, r))
            .map_err(|e| ApiError::with_status(e.http_status(), e.to_string()))?;
        st.ca_config_index = index;
        Ok::<_, ApiError>(())
    })?;
    Ok(meta::empty_ok())
}
