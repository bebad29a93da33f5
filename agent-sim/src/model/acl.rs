//! ACLs: tokens, Consul policy rules (HCL or JSON), the authorizer, and Consul's 403 texts.

mod rules;

pub use rules::{Level, Rules, RulesError};

use std::collections::BTreeMap;

use serde::Serialize;

/// The anonymous token's AccessorID.
pub const ANONYMOUS_ACCESSOR: &str = "00000000-0000-0000-0000-000000000002";

/// `acl.default_policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DefaultPolicy {
    /// Everything not denied is allowed (Consul's default).
    #[default]
    Allow,
    /// Everything not granted is denied.
    Deny,
}

impl DefaultPolicy {
    /// `allow` / `deny`, as `X-Consul-Default-ACL-Policy` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
        }
    }
}

/// ACL settings of the simulated agent.
#[derive(Debug, Clone, Default)]
pub struct AclConfig {
    /// ACLs on or off. Off: tokens are ignored and everything is allowed.
    pub enabled: bool,
    /// `acl.default_policy`.
    pub default_policy: DefaultPolicy,
    /// SecretID of a management token (all permissions), if any.
    pub management_token: Option<String>,
    /// `acl.tokens.default`: used when a request carries no token.
    pub default_token: Option<String>,
}

/// A token as the sim stores it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Token {
    /// Public ID, quoted in `Permission denied` texts.
    #[serde(rename = "AccessorID")]
    pub accessor_id: String,
    /// The secret a client sends.
    #[serde(rename = "SecretID")]
    pub secret_id: String,
    /// Free text.
    pub description: String,
    /// Policy rules.
    #[serde(skip)]
    pub rules: Rules,
    /// A management token may do anything.
    #[serde(skip)]
    pub management: bool,
}

/// The token table.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    by_secret: BTreeMap<String, Token>,
}

impl Tokens {
    /// Builds the table from the config (adds the management token).
    pub fn new(cfg: &AclConfig) -> Self {
        let mut t = Self::default();
        if let Some(secret) = &cfg.management_token {
            t.insert(Token {
                accessor_id: uuid::Uuid::new_v4().to_string(),
                secret_id: secret.clone(),
                description: "Initial Management Token".into(),
                rules: Rules::default(),
                management: true,
            });
        }
        t
    }

    /// Adds or replaces a token.
    pub fn insert(&mut self, token: Token) {
        self.by_secret.insert(token.secret_id.clone(), token);
    }

    /// Removes a token by secret; true if it existed.
    pub fn remove(&mut self, secret: &str) -> bool {
        self.by_secret.remove(secret).is_some()
    }

    /// Looks a secret up.
    pub fn get(&self, secret: &str) -> Option<&Token> {
        self.by_secret.get(secret)
    }
}

/// What a request may do.
#[derive(Debug, Clone)]
pub enum Authorizer {
    /// ACLs disabled, or a management token.
    AllowAll,
    /// A resolved token (or anonymous) under the default policy.
    Token {
        /// `None` for the anonymous token.
        accessor: Option<String>,
        /// The token's rules.
        rules: Box<Rules>,
        /// What applies where no rule matches.
        default: DefaultPolicy,
    },
}

/// A resource kind in Consul's permission texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// `service`.
    Service,
    /// `intention` (singular, as in Consul's texts).
    Intention,
    /// `node`.
    Node,
    /// `mesh` (no name).
    Mesh,
    /// `operator` (no name).
    Operator,
    /// `agent`.
    Agent,
    /// `query` (prepared queries, by name prefix).
    Query,
}

impl Resource {
    fn word(self) -> &'static str {
        match self {
            Self::Service => "service",
            Self::Intention => "intention",
            Self::Node => "node",
            Self::Mesh => "mesh",
            Self::Operator => "operator",
            Self::Agent => "agent",
            Self::Query => "query",
        }
    }
}

/// Resolution of a request's token failed: Consul's `ACL not found`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ACL not found")]
pub struct AclNotFound;

/// Resolves the secret a request carries (`None`: no token given) to an authorizer.
pub fn resolve(
    cfg: &AclConfig,
    tokens: &Tokens,
    secret: Option<&str>,
) -> Result<Authorizer, AclNotFound> {
    if !cfg.enabled {
        return Ok(Authorizer::AllowAll);
    }
    let secret = secret.or(cfg.default_token.as_deref());
    match secret {
        None | Some("anonymous") => Ok(Authorizer::Token {
            accessor: None,
            rules: Box::default(),
            default: cfg.default_policy,
        }),
        Some(s) => {
            let token = tokens.get(s).ok_or(AclNotFound)?;
            if token.management {
                return Ok(Authorizer::AllowAll);
            }
            Ok(Authorizer::Token {
                accessor: Some(token.accessor_id.clone()),
                rules: Box::new(token.rules.clone()),
                default: cfg.default_policy,
            })
        }
    }
}

impl Authorizer {
    /// Whether `level` on `resource` (named `name`, ignored for mesh/operator) is granted.
    pub fn allows(&self, resource: Resource, name: &str, level: Level) -> bool {
        match self {
            Self::AllowAll => true,
            Self::Token { rules, default, .. } => {
                let granted = match resource {
                    Resource::Service => rules.service(name),
                    Resource::Intention => rules.intention(name),
                    Resource::Node => rules.node(name),
                    Resource::Agent => rules.agent(name),
                    Resource::Query => rules.query(name),
                    Resource::Mesh => rules.mesh(),
                    Resource::Operator => rules.operator(),
                };
                match granted {
                    Some(have) => have >= level,
                    None => *default == DefaultPolicy::Allow,
                }
            }
        }
    }

    /// `ServiceWriteAnyAllowed`: some service rule grants write (or the default allows).
    pub fn allows_service_write_any(&self) -> bool {
        match self {
            Self::AllowAll => true,
            Self::Token { rules, default, .. } => rules
                .service_write_any()
                .unwrap_or(*default == DefaultPolicy::Allow),
        }
    }

    /// Whether this is a management authorizer (or ACLs are off): Consul's `ACLWrite` check,
    /// which decides who sees prepared-query tokens and unnamed queries.
    pub fn is_management(&self) -> bool {
        matches!(self, Self::AllowAll)
    }

    /// `Ok` when allowed, else Consul's `Permission denied: ...` text.
    pub fn require(&self, resource: Resource, name: &str, level: Level) -> Result<(), String> {
        if self.allows(resource, name, level) {
            return Ok(());
        }
        Err(self.denied_text(resource, name, level))
    }

    /// Consul's text for a missing permission.
    pub fn denied_text(&self, resource: Resource, name: &str, level: Level) -> String {
        let perm = format!("'{}:{}'", resource.word(), level.as_str());
        let on = match resource {
            Resource::Mesh | Resource::Operator => String::new(),
            _ => format!(" on {name:?}"),
        };
        match self {
            Self::Token {
                accessor: Some(id), ..
            } => {
                format!(
                    "Permission denied: token with AccessorID '{id}' lacks permission {perm}{on}"
                )
            }
            _ => format!(
                "Permission denied: anonymous token lacks permission {perm}{on}. The anonymous token is used implicitly when a request does not specify a token."
            ),
        }
    }
}

#[cfg(test)]
mod tests;
