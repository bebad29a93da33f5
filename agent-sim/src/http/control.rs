//! The control API under `/_sim/` (a prefix that cannot collide with Consul's `/v1/`): faults,
//! CA rotation, index reset, restart, check status, tokens, test identities, the request log and
//! the xDS log.
//! Bodies are JSON; errors are plain text like the rest of the agent.

use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use serde::Deserialize;
use serde_json::{Value, json};

use super::app::Ctx;
use super::error::ApiError;
use crate::go::duration::GoDuration;
use crate::model::ca::Forgery;
use crate::state::control::Control;
use crate::state::faults::Fault;
use crate::state::store::CheckUpdate;

pub(crate) fn routes() -> Router<Control> {
    Router::new()
        .route(
            "/faults",
            get(list_faults).put(add_fault).delete(clear_faults),
        )
        .route("/faults/{id}", delete(remove_fault))
        .route("/index-reset", post(index_reset))
        .route("/restart", post(restart))
        .route("/ca/rotate", post(rotate))
        .route("/ca/rotate-intermediate", post(rotate_intermediate))
        .route("/ca/leaf-ttl", put(leaf_ttl))
        .route("/ca/roots", get(roots))
        .route("/identity/{service}", post(identity))
        .route("/forge", post(forge))
        .route("/checks", put(set_check))
        .route("/tokens", post(create_token))
        .route("/log", get(log).delete(clear_log))
        .route("/xds-log", get(xds_log))
        .fallback(|| async {
            ApiError::not_found("unknown control endpoint; see the README's control API section")
        })
}

fn parse<T: for<'de> Deserialize<'de>>(body: &Bytes) -> Result<T, ApiError> {
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        &b"{}"[..]
    } else {
        body
    };
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid control request: {e}")))
}

fn duration(text: Option<&str>) -> Result<Option<Duration>, ApiError> {
    text.map(|t| {
        GoDuration::parse(t)
            .map(GoDuration::to_std)
            .map_err(|e| ApiError::bad_request(e.to_string()))
    })
    .transpose()
}

async fn list_faults(State(c): State<Control>) -> Response {
    Json(c.faults()).into_response()
}

/// Body: a [`Fault`] (`{"Kind":"latency","Delay":"250ms"}`) plus an optional `"For":"5s"` after
/// which it undoes itself.
async fn add_fault(State(c): State<Control>, body: Bytes) -> Result<Response, ApiError> {
    let mut value: Value = parse(&body)?;
    let for_ = match value.as_object_mut().and_then(|o| o.remove("For")) {
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "For must be a duration string, got {other}"
            )));
        }
        None => None,
    };
    let fault: Fault = serde_json::from_value(value)
        .map_err(|e| ApiError::bad_request(format!("invalid control request: {e}")))?;
    let id = match duration(for_.as_deref())? {
        Some(d) => c.inject_for(fault, d),
        None => c.inject(fault).keep(),
    };
    Ok(Json(json!({ "ID": id })).into_response())
}

async fn remove_fault(
    State(c): State<Control>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id: u64 = id
        .parse()
        .map_err(|_| ApiError::bad_request(format!("fault id {id:?} is not a number")))?;
    if c.remove_fault(id) {
        Ok(Json(true).into_response())
    } else {
        Err(ApiError::not_found(format!("no active fault {id}")))
    }
}

async fn clear_faults(State(c): State<Control>) -> Response {
    c.clear_faults();
    Json(true).into_response()
}

async fn index_reset(State(c): State<Control>) -> Response {
    c.reset_indexes();
    Json(true).into_response()
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Restart {
    #[serde(rename = "DownFor", default)]
    down_for: Option<String>,
    /// Sim-only: the `default_intention_policy` the agent comes back with (`allow`, `deny`, or
    /// `""` for unset); absent = unchanged.
    #[serde(rename = "DefaultIntentionPolicy", default)]
    default_intention_policy: Option<String>,
}

async fn restart(State(c): State<Control>, body: Bytes) -> Result<Response, ApiError> {
    let req: Restart = parse(&body)?;
    let down_for = duration(req.down_for.as_deref())?.unwrap_or(Duration::from_millis(500));
    let policy = match req.default_intention_policy.as_deref() {
        None => c.store.intention_default(),
        Some("") => None,
        Some("allow") => Some(crate::state::config::IntentionDefault::Allow),
        Some("deny") => Some(crate::state::config::IntentionDefault::Deny),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "DefaultIntentionPolicy must be \"allow\", \"deny\" or \"\", not {other:?}"
            )));
        }
    };
    c.restart_with(down_for, policy).await;
    Ok(Json(true).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rotate {
    #[serde(rename = "CrossSign", default = "yes")]
    cross_sign: bool,
    /// With `PrivateKeyBits`: rotate onto a key of this kind (`ec` 256/384, `rsa` 2048/4096).
    #[serde(rename = "PrivateKeyType", default)]
    key_type: Option<String>,
    #[serde(rename = "PrivateKeyBits", default)]
    key_bits: Option<i64>,
}

fn yes() -> bool {
    true
}

async fn rotate(State(c): State<Control>, body: Bytes) -> Result<Response, ApiError> {
    let req: Rotate = parse(&body)?;
    match (req.key_type, req.key_bits) {
        (None, None) => c.rotate_ca(req.cross_sign),
        (key_type, bits) => {
            let key_type = key_type.unwrap_or_else(|| "ec".into());
            let bits = bits.unwrap_or(if key_type == "rsa" { 2048 } else { 256 });
            let Some(kind) = crate::model::ca::KeyKind::from_config(&key_type, bits) else {
                return Ok((
                    http::StatusCode::BAD_REQUEST,
                    format!("unsupported key {key_type:?}/{bits}: ec 256/384 or rsa 2048/4096"),
                )
                    .into_response());
            };
            c.rotate_ca_to(kind, req.cross_sign)
        }
    }
    .map_err(ApiError::from)?;
    Ok(Json(true).into_response())
}

async fn rotate_intermediate(State(c): State<Control>) -> Result<Response, ApiError> {
    c.rotate_intermediate().map_err(ApiError::from)?;
    Ok(Json(true).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LeafTtl {
    #[serde(rename = "LeafCertTTL")]
    ttl: String,
}

async fn leaf_ttl(State(c): State<Control>, body: Bytes) -> Result<Response, ApiError> {
    let req: LeafTtl = parse(&body)?;
    let ttl = duration(Some(&req.ttl))?.unwrap_or_default();
    if ttl.is_zero() {
        return Err(ApiError::bad_request("LeafCertTTL must be positive"));
    }
    c.set_leaf_ttl(ttl);
    Ok(Json(true).into_response())
}

async fn roots(State(c): State<Control>) -> Response {
    Json(json!({ "TrustDomain": c.trust_domain(), "RootPEMs": c.root_pems() })).into_response()
}

/// A name that cannot form a SPIFFE service ID is the caller's mistake: 400, not 500.
fn bad_name(e: crate::state::error::SimError) -> ApiError {
    use crate::model::ca::CaError;
    match e {
        crate::state::error::SimError::Ca(
            ca @ (CaError::EmptyService
            | CaError::InvalidSpiffeId(_)
            | CaError::WrongDatacenter { .. }),
        ) => ApiError::bad_request(ca.to_string()),
        other => ApiError::from(other),
    }
}

fn identity_json(id: &crate::model::ca::ClientIdentity) -> Value {
    json!({ "URI": id.uri, "CertChainPEM": id.cert_chain_pem, "PrivateKeyPEM": id.private_key_pem })
}

async fn identity(
    State(c): State<Control>,
    Path(service): Path<String>,
) -> Result<Response, ApiError> {
    let id = c.issue_identity(&service).map_err(bad_name)?;
    Ok(Json(identity_json(&id)).into_response())
}

async fn forge(State(c): State<Control>, body: Bytes) -> Result<Response, ApiError> {
    let what: Forgery = parse(&body)?;
    let id = c.forge(&what).map_err(bad_name)?;
    Ok(Json(identity_json(&id)).into_response())
}

async fn set_check(State(c): State<Control>, body: Bytes) -> Result<Response, ApiError> {
    let update: CheckUpdate = parse(&body)?;
    c.set_check(update).map_err(ApiError::from)?;
    Ok(Json(true).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewToken {
    #[serde(rename = "Rules")]
    rules: String,
    #[serde(rename = "Description", default)]
    description: String,
}

async fn create_token(State(c): State<Control>, body: Bytes) -> Result<Response, ApiError> {
    let req: NewToken = parse(&body)?;
    let token = c
        .create_token(&req.rules, &req.description)
        .map_err(ApiError::from)?;
    Ok(Json(token).into_response())
}

async fn log(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let since = match ctx.query.non_empty("since") {
        Some(s) => s
            .parse()
            .map_err(|_| ApiError::bad_request("since must be a sequence number"))?,
        None => 0,
    };
    Ok(Json(json!({ "Dropped": c.log.dropped(), "Entries": c.log.since(since) })).into_response())
}

/// The xDS log: every stream's opening (node, token, peer), requests, responses (names and
/// versions), ACKs, NACKs (with Envoy's detail) and closing, after sequence number `since`.
async fn xds_log(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let since = match ctx.query.non_empty("since") {
        Some(s) => s
            .parse()
            .map_err(|_| ApiError::bad_request("since must be a sequence number"))?,
        None => 0,
    };
    let log = c.xds_log();
    Ok(Json(json!({ "Dropped": log.dropped(), "Entries": log.since(since) })).into_response())
}

async fn clear_log(State(c): State<Control>) -> Response {
    c.log.clear();
    Json(true).into_response()
}
