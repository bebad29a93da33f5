//! Intentions -> Envoy RBAC, as Consul's `agent/xds/rbac.go` (`makeRBACRules`): the
//! destination's intentions in precedence order, lower-precedence duplicates of a source
//! dropped, precedence removed by AND-NOTting higher-precedence sources from wildcard ones,
//! intentions equal to the default dropped, one L4 policy `consul-intentions-layer4` and one
//! `consul-intentions-layer7-<i>` per L7 intention (HTTP only; on an L4 listener an L7
//! intention is a deny). The action is ALLOW under default-deny, DENY under default-allow.
//! On HTTP listeners the intentions' and permissions' JWT requirements are ANDed in
//! (`rbac/jwt.rs`).
//!
//! The filter bytes are encoded here, not by prost: `RBAC.policies` is a `HashMap`, whose
//! iteration order would make identical state produce different bytes.

use std::collections::BTreeMap;

use envoy_types::pb::envoy::config::listener::v3::{Filter, filter};
use envoy_types::pb::envoy::config::rbac::v3::{
    Permission, Policy, Principal, Rbac, permission, principal, rbac,
};
use envoy_types::pb::envoy::config::route::v3::{HeaderMatcher, header_matcher};
use envoy_types::pb::envoy::extensions::filters::http::rbac::v3::Rbac as HttpRbac;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpFilter, http_filter,
};
use envoy_types::pb::envoy::extensions::filters::network::rbac::v3::Rbac as NetworkRbac;
use envoy_types::pb::envoy::r#type::matcher::v3::{
    PathMatcher, RegexMatcher, StringMatcher, path_matcher, string_matcher::MatchPattern,
};
use envoy_types::pb::google::protobuf::Any;
use prost::{Message, Name};

use super::snapshot::Snapshot;
use jwt::JwtInfo;

mod jwt;
use crate::model::config_entry::{IntentionHttpPermission, IntentionPermission};
use crate::model::intention::Intention;

/// The RBAC rules of one public listener, with policies in name order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rules {
    pub(crate) action: rbac::Action,
    pub(crate) policies: BTreeMap<String, Policy>,
}

impl Rules {
    /// `RBAC` bytes with the policies in name order (deterministic).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Rbac {
            action: self.action as i32,
            ..Default::default()
        }
        .encode_to_vec();
        for (name, policy) in &self.policies {
            // A one-entry map encodes deterministically; concatenated messages merge.
            let one = Rbac {
                policies: [(name.clone(), policy.clone())].into_iter().collect(),
                ..Default::default()
            };
            out.extend(one.encode_to_vec());
        }
        out
    }
}

/// `envoy.filters.network.rbac` with stat prefix `connect_authz`.
pub(crate) fn network_filter(rules: &Rules) -> Filter {
    let head = NetworkRbac {
        stat_prefix: "connect_authz".to_owned(),
        ..Default::default()
    };
    Filter {
        name: "envoy.filters.network.rbac".to_owned(),
        config_type: Some(filter::ConfigType::TypedConfig(with_rules(
            NetworkRbac::type_url(),
            head.encode_to_vec(),
            rules,
        ))),
    }
}

/// `envoy.filters.http.rbac`.
pub(crate) fn http_filter(rules: &Rules) -> HttpFilter {
    HttpFilter {
        name: "envoy.filters.http.rbac".to_owned(),
        config_type: Some(http_filter::ConfigType::TypedConfig(with_rules(
            HttpRbac::type_url(),
            HttpRbac::default().encode_to_vec(),
            rules,
        ))),
        ..Default::default()
    }
}

/// Appends field 1 (`rules`, present even when empty: `rules: {}` denies everything).
fn with_rules(type_url: String, mut value: Vec<u8>, rules: &Rules) -> Any {
    let body = rules.encode();
    prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut value);
    prost::encoding::encode_varint(body.len() as u64, &mut value);
    value.extend(body);
    Any { type_url, value }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    Allow,
    Deny,
    Layer7,
}

struct Ixn<'a> {
    source: &'a str,
    action: Act,
    permissions: &'a [IntentionPermission],
    not_sources: Vec<&'a str>,
    skip: bool,
    /// The intention's own JWT providers (HTTP listeners only).
    jwt: Vec<JwtInfo>,
}

/// Builds the rules for the snapshot's destination; `http` for an L7 public listener.
pub(crate) fn rules(snap: &Snapshot, http: bool) -> Rules {
    let default_act = if snap.default_allow {
        Act::Allow
    } else {
        Act::Deny
    };
    let mut ixns = intermediate(snap, http);
    // Walk backwards: distribute each intention as NOT onto lower-precedence wildcard ones.
    for i in (0..ixns.len()).rev() {
        for j in i + 1..ixns.len() {
            if !ixns[j].skip && source_matches(ixns[i].source, ixns[j].source) {
                let src = ixns[i].source;
                ixns[j].not_sources.push(src);
            }
        }
        if ixns[i].action == default_act {
            ixns[i].skip = true;
        }
    }
    let kept: Vec<&Ixn<'_>> = ixns.iter().filter(|i| !i.skip).collect();
    let mut policies = BTreeMap::new();
    let mut l4 = Vec::new();
    for (i, ixn) in kept.iter().enumerate() {
        let principal = flatten_principal(snap, ixn);
        if ixn.action == Act::Layer7 {
            let permissions = l7_permissions(snap, ixn.permissions, default_act);
            if !permissions.is_empty() {
                policies.insert(
                    format!("consul-intentions-layer7-{i}"),
                    Policy {
                        principals: vec![principal],
                        permissions,
                        ..Default::default()
                    },
                );
            }
        } else {
            l4.push(principal);
        }
    }
    if !l4.is_empty() {
        policies.insert(
            "consul-intentions-layer4".to_owned(),
            Policy {
                principals: l4,
                permissions: vec![any_permission()],
                ..Default::default()
            },
        );
    }
    Rules {
        action: if snap.default_allow {
            rbac::Action::Deny
        } else {
            rbac::Action::Allow
        },
        policies,
    }
}

/// `intentionListToIntermediateRBACForm`: local sources only (peers and sameness groups need
/// trust bundles this simulator does not model), one per source.
fn intermediate(snap: &Snapshot, http: bool) -> Vec<Ixn<'_>> {
    let intentions: &[Intention] = &snap.intentions;
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for ixn in intentions {
        if !ixn.source_peer.is_empty() || !ixn.source_sameness_group.is_empty() {
            continue;
        }
        if seen.contains(&ixn.source_name.as_str()) {
            continue;
        }
        seen.push(&ixn.source_name);
        let action = match (ixn.is_l7(), http) {
            (true, true) => Act::Layer7,
            (true, false) => Act::Deny,
            (false, _) if ixn.action == "allow" => Act::Allow,
            (false, _) => Act::Deny,
        };
        out.push(Ixn {
            source: &ixn.source_name,
            action,
            permissions: &ixn.permissions,
            not_sources: Vec::new(),
            skip: false,
            jwt: if http {
                jwt::infos(snap, ixn.jwt.as_ref())
            } else {
                Vec::new()
            },
        });
    }
    out
}

/// `ixnSourceMatches`: `tester` is strictly more specific than `against` and inside it.
fn source_matches(tester: &str, against: &str) -> bool {
    let wild = |s: &str| usize::from(s == "*");
    wild(tester) < wild(against) && (tester == against || against == "*")
}

fn flatten_principal(snap: &Snapshot, ixn: &Ixn<'_>) -> Principal {
    jwt::add_principal(source_principal(snap, ixn), &ixn.jwt)
}

fn source_principal(snap: &Snapshot, ixn: &Ixn<'_>) -> Principal {
    let id = id_principal(&snap.trust_domain, ixn.source);
    if ixn.not_sources.is_empty() {
        return id;
    }
    let mut ids = vec![id];
    for src in &ixn.not_sources {
        ids.push(Principal {
            identifier: Some(principal::Identifier::NotId(Box::new(id_principal(
                &snap.trust_domain,
                src,
            )))),
        });
    }
    Principal {
        identifier: Some(principal::Identifier::AndIds(principal::Set { ids })),
    }
}

/// `makeSpiffePattern`: `^spiffe://<td>/ns/default/dc/[^/]+/svc/<svc>$`, `*` -> `[^/]+`.
pub(crate) fn spiffe_pattern(trust_domain: &str, source: &str) -> String {
    let svc = if source == "*" { "[^/]+" } else { source };
    format!(
        "^spiffe://{}/ns/default/dc/[^/]+/svc/{svc}$",
        quote_meta(trust_domain)
    )
}

fn id_principal(trust_domain: &str, source: &str) -> Principal {
    Principal {
        identifier: Some(principal::Identifier::Authenticated(
            principal::Authenticated {
                principal_name: Some(regex_matcher(&spiffe_pattern(trust_domain, source))),
            },
        )),
    }
}

/// Go's `regexp.QuoteMeta`.
fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn regex_matcher(pattern: &str) -> StringMatcher {
    StringMatcher {
        match_pattern: Some(MatchPattern::SafeRegex(regex(pattern))),
        ignore_case: false,
    }
}

fn regex(pattern: &str) -> RegexMatcher {
    RegexMatcher {
        regex: pattern.to_owned(),
        ..Default::default()
    }
}

fn any_permission() -> Permission {
    Permission {
        rule: Some(permission::Rule::Any(true)),
    }
}

/// `removePermissionPrecedence` then `Flatten`: each permission AND-NOT the ones above it;
/// permissions whose action equals the default are dropped.
fn l7_permissions(
    snap: &Snapshot,
    perms: &[IntentionPermission],
    default_act: Act,
) -> Vec<Permission> {
    let converted: Vec<Permission> = perms.iter().map(convert_permission).collect();
    let mut out = Vec::new();
    for (j, perm) in perms.iter().enumerate() {
        let act = if perm.action == "allow" {
            Act::Allow
        } else {
            Act::Deny
        };
        if act == default_act {
            continue;
        }
        let mut parts = vec![converted[j].clone()];
        // Consul walks backwards, so the nearest higher permission comes first.
        for higher in converted[..j].iter().rev() {
            parts.push(Permission {
                rule: Some(permission::Rule::NotRule(Box::new(higher.clone()))),
            });
        }
        let infos = jwt::infos(snap, perm.jwt.as_ref());
        out.push(jwt::add_permission(and_permissions(parts), &infos));
    }
    out
}

/// `convertPermission`: path, headers and methods ANDed.
fn convert_permission(perm: &IntentionPermission) -> Permission {
    let Some(h) = &perm.http else {
        return any_permission();
    };
    let mut parts = Vec::new();
    if let Some(p) = path_permission(h) {
        parts.push(p);
    }
    for hdr in &h.header {
        let string = |p: MatchPattern| {
            header_matcher::HeaderMatchSpecifier::StringMatch(StringMatcher {
                match_pattern: Some(p),
                ignore_case: hdr.ignore_case,
            })
        };
        let spec = if !hdr.exact.is_empty() {
            string(MatchPattern::Exact(hdr.exact.clone()))
        } else if !hdr.regex.is_empty() {
            header_matcher::HeaderMatchSpecifier::StringMatch(regex_matcher(&hdr.regex))
        } else if !hdr.prefix.is_empty() {
            string(MatchPattern::Prefix(hdr.prefix.clone()))
        } else if !hdr.suffix.is_empty() {
            string(MatchPattern::Suffix(hdr.suffix.clone()))
        } else if !hdr.contains.is_empty() {
            string(MatchPattern::Contains(hdr.contains.clone()))
        } else if hdr.present {
            header_matcher::HeaderMatchSpecifier::PresentMatch(true)
        } else {
            continue;
        };
        parts.push(header_permission(HeaderMatcher {
            name: hdr.name.clone(),
            invert_match: hdr.invert,
            header_match_specifier: Some(spec),
            ..Default::default()
        }));
    }
    if !h.methods.is_empty() {
        parts.push(header_permission(HeaderMatcher {
            name: ":method".to_owned(),
            header_match_specifier: Some(header_matcher::HeaderMatchSpecifier::StringMatch(
                regex_matcher(&h.methods.join("|")),
            )),
            ..Default::default()
        }));
    }
    if parts.is_empty() {
        return any_permission();
    }
    and_permissions(parts)
}

fn path_permission(h: &IntentionHttpPermission) -> Option<Permission> {
    let pattern = if !h.path_exact.is_empty() {
        MatchPattern::Exact(h.path_exact.clone())
    } else if !h.path_prefix.is_empty() {
        MatchPattern::Prefix(h.path_prefix.clone())
    } else if !h.path_regex.is_empty() {
        MatchPattern::SafeRegex(regex(&h.path_regex))
    } else {
        return None;
    };
    Some(Permission {
        rule: Some(permission::Rule::UrlPath(PathMatcher {
            rule: Some(path_matcher::Rule::Path(StringMatcher {
                match_pattern: Some(pattern),
                ignore_case: false,
            })),
        })),
    })
}

fn header_permission(h: HeaderMatcher) -> Permission {
    Permission {
        rule: Some(permission::Rule::Header(h)),
    }
}

fn and_permissions(mut parts: Vec<Permission>) -> Permission {
    if parts.len() == 1
        && let Some(p) = parts.pop()
    {
        return p;
    }
    Permission {
        rule: Some(permission::Rule::AndRules(permission::Set { rules: parts })),
    }
}
