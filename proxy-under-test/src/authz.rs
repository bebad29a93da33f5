//! Local authorization: intentions for this proxy's destination, sorted by Consul's precedence,
//! first match wins (deny before allow at equal precedence), default policy when nothing matches.
//! L4 (per connection) and L7 (per HTTP request, with `Permissions`).

mod l7;
mod model;
#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::fmt;

pub(crate) use self::l7::CompiledPermission;
pub use self::l7::RequestInfo;
pub use self::model::{HeaderMatch, HttpMatch, Intention, Permission};
use crate::seam::AuthzHooks;
use crate::spiffe::ServiceId;

/// Where the default decision came from (Consul's reason texts differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultPolicySource {
    /// Agent `default_intention_policy` was set.
    IntentionPolicy,
    /// Derived from the ACL default policy (ACLs off = allow).
    Acl,
}

/// The default decision when no intention matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultPolicy {
    /// Allow when nothing matches.
    pub allow: bool,
    /// Which agent setting decided it.
    pub source: DefaultPolicySource,
}

impl DefaultPolicy {
    /// Default allow from the ACL settings (ACLs disabled).
    pub const ALLOW: Self = Self {
        allow: true,
        source: DefaultPolicySource::Acl,
    };
    /// Default deny from the ACL settings.
    pub const DENY: Self = Self {
        allow: false,
        source: DefaultPolicySource::Acl,
    };

    /// Consul's rule: `default_intention_policy` wins when set (`allow`/`deny`), else the ACL
    /// default (`ACLsEnabled=false` = allow, else `acl_default_policy`).
    pub fn resolve(intention_policy: &str, acls_enabled: bool, acl_default_policy: &str) -> Self {
        match intention_policy.to_ascii_lowercase().as_str() {
            "allow" => Self {
                allow: true,
                source: DefaultPolicySource::IntentionPolicy,
            },
            "deny" => Self {
                allow: false,
                source: DefaultPolicySource::IntentionPolicy,
            },
            _ if !acls_enabled => Self::ALLOW,
            _ => Self {
                allow: !acl_default_policy.eq_ignore_ascii_case("deny"),
                source: DefaultPolicySource::Acl,
            },
        }
    }

    fn reason(self) -> &'static str {
        match self.source {
            DefaultPolicySource::IntentionPolicy => "Default intention policy",
            DefaultPolicySource::Acl => "Default behavior configured by ACLs",
        }
    }
}

/// An authorization outcome with a human-readable reason (Consul's wording).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the connection or request may proceed.
    pub allowed: bool,
    /// Why, e.g. `Matched L4 intention: default/web => default/db (Precedence: 9, Action: ALLOW)`.
    pub reason: String,
}

/// Intentions for one destination, compiled and sorted for first-match evaluation.
#[derive(Debug, Clone, Default)]
pub struct IntentionSet {
    destination: String,
    rules: Vec<Rule>,
    hooks: AuthzHooks,
}

/// One compiled intention.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub(crate) intention: Intention,
    pub(crate) precedence: u8,
    permissions: Vec<CompiledPermission>,
}

impl Rule {
    pub(crate) fn is_l7(&self) -> bool {
        !self.intention.permissions.is_empty()
    }
    pub(crate) fn allows(&self) -> bool {
        self.intention.action.eq_ignore_ascii_case("allow")
    }
    pub(crate) fn label(&self) -> String {
        let i = &self.intention;
        format!(
            "{}/{} => {}/{}",
            ns(&i.source_ns),
            i.source_name,
            ns(&i.destination_ns),
            i.destination_name
        )
    }
}

fn ns(n: &str) -> &str {
    if n.is_empty() { "default" } else { n }
}

/// Consul's precedence (§13): each end counts 2 (exact ns + name), 1 (`ns/*`) or 0 (`*/*`);
/// `max` is 9/6/3 for destination counts 2/1/0 and `precedence = max - (2 - source count)`.
pub fn precedence(intention: &Intention) -> u8 {
    fn count(ns_: &str, name: &str) -> u8 {
        if ns_ == "*" {
            0
        } else if name == "*" {
            1
        } else {
            2
        }
    }
    let dst = count(&intention.destination_ns, &intention.destination_name);
    let src = count(&intention.source_ns, &intention.source_name);
    let max = match dst {
        2 => 9,
        1 => 6,
        _ => 3,
    };
    max - (2 - src)
}

impl IntentionSet {
    /// Compiles and sorts `intentions` for the destination service `destination`: precedence
    /// descending, then deny (and L7) before allow, then Consul's lexicographic order.
    pub fn new(destination: &str, intentions: Vec<Intention>) -> Self {
        let mut rules: Vec<Rule> = intentions
            .into_iter()
            .map(|intention| Rule {
                precedence: precedence(&intention),
                permissions: intention
                    .permissions
                    .iter()
                    .map(CompiledPermission::new)
                    .collect(),
                intention,
            })
            .collect();
        rules.sort_by(|a, b| {
            let key = |r: &Rule| {
                let i = &r.intention;
                (
                    Reverse(r.precedence),
                    r.allows() && !r.is_l7(),
                    (i.source_peer.clone(), i.source_partition.clone()),
                    (ns(&i.source_ns).to_owned(), i.source_name.clone()),
                    (ns(&i.destination_ns).to_owned(), i.destination_name.clone()),
                )
            };
            key(a).cmp(&key(b))
        });
        Self {
            destination: destination.to_owned(),
            rules,
            hooks: AuthzHooks::default(),
        }
    }

    /// This set, with `hooks` asked before each decision.
    pub(crate) fn with_hooks(mut self, hooks: AuthzHooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// The destination service these intentions protect.
    pub fn destination(&self) -> &str {
        &self.destination
    }

    /// Every JWT provider the intentions (or their permissions) name.
    pub fn jwt_providers(&self) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        for r in &self.rules {
            let perms = r
                .intention
                .permissions
                .iter()
                .filter_map(|p| p.jwt.as_ref());
            for req in r.intention.jwt.iter().chain(perms) {
                out.extend(req.providers.iter().map(|p| p.name.clone()));
            }
        }
        out
    }

    /// Number of intentions.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// True when there are no intentions.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The intentions matching `source`, highest precedence first.
    fn matching<'a>(&'a self, source: &ServiceId) -> impl DoubleEndedIterator<Item = &'a Rule> {
        self.rules
            .iter()
            .filter(move |r| self.rule_matches(r, source))
    }

    /// The governing (highest-precedence matching) intention for `source`.
    pub(crate) fn governing(&self, source: &ServiceId) -> Option<&Rule> {
        if let Some(instead) = self.hooks.governing(self.matching(source)) {
            return instead;
        }
        self.matching(source).next()
    }

    fn rule_matches(&self, rule: &Rule, source: &ServiceId) -> bool {
        let i = &rule.intention;
        let dst_ok = (i.destination_name == "*" || i.destination_name == self.destination)
            && (i.destination_ns == "*" || ns(&i.destination_ns) == "default");
        let part_ok = i.source_partition.is_empty() || i.source_partition == source.partition;
        let src_ok = (i.source_ns == "*" || ns(&i.source_ns) == source.namespace)
            && (i.source_name == "*" || i.source_name == source.service);
        i.source_peer.is_empty()
            && i.source_sameness_group.is_empty()
            && dst_ok
            && part_ok
            && src_ok
    }

    /// L4 decision for a connection from `source` (an L7 intention is a deny, as in Consul's
    /// authorize endpoint).
    pub fn authorize_l4(&self, source: &ServiceId, default: DefaultPolicy) -> Decision {
        if let Some(d) = self.hooks.decision(self, source) {
            return d;
        }
        match self.governing(source) {
            Some(rule) if rule.is_l7() => Decision {
                allowed: false,
                reason: format!(
                    "Matched L7 intention: {} (Precedence: {}, Permissions: {})",
                    rule.label(),
                    rule.precedence,
                    rule.permissions.len()
                ),
            },
            Some(rule) => Decision {
                allowed: rule.allows(),
                reason: format!(
                    "Matched L4 intention: {} (Precedence: {}, Action: {})",
                    rule.label(),
                    rule.precedence,
                    rule.intention.action.to_ascii_uppercase()
                ),
            },
            None => Decision {
                allowed: default.allow,
                reason: default.reason().to_owned(),
            },
        }
    }

    /// L7 decision for one HTTP request from `source`: the governing intention's action, or its
    /// first matching permission, or the default policy when no permission matches.
    pub fn authorize_l7(
        &self,
        source: &ServiceId,
        request: &RequestInfo<'_>,
        default: DefaultPolicy,
    ) -> Decision {
        if let Some(d) = self.hooks.decision(self, source) {
            return d;
        }
        let Some(rule) = self.governing(source) else {
            return Decision {
                allowed: default.allow,
                reason: default.reason().to_owned(),
            };
        };
        if let Some(req) = &rule.intention.jwt
            && !request.jwt.satisfies(req)
        {
            // Consul ANDs the requirement into the intention's RBAC principal: without it the
            // intention does not apply, and its sources are still NOT-ed out of wildcard ones.
            return Decision {
                allowed: default.allow,
                reason: format!(
                    "JWT requirement of intention {} not met; {}",
                    rule.label(),
                    default.reason()
                ),
            };
        }
        if !rule.is_l7() {
            return self.authorize_l4(source, default);
        }
        match rule
            .permissions
            .iter()
            .enumerate()
            .find(|(_, p)| self.permission_matches(p, request))
        {
            Some((idx, perm))
                if perm
                    .jwt
                    .as_ref()
                    .is_some_and(|req| !request.jwt.satisfies(req)) =>
            {
                // The permission's RBAC rule is ANDed with the requirement; lower permissions
                // are NOT-ed with its HTTP match only, so nothing below can match instead.
                Decision {
                    allowed: default.allow,
                    reason: format!(
                        "JWT requirement of permission #{} of L7 intention {} not met; {}",
                        idx + 1,
                        rule.label(),
                        default.reason()
                    ),
                }
            }
            Some((idx, perm)) => Decision {
                allowed: perm.allows(),
                reason: format!(
                    "Matched L7 intention: {} (Precedence: {}, Permission #{}: {})",
                    rule.label(),
                    rule.precedence,
                    idx + 1,
                    if perm.allows() { "ALLOW" } else { "DENY" }
                ),
            },
            None => Decision {
                allowed: default.allow,
                reason: format!(
                    "No permission of L7 intention {} matched; {}",
                    rule.label(),
                    default.reason()
                ),
            },
        }
    }
}

impl IntentionSet {
    /// Whether permission `p` matches `request`.
    fn permission_matches(&self, p: &CompiledPermission, request: &RequestInfo<'_>) -> bool {
        if let Some(m) = self.hooks.permission_matches(p, request) {
            return m;
        }
        p.matches(request)
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.allowed { "allow" } else { "deny" };
        write!(f, "{verdict}: {}", self.reason)
    }
}
