//! `PUT /v1/agent/check/register` and `PUT /v1/agent/check/deregister/:id`: checks of the agent's
//! node on their own (Consul's `AgentRegisterCheck`/`AgentDeregisterCheck`), node-level or bound
//! to a local service by `ServiceID`.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::put;
use serde_json::{Map, Value};

use super::app::{Ctx, methods};
use super::error::ApiError;
use super::meta;
use crate::model::acl::{Level, Resource};
use crate::model::service::{self, CheckDefinition, RegisterError};
use crate::state::control::Control;

pub(crate) fn routes() -> Router<Control> {
    Router::new()
        .route(
            "/v1/agent/check/register",
            methods("OPTIONS,PUT", put(register)),
        )
        .route(
            "/v1/agent/check/deregister/{*id}",
            methods("OPTIONS,PUT", put(deregister)),
        )
}

/// The top-level members of a `structs.CheckDefinition` that a service's `CheckType` lacks.
struct Identity {
    id: String,
    service_id: String,
}

/// Splits the body into the check identity and a `CheckType` the service decoder understands
/// (keys matched case-insensitively, as Go's decoder does; `Token` is accepted and unused).
fn split(body: &[u8]) -> Result<(Identity, CheckDefinition), ApiError> {
    let bad = |e: String| ApiError::bad_request(format!("Request decode failed: {e}"));
    let value: Value = serde_json::from_slice(body).map_err(|e| bad(e.to_string()))?;
    let Value::Object(obj) = value else {
        return Err(bad(
            "json: cannot unmarshal into Go value of type structs.CheckDefinition".into(),
        ));
    };
    let mut rest = Map::new();
    let mut ident = Identity {
        id: String::new(),
        service_id: String::new(),
    };
    for (k, v) in obj {
        let text = || v.as_str().unwrap_or_default().to_owned();
        match k.to_ascii_lowercase().as_str() {
            "id" | "checkid" => ident.id = text(),
            "serviceid" | "service_id" => ident.service_id = text(),
            "token" => {}
            _ => {
                rest.insert(k, v);
            }
        }
    }
    let wrapped = serde_json::json!({ "Name": "check", "Check": Value::Object(rest) });
    let def = service::decode_register(wrapped.to_string().as_bytes()).map_err(|e| match e {
        RegisterError::BadRequest(t) => ApiError::bad_request(t),
        other => ApiError::from_text(other.to_string()),
    })?;
    Ok((ident, def.check.unwrap_or_default()))
}

async fn register(State(c): State<Control>, ctx: Ctx, body: Bytes) -> Result<Response, ApiError> {
    let (ident, def) = split(&body)?;
    if def.name.is_empty() {
        return Err(ApiError::bad_request("Missing check name"));
    }
    if !def.status.is_empty() && !service::valid_status(&def.status) {
        return Err(ApiError::bad_request("Bad check status"));
    }
    def.validate()
        .map_err(|e| ApiError::bad_request(format!("Invalid check: {e}")))?;
    let node = c.store.cfg.node_name.clone();
    let owner = (!ident.service_id.is_empty())
        .then(|| {
            c.store
                .read(|st| {
                    st.services
                        .get(&(node.clone(), ident.service_id.clone()))
                        .cloned()
                })
                .ok_or_else(|| {
                    ApiError::not_found(format!("ServiceID {:?} does not exist", ident.service_id))
                })
        })
        .transpose()?;
    let authz = c.authz(&ctx)?;
    match &owner {
        Some(svc) => authz.require(Resource::Service, &svc.service, Level::Write),
        None => authz.require(Resource::Node, &node, Level::Write),
    }
    .map_err(ApiError::from_text)?;
    let check_id = if ident.id.is_empty() {
        def.name.clone()
    } else {
        ident.id
    };
    let check = def.to_health_check(node, check_id, def.name.clone(), owner.as_ref());
    c.store.put_local_check(check);
    Ok(meta::empty_ok())
}

async fn deregister(
    State(c): State<Control>,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let authz = c.authz(&ctx)?;
    let node = c.store.cfg.node_name.clone();
    let check = c
        .store
        .read(|st| st.checks.get(&(node.clone(), id.clone())).cloned())
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "Unknown check ID {id:?}. Ensure that the check ID is passed, not the check name."
            ))
        })?;
    if check.service_name.is_empty() {
        authz.require(Resource::Node, &node, Level::Write)
    } else {
        authz.require(Resource::Service, &check.service_name, Level::Write)
    }
    .map_err(ApiError::from_text)?;
    c.store.remove_local_check(&id);
    Ok(meta::empty_ok())
}
