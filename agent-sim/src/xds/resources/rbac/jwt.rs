//! The JWT half of Consul's `rbac.go`: an intention's providers become principals, a
//! permission's providers become permissions, each an exact match on the verified payload's
//! `iss` (metadata `envoy.filters.http.jwt_authn` / `jwt_payload_<provider>` / `iss`) ANDed
//! with one match per `VerifyClaims` path, the providers ORed (`addJWTPrincipal`,
//! `rbacPermission.Flatten`). Consul still uses the `metadata` principal and permission that
//! Envoy has deprecated (for `sourced_metadata`), and Envoy 1.40 accepts them.
#![allow(deprecated)]

use envoy_types::pb::envoy::config::rbac::v3::{Permission, Principal, permission, principal};
use envoy_types::pb::envoy::r#type::matcher::v3::{
    MetadataMatcher, StringMatcher, ValueMatcher, metadata_matcher, string_matcher::MatchPattern,
    value_matcher,
};

use super::super::jwt_authn::{FILTER, payload_key};
use super::super::snapshot::Snapshot;
use crate::model::config_entry::{IntentionJwtClaimVerification, IntentionJwtRequirement};

/// `JWTInfo`: a provider an intention or permission requires, with its entry's issuer.
#[derive(Debug, Clone)]
pub(super) struct JwtInfo {
    name: String,
    issuer: String,
    claims: Vec<IntentionJwtClaimVerification>,
}

/// The infos of a requirement (empty without one).
pub(super) fn infos(snap: &Snapshot, req: Option<&IntentionJwtRequirement>) -> Vec<JwtInfo> {
    req.map(|r| r.providers.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|p| JwtInfo {
            name: p.name.clone(),
            issuer: snap
                .jwt_providers
                .get(&p.name)
                .map(|e| e.issuer.clone())
                .unwrap_or_default(),
            claims: p.verify_claims.clone(),
        })
        .collect()
}

/// `pathToSegments` + the exact value: the metadata matcher both forms share.
fn matcher(payload: &str, path: &[String], value: &str) -> MetadataMatcher {
    let segment = |k: &str| metadata_matcher::PathSegment {
        segment: Some(metadata_matcher::path_segment::Segment::Key(k.to_owned())),
    };
    let mut segments = vec![segment(payload)];
    segments.extend(path.iter().map(|p| segment(p)));
    MetadataMatcher {
        filter: FILTER.to_owned(),
        path: segments,
        value: Some(ValueMatcher {
            match_pattern: Some(value_matcher::MatchPattern::StringMatch(StringMatcher {
                match_pattern: Some(MatchPattern::Exact(value.to_owned())),
                ignore_case: false,
            })),
        }),
        invert: false,
    }
}

fn and_principals(mut ids: Vec<Principal>) -> Principal {
    if ids.len() == 1
        && let Some(p) = ids.pop()
    {
        return p;
    }
    Principal {
        identifier: Some(principal::Identifier::AndIds(principal::Set { ids })),
    }
}

fn or_principals(mut ids: Vec<Principal>) -> Principal {
    if ids.len() == 1
        && let Some(p) = ids.pop()
    {
        return p;
    }
    Principal {
        identifier: Some(principal::Identifier::OrIds(principal::Set { ids })),
    }
}

/// `addJWTPrincipal`: the source principal AND (any provider's issuer AND its claims).
pub(super) fn add_principal(source: Principal, infos: &[JwtInfo]) -> Principal {
    if infos.is_empty() {
        return source;
    }
    let per: Vec<Principal> = infos
        .iter()
        .map(|i| {
            let key = payload_key(&i.name);
            let meta = |path: &[String], v: &str| Principal {
                identifier: Some(principal::Identifier::Metadata(matcher(&key, path, v))),
            };
            let iss = meta(&["iss".to_owned()], &i.issuer);
            let claims: Vec<Principal> = i.claims.iter().map(|c| meta(&c.path, &c.value)).collect();
            if claims.is_empty() {
                iss
            } else {
                and_principals(vec![iss, and_principals(claims)])
            }
        })
        .collect();
    and_principals(vec![source, or_principals(per)])
}

fn and_permissions(mut rules: Vec<Permission>) -> Permission {
    match rules.len() {
        0 => Permission {
            rule: Some(permission::Rule::Any(true)),
        },
        1 => rules.pop().unwrap_or_default(),
        _ => Permission {
            rule: Some(permission::Rule::AndRules(permission::Set { rules })),
        },
    }
}

/// The JWT part of `rbacPermission.Flatten`: the computed permission AND (any provider's
/// issuer AND its claims; no claims ANDs to `any`).
pub(super) fn add_permission(computed: Permission, infos: &[JwtInfo]) -> Permission {
    if infos.is_empty() {
        return computed;
    }
    let mut per: Vec<Permission> = infos
        .iter()
        .map(|i| {
            let key = payload_key(&i.name);
            let meta = |path: &[String], v: &str| Permission {
                rule: Some(permission::Rule::Metadata(matcher(&key, path, v))),
            };
            let iss = meta(&["iss".to_owned()], &i.issuer);
            let claims = i.claims.iter().map(|c| meta(&c.path, &c.value)).collect();
            and_permissions(vec![iss, and_permissions(claims)])
        })
        .collect();
    let any_of = if per.len() == 1 {
        per.pop().unwrap_or_default()
    } else {
        Permission {
            rule: Some(permission::Rule::OrRules(permission::Set { rules: per })),
        }
    };
    and_permissions(vec![computed, any_of])
}
