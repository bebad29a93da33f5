//! Scenario specs in the simulator's terms: an intention spec as a `service-intentions` write,
//! a fault spec as a [`Fault`], a CA key spec as a [`KeyKind`](crate::model::ca::KeyKind).

use scenarios::{FaultSpec, IntentionSpec, Policy};
use serde_json::{Map, Value, json};

use super::PlayError;
use super::error::sim;
use crate::state::control::Control;
use crate::state::faults::Fault;

pub(super) fn put_intention(control: &Control, i: &IntentionSpec) -> Result<(), PlayError> {
    let mut body = Map::new();
    if let Some(a) = i.action {
        body.insert("Action".into(), json!(policy(a)));
    }
    if let Some(p) = &i.permissions {
        body.insert("Permissions".into(), Value::Array(p.clone()));
    }
    let r = control.put_intention(&i.source, &i.destination, &Value::Object(body));
    sim(&format!("intention {} → {}", i.source, i.destination), r)
}

pub(super) fn action(i: &IntentionSpec) -> &'static str {
    match (i.action, &i.permissions) {
        (Some(a), _) => policy(a),
        (None, Some(_)) => "L7 permissions",
        (None, None) => "no action",
    }
}

pub(super) fn policy(p: Policy) -> &'static str {
    match p {
        Policy::Allow => "allow",
        Policy::Deny => "deny",
    }
}

pub(super) fn to_fault(f: &FaultSpec) -> Fault {
    match f {
        FaultSpec::AgentDown => Fault::AgentDown,
        FaultSpec::AgentHung => Fault::AgentHung,
        FaultSpec::ServersUnreachable => Fault::ServersUnreachable,
        FaultSpec::Errors => Fault::Errors {
            status: 500,
            body: "agent-sim: injected error".into(),
            path_prefix: None,
        },
    }
}

pub(super) fn fault_name(f: &FaultSpec) -> &'static str {
    match f {
        FaultSpec::AgentDown => "agent-down",
        FaultSpec::AgentHung => "agent-hung",
        FaultSpec::ServersUnreachable => "servers-unreachable",
        FaultSpec::Errors => "errors",
    }
}

pub(super) fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("?")
}

/// The CA key kind for a scenario's `key_type`/`key_bits` (type default `ec`; bits default 256
/// for `ec`, 2048 for `rsa`).
pub fn key_kind(
    key_type: Option<&str>,
    key_bits: Option<u32>,
) -> Option<crate::model::ca::KeyKind> {
    let key_type = key_type.unwrap_or("ec");
    let bits = key_bits.unwrap_or(if key_type == "rsa" { 2048 } else { 256 });
    crate::model::ca::KeyKind::from_config(key_type, i64::from(bits))
}
