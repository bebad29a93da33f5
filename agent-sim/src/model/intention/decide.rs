//! Decisions: the agent's authorize logic (`/v1/agent/connect/authorize`), intention check
//! (`/v1/connect/intentions/check`) and the default policy when nothing matches.

use super::names::{Parsed, check_namespace, parse_component};
use super::{IntentionError, MatchBy, matching};
use crate::model::config_entry::{ConfigEntries, go_quote};
use crate::model::spiffe::{self, SpiffeId};

/// An intention action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Allow,
    Deny,
}

/// What decides when no intention matches (reference §13).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefaultPolicy {
    /// Agent `default_intention_policy`, when set.
    pub intention_default: Option<Action>,
    pub acl_enabled: bool,
    /// `acl.default_policy = "allow"`.
    pub acl_default_allow: bool,
}

impl DefaultPolicy {
    /// True when a connection no intention matches is allowed.
    pub fn allows_by_default(&self) -> bool {
        self.decide().0
    }

    fn decide(&self) -> (bool, &'static str) {
        match self.intention_default {
            Some(a) => (a == Action::Allow, "Default intention policy"),
            None => (
                !self.acl_enabled || self.acl_default_allow,
                "Default behavior configured by ACLs",
            ),
        }
    }
}

/// An authorize decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

/// `POST /v1/agent/connect/authorize` after decoding and ACLs: steps 2, 3, 4, 7 and 8 of
/// reference §3.
pub fn authorize(
    entries: &ConfigEntries,
    target: &str,
    client_cert_uri: &str,
    default: &DefaultPolicy,
) -> Result<Decision, IntentionError> {
    authorize_matched(
        &matching(entries, MatchBy::Destination, target),
        target,
        client_cert_uri,
        default,
    )
}

/// [`authorize`] over the intentions already matched for destination `target` (sorted, as
/// [`matching`] returns them), so callers can reuse one match across requests.
pub fn authorize_matched(
    matched: &[super::Intention],
    target: &str,
    client_cert_uri: &str,
    default: &DefaultPolicy,
) -> Result<Decision, IntentionError> {
    let bad = |s: &str| IntentionError::BadRequest(s.to_owned());
    if target.is_empty() {
        return Err(bad("Target service must be specified"));
    }
    let id = spiffe::parse(client_cert_uri)
        .map_err(|_| bad("ClientCertURI not a valid Connect identifier"))?;
    let SpiffeId::Service {
        partition,
        namespace,
        service,
        ..
    } = id
    else {
        return Err(bad("ClientCertURI not a valid Service identifier"));
    };
    if partition != "default" {
        return Err(IntentionError::BadRequest(format!(
            "Mismatched partitions: {} != \"default\"",
            go_quote(&partition)
        )));
    }
    let found = matched
        .iter()
        .find(|i| i.matches_source(&service) && (i.source_ns == namespace || i.source_ns == "*"));
    Ok(match found {
        Some(i) if i.is_l7() => Decision {
            allowed: false,
            reason: format!("Matched L7 intention: {}", i.describe()),
        },
        Some(i) => Decision {
            allowed: i.action == "allow",
            reason: format!("Matched L4 intention: {}", i.describe()),
        },
        None => {
            let (allowed, reason) = default.decide();
            Decision {
                allowed,
                reason: reason.into(),
            }
        }
    })
}

/// `GET /v1/connect/intentions/check` (L7 intentions count as deny).
pub fn check(
    entries: &ConfigEntries,
    source: &str,
    destination: &str,
    source_type: Option<&str>,
    default: &DefaultPolicy,
) -> Result<bool, IntentionError> {
    let internal = IntentionError::Internal;
    let source_type = source_type.unwrap_or("consul");
    let src = if source_type == "consul" {
        parse_component(source, false)
            .map_err(|e| internal(format!("source {} is invalid: {e}", go_quote(source))))?
    } else {
        Parsed {
            name: source.to_owned(),
            ..Parsed::default()
        }
    };
    let dst = parse_component(destination, false).map_err(|e| {
        internal(format!(
            "destination {} is invalid: {e}",
            go_quote(destination)
        ))
    })?;
    check_namespace(&src.namespace).map_err(|e| {
        internal(format!(
            "Invalid source namespace {}: {e}",
            go_quote(&src.namespace)
        ))
    })?;
    check_namespace(&dst.namespace).map_err(|e| {
        internal(format!(
            "Invalid destination namespace {}: {e}",
            go_quote(&dst.namespace)
        ))
    })?;
    if source_type != "consul" {
        return Err(internal(format!(
            "unsupported SourceType: {}",
            go_quote(source_type)
        )));
    }
    let found = matching(entries, MatchBy::Source, &src.name)
        .into_iter()
        .find(|i| i.matches_destination(&dst.name));
    Ok(match found {
        Some(i) => !i.is_l7() && i.action == "allow",
        None => default.decide().0,
    })
}
