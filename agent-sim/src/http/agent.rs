//! Agent endpoints over the local agent's state: one service (hash blocking, `ContentHash`,
//! central config merged), all services (`?filter`), register/deregister, TTL check updates,
//! and `/v1/agent/self`.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, put};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::app::{Ctx, methods};
use super::error::ApiError;
use super::meta;
use super::query::parse_wait_index;
use crate::go::duration::GoDuration;
use crate::go::filter::{AGENT_SERVICE_FIELDS, Filter};
use crate::model::acl::{Level, Resource};
use crate::model::service::{self, NodeService};
use crate::state::blocking::wait_for;
use crate::state::control::Control;
use crate::state::queries;
use crate::state::store::{CheckUpdate, State as StoreState};

pub(crate) fn routes() -> Router<Control> {
    Router::new()
        .route(
            "/v1/agent/service/register",
            methods("OPTIONS,PUT", put(register)),
        )
        .route(
            "/v1/agent/service/deregister/{*id}",
            methods("OPTIONS,PUT", put(deregister)),
        )
        .route(
            "/v1/agent/service/{*id}",
            methods("OPTIONS,GET", get(service)),
        )
        .route("/v1/agent/services", methods("OPTIONS,GET", get(services)))
        .route(
            "/v1/agent/check/pass/{*id}",
            methods("OPTIONS,PUT", put(check_pass)),
        )
        .route(
            "/v1/agent/check/warn/{*id}",
            methods("OPTIONS,PUT", put(check_warn)),
        )
        .route(
            "/v1/agent/check/fail/{*id}",
            methods("OPTIONS,PUT", put(check_fail)),
        )
        .route(
            "/v1/agent/check/update/{*id}",
            methods("OPTIONS,PUT", put(check_update)),
        )
        .route("/v1/agent/self", methods("OPTIONS,GET", get(agent_self)))
}

fn local<'a>(st: &'a StoreState, node: &str, id: &str) -> Option<&'a NodeService> {
    st.services.get(&(node.to_owned(), id.to_owned()))
}

async fn service(
    State(c): State<Control>,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (wait, _index) = parse_wait_index(&ctx.query)?;
    let authz = c.authz(&ctx)?;
    let node = c.store.cfg.node_name.clone();
    let dc = c.store.cfg.datacenter.clone();
    let hash = ctx.query.non_empty("hash").map(str::to_owned);
    let render = |st: &StoreState| -> Result<(String, Value), ApiError> {
        let svc = local(st, &node, &id)
            .ok_or_else(|| ApiError::not_found(format!("unknown service ID: {id}")))?;
        authz
            .require(Resource::Service, &svc.service, Level::Read)
            .map_err(ApiError::from_text)?;
        let svc = queries::merged(st, svc);
        Ok((
            service::content_hash(&svc, &dc),
            service::agent_service_json(&svc, &dc),
        ))
    };
    let first = c.store.read(render)?;
    let (hash_now, body) = match hash {
        Some(h) if h == first.0 => {
            let timeout = c
                .store
                .with_rng(|r| c.store.cfg.blocking.local_timeout(wait, r));
            let mut changes = c.store.subscribe();
            wait_for(&mut changes, Instant::now() + timeout, |force| {
                let now = c.store.read(render);
                match now {
                    Ok((new_hash, _)) if new_hash == h && !force => None,
                    other => Some(other),
                }
            })
            .await?
        }
        _ => first,
    };
    let mut resp = meta::json(&body, ctx.pretty);
    meta::set(resp.headers_mut(), "x-consul-contenthash", &hash_now);
    Ok(resp)
}

async fn services(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let authz = c.authz(&ctx)?;
    let filter = ctx
        .query
        .non_empty("filter")
        .map(|f| Filter::parse_for(f, AGENT_SERVICE_FIELDS))
        .transpose()?;
    let node = c.store.cfg.node_name.clone();
    let dc = c.store.cfg.datacenter.clone();
    let body = c.store.read(|st| {
        let visible: Vec<NodeService> = st
            .services_on(&node)
            .into_iter()
            .filter(|s| authz.allows(Resource::Service, &s.service, Level::Read))
            .map(|s| queries::merged(st, s))
            .collect();
        service::agent_services_json(&visible, &dc)
    });
    let body = match &filter {
        Some(f) => f.apply(body)?,
        None => body,
    };
    Ok(meta::json(&body, ctx.pretty))
}

async fn register(State(c): State<Control>, ctx: Ctx, body: Bytes) -> Result<Response, ApiError> {
    let replace = ctx.query.flag("replace-existing-checks").unwrap_or(false);
    let def = service::decode_register(&body).map_err(ApiError::from)?;
    let authz = c.authz(&ctx)?;
    c.store.register_local_with(def, replace, Some(&authz))?;
    Ok(meta::empty_ok())
}

async fn deregister(
    State(c): State<Control>,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let authz = c.authz(&ctx)?;
    c.store.deregister_local_with(&id, Some(&authz))?;
    Ok(meta::empty_ok())
}

async fn set_status(
    c: &Control,
    ctx: &Ctx,
    id: String,
    status: &str,
    output: Option<String>,
) -> Result<Response, ApiError> {
    let authz = c.authz(ctx)?;
    let node = c.store.cfg.node_name.clone();
    let check = c
        .store
        .read(|st| st.checks.get(&(node.clone(), id.clone())).cloned());
    // Consul's `vetCheckUpdateWithAuthorizer` runs first: an unknown check is a 404
    // `HTTPError`, a known one needs write on its service (or the node); only then does
    // `updateTTLCheck` refuse a check without a TTL (a plain error: 500).
    let check = check.ok_or_else(|| {
        ApiError::not_found(format!(
            "Unknown check ID {id:?}. Ensure that the check ID is passed, not the check name."
        ))
    })?;
    let denied = if check.service_name.is_empty() {
        authz.require(Resource::Node, &node, Level::Write)
    } else {
        authz.require(Resource::Service, &check.service_name, Level::Write)
    };
    denied.map_err(ApiError::from_text)?;
    if check.ttl.is_none() {
        return Err(ApiError::from_text(format!(
            "CheckID {id:?} does not have associated TTL"
        )));
    }
    c.store.update_check(CheckUpdate {
        node: None,
        check_id: id,
        status: status.into(),
        output,
    })?;
    Ok(meta::empty_ok())
}

async fn check_pass(
    State(c): State<Control>,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let note = ctx.query.get("note").map(str::to_owned);
    set_status(&c, &ctx, id, service::HEALTH_PASSING, note).await
}

async fn check_warn(
    State(c): State<Control>,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let note = ctx.query.get("note").map(str::to_owned);
    set_status(&c, &ctx, id, service::HEALTH_WARNING, note).await
}

async fn check_fail(
    State(c): State<Control>,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let note = ctx.query.get("note").map(str::to_owned);
    set_status(&c, &ctx, id, service::HEALTH_CRITICAL, note).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckUpdateBody {
    #[serde(rename = "Status", default)]
    status: String,
    #[serde(rename = "Output", default)]
    output: String,
}

async fn check_update(
    State(c): State<Control>,
    ctx: Ctx,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    const KEYS: crate::go::decode::KeySchema = crate::go::decode::KeySchema {
        canonical: &["Status", "Output"],
        opaque: &[],
        keyed: &[],
    };
    let req: CheckUpdateBody = crate::go::decode::decode_body(&body, &KEYS)
        .map_err(|e| ApiError::bad_request(format!("Request decode failed: {e}")))?;
    if !service::valid_status(&req.status) {
        return Err(ApiError::bad_request(format!(
            "Invalid check status: '{}'",
            req.status
        )));
    }
    set_status(&c, &ctx, id, &req.status, Some(req.output)).await
}

/// Envoy versions the newest Consul lists as supported
/// (`envoyextensions/xdscommon/ENVOY_VERSIONS`).
const SUPPORTED_ENVOY: [&str; 4] = ["1.37.2", "1.36.6", "1.35.10", "1.34.14"];

/// `xdsSelf` of Consul's `agent_endpoint.go`: present when the gRPC (xDS) port is served; `Port`
/// is the plaintext port because the sim serves no TLS gRPC port (`Ports.TLS` = -1). `consul
/// connect envoy` reads it to find the xDS port when `-grpc-addr` is not given.
fn xds_self(c: &Control) -> Value {
    match c.grpc_port.get() {
        Some(&port) => json!({
            "SupportedProxies": { "envoy": SUPPORTED_ENVOY },
            "Port": port,
            "Ports": { "Plaintext": port, "TLS": -1 },
        }),
        None => Value::Null,
    }
}

async fn agent_self(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let authz = c.authz(&ctx)?;
    let cfg = &c.store.cfg;
    authz
        .require(Resource::Agent, &cfg.node_name, Level::Read)
        .map_err(ApiError::from_text)?;
    let node = c
        .store
        .read(|st| st.nodes.get(&cfg.node_name).cloned())
        .unwrap_or_default();
    let intention_default = match c.store.intention_default() {
        Some(crate::state::config::IntentionDefault::Allow) => "allow",
        Some(crate::state::config::IntentionDefault::Deny) => "deny",
        None => "",
    };
    // `Config` is a Go struct (declaration order; `Partition` is omitempty and empty in CE);
    // `DebugConfig` is the sanitized runtime config, a map of maps (every level sorted);
    // `Member` is a `serf.Member` (its `Tags` a map); `xDS` is omitempty.
    let mut body = json!({
        "Config": {
            "Datacenter": cfg.datacenter,
            "PrimaryDatacenter": cfg.datacenter,
            "NodeName": cfg.node_name,
            "NodeID": node.id,
            "Revision": "agent-sim",
            "Server": false,
            "Version": cfg.version,
            "BuildDate": "2025-05-15T00:00:00Z",
        },
        "DebugConfig": service::go_value(&json!({
            "ACLsEnabled": cfg.acl.enabled,
            "ACLResolverSettings": {
                "ACLsEnabled": cfg.acl.enabled,
                "ACLDefaultPolicy": cfg.acl.default_policy.as_str(),
                "Datacenter": cfg.datacenter,
                "NodeName": cfg.node_name,
            },
            "ConnectEnabled": true,
            "Datacenter": cfg.datacenter,
            "DefaultIntentionPolicy": intention_default,
            "DefaultQueryTime": GoDuration::from_std(cfg.blocking.default_query_time).to_string(),
            "MaxQueryTime": GoDuration::from_std(cfg.blocking.max_query_time).to_string(),
            "NodeName": cfg.node_name,
        })),
        "Coord": Value::Null,
        "Member": {
            "Name": cfg.node_name,
            "Addr": cfg.node_address,
            "Port": 8301,
            "Tags": service::go_value(&json!({
                "dc": cfg.datacenter,
                "role": "node",
                "build": format!("{}:agent-sim", cfg.version),
            })),
            "Status": 1,
            "ProtocolMin": 1,
            "ProtocolMax": 5,
            "ProtocolCur": 2,
            "DelegateMin": 2,
            "DelegateMax": 5,
            "DelegateCur": 4,
        },
        "Stats": Map::new(),
        "Meta": node.meta,
    });
    let xds = xds_self(&c);
    if let (Some(obj), false) = (body.as_object_mut(), xds.is_null()) {
        obj.insert("xDS".to_owned(), xds);
    }
    Ok(meta::json(&body, ctx.pretty))
}
