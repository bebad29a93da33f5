//! Agent-local reads a new user's client calls first: `GET /v1/agent/members` (the LAN serf
//! members: this agent and its server) and `GET /v1/agent/checks` (the checks of the agent's
//! node, by ID, with `?filter`).

use std::collections::BTreeMap;

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use super::app::{Ctx, methods};
use super::error::ApiError;
use super::meta;
use crate::go::filter::Filter;
use crate::model::acl::{Level, Resource};
use crate::model::service;
use crate::state::control::Control;
use crate::state::store::SERVER_NODE;

pub(crate) fn routes() -> Router<Control> {
    Router::new()
        .route("/v1/agent/members", methods("OPTIONS,GET", get(members)))
        .route("/v1/agent/checks", methods("OPTIONS,GET", get(checks)))
}

/// A `serf.Member` (struct order; `Tags` is a map, so sorted).
fn member(name: &str, addr: &str, port: u16, tags: &[(&str, String)]) -> Value {
    let tags: BTreeMap<&str, &str> = tags.iter().map(|(k, v)| (*k, v.as_str())).collect();
    json!({
        "Name": name,
        "Addr": addr,
        "Port": port,
        "Tags": tags,
        "Status": 1,
        "ProtocolMin": 1,
        "ProtocolMax": 5,
        "ProtocolCur": 2,
        "DelegateMin": 2,
        "DelegateMax": 5,
        "DelegateCur": 4,
    })
}

/// `GET /v1/agent/members`: the members the token may read (`node:read`), this agent first.
async fn members(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let authz = c.authz(&ctx)?;
    let cfg = &c.store.cfg;
    let build = format!("{}:agent-sim", cfg.version);
    let ids: BTreeMap<String, String> = c.store.read(|st| {
        st.nodes
            .values()
            .map(|n| (n.name.clone(), n.id.clone()))
            .collect()
    });
    let id = |n: &str| ids.get(n).cloned().unwrap_or_default();
    let client_tags = [
        ("build", build.clone()),
        ("dc", cfg.datacenter.clone()),
        ("id", id(&cfg.node_name)),
        ("role", "node".to_owned()),
        ("segment", String::new()),
        ("vsn", "2".to_owned()),
        ("vsn_max", "3".to_owned()),
        ("vsn_min", "2".to_owned()),
    ];
    let server_tags = [
        ("build", build),
        ("dc", cfg.datacenter.clone()),
        ("expect", "1".to_owned()),
        ("id", id(SERVER_NODE)),
        ("port", "8300".to_owned()),
        ("raft_vsn", "3".to_owned()),
        ("role", "consul".to_owned()),
        ("segment", String::new()),
        ("vsn", "2".to_owned()),
        ("vsn_max", "3".to_owned()),
        ("vsn_min", "2".to_owned()),
    ];
    let all = [
        (
            cfg.node_name.as_str(),
            member(&cfg.node_name, &cfg.node_address, 8301, &client_tags),
        ),
        (
            SERVER_NODE,
            member(SERVER_NODE, &cfg.node_address, 8301, &server_tags),
        ),
    ];
    let list: Vec<Value> = all
        .into_iter()
        .filter(|(name, _)| authz.allows(Resource::Node, name, Level::Read))
        .map(|(_, m)| m)
        .collect();
    Ok(meta::json(&Value::Array(list), ctx.pretty))
}

/// `GET /v1/agent/checks`: the agent node's checks the token may read (a service check needs
/// `service:read`, a node check `node:read`), by check ID, then `?filter` (created untyped, as
/// Consul's `bexpr.CreateFilter(expr, nil, nil)` here); `ServiceTags` never null.
async fn checks(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let filter = ctx
        .query
        .non_empty("filter")
        .map(Filter::parse)
        .transpose()?;
    let authz = c.authz(&ctx)?;
    let node = c.store.cfg.node_name.clone();
    let body = c.store.read(|st| {
        let map: serde_json::Map<String, Value> = st
            .checks
            .range((node.clone(), String::new())..)
            .take_while(|((n, _), _)| *n == node)
            .filter(|(_, chk)| {
                if chk.service_id.is_empty() {
                    authz.allows(Resource::Node, &node, Level::Read)
                } else {
                    authz.allows(Resource::Service, &chk.service_name, Level::Read)
                }
            })
            .map(|((_, id), chk)| (id.clone(), service::health_check_json(chk)))
            .collect();
        Value::Object(map)
    });
    let body = match &filter {
        Some(f) => f.apply(body)?,
        None => body,
    };
    Ok(meta::json(&body, ctx.pretty))
}
