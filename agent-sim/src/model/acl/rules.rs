//! Consul ACL policy rules (`service "db" { policy = "write" }`, `service_prefix "" {...}`,
//! `mesh = "write"`), parsed from HCL or JSON, and their resolution (exact beats prefix; the
//! longest prefix wins).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// An access level. Ordered: `deny < read < list < write`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Explicitly denied.
    Deny,
    /// Read.
    Read,
    /// List (KV only in Consul; accepted).
    List,
    /// Write (implies read).
    Write,
}

impl Level {
    /// The word Consul uses in permission texts.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deny => "deny",
            Self::Read => "read",
            Self::List => "list",
            Self::Write => "write",
        }
    }
}

/// Rules of one token, already parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    service: NamedRules<ServiceRule>,
    node: NamedRules<Level>,
    agent: NamedRules<Level>,
    query: NamedRules<Level>,
    mesh: Option<Level>,
    operator: Option<Level>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ServiceRule {
    policy: Level,
    intentions: Option<Level>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct NamedRules<T> {
    exact: BTreeMap<String, T>,
    prefix: BTreeMap<String, T>,
}

impl<T> Default for NamedRules<T> {
    fn default() -> Self {
        Self {
            exact: BTreeMap::new(),
            prefix: BTreeMap::new(),
        }
    }
}

impl<T: Copy> NamedRules<T> {
    fn lookup(&self, name: &str) -> Option<T> {
        if let Some(r) = self.exact.get(name) {
            return Some(*r);
        }
        self.prefix
            .iter()
            .filter(|(p, _)| name.starts_with(p.as_str()))
            .max_by_key(|(p, _)| p.len())
            .map(|(_, r)| *r)
    }
}

/// A policy text that is neither valid HCL nor valid JSON rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Failed to parse ACL rules: {0}")]
pub struct RulesError(pub String);

impl Rules {
    /// Parses Consul policy rules written in HCL or JSON.
    pub fn parse(text: &str) -> Result<Self, RulesError> {
        let trimmed = text.trim_start();
        let value: Value = if trimmed.starts_with('{') {
            serde_json::from_str(text).map_err(|e| RulesError(e.to_string()))?
        } else {
            hcl::from_str(text).map_err(|e| RulesError(e.to_string()))?
        };
        Self::from_value(&value)
    }

    fn from_value(v: &Value) -> Result<Self, RulesError> {
        let obj = v
            .as_object()
            .ok_or_else(|| RulesError("rules must be an object".into()))?;
        let mut rules = Self::default();
        for (key, val) in obj {
            match key.as_str() {
                "service" => rules.service.exact = named(val, service_rule)?,
                "service_prefix" => rules.service.prefix = named(val, service_rule)?,
                "node" => rules.node.exact = named(val, policy_only)?,
                "node_prefix" => rules.node.prefix = named(val, policy_only)?,
                "agent" => rules.agent.exact = named(val, policy_only)?,
                "agent_prefix" => rules.agent.prefix = named(val, policy_only)?,
                "query" => rules.query.exact = named(val, policy_only)?,
                "query_prefix" => rules.query.prefix = named(val, policy_only)?,
                "mesh" => rules.mesh = Some(level(val)?),
                "operator" => rules.operator = Some(level(val)?),
                // Rules for resources the sim does not serve are accepted and ignored.
                "key" | "key_prefix" | "session" | "session_prefix" | "event" | "event_prefix"
                | "keyring" | "acl" | "peering" => {}
                other => return Err(RulesError(format!("unknown rule type {other:?}"))),
            }
        }
        Ok(rules)
    }

    /// The service level granted on `name`, if any rule covers it.
    pub fn service(&self, name: &str) -> Option<Level> {
        self.service.lookup(name).map(|r| r.policy)
    }

    /// Whether any service rule (exact or prefix) grants `write`: Consul's
    /// `ServiceWriteAny`, `None` when no service rule exists at all.
    pub fn service_write_any(&self) -> Option<bool> {
        let all: Vec<Level> = (self.service.exact.values())
            .chain(self.service.prefix.values())
            .map(|r| r.policy)
            .collect();
        if all.is_empty() {
            return None;
        }
        Some(all.contains(&Level::Write))
    }

    /// The intentions level on `name`: the rule's `intentions`, else read implied by a service
    /// read/write rule.
    pub fn intention(&self, name: &str) -> Option<Level> {
        let rule = self.service.lookup(name)?;
        Some(rule.intentions.unwrap_or(match rule.policy {
            Level::Deny => Level::Deny,
            _ => Level::Read,
        }))
    }

    /// The node level on `name`.
    pub fn node(&self, name: &str) -> Option<Level> {
        self.node.lookup(name)
    }

    /// The agent level on node `name`.
    pub fn agent(&self, name: &str) -> Option<Level> {
        self.agent.lookup(name)
    }

    /// The prepared-query level on `name` (a query's name or template prefix).
    pub fn query(&self, name: &str) -> Option<Level> {
        self.query.lookup(name)
    }

    /// `mesh`, implied by `operator` when unset.
    pub fn mesh(&self) -> Option<Level> {
        self.mesh.or(self.operator)
    }

    /// `operator`.
    pub fn operator(&self) -> Option<Level> {
        self.operator
    }
}

fn named<T>(
    v: &Value,
    one: fn(&Value) -> Result<T, RulesError>,
) -> Result<BTreeMap<String, T>, RulesError> {
    let mut out = BTreeMap::new();
    // HCL may give repeated labelled blocks as an array of objects; merge them.
    let maps: Vec<&serde_json::Map<String, Value>> = match v {
        Value::Object(m) => vec![m],
        Value::Array(items) => items.iter().filter_map(Value::as_object).collect(),
        _ => return Err(RulesError("expected a block of named rules".into())),
    };
    for m in maps {
        for (name, body) in m {
            out.insert(name.clone(), one(body)?);
        }
    }
    Ok(out)
}

fn field<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m.get(name),
        Value::Array(items) => items.iter().find_map(|i| i.get(name)),
        _ => None,
    }
}

fn level(v: &Value) -> Result<Level, RulesError> {
    let s = v
        .as_str()
        .ok_or_else(|| RulesError(format!("expected a policy word, got {v}")))?;
    serde_json::from_value(Value::String(s.to_owned()))
        .map_err(|_| RulesError(format!("Invalid rule policy: {s:?}")))
}

fn policy_only(v: &Value) -> Result<Level, RulesError> {
    level(field(v, "policy").ok_or_else(|| RulesError("rule without policy".into()))?)
}

fn service_rule(v: &Value) -> Result<ServiceRule, RulesError> {
    let policy = policy_only(v)?;
    let intentions = field(v, "intentions").map(level).transpose()?;
    Ok(ServiceRule { policy, intentions })
}
