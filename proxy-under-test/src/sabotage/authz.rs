//! Broken authorization for the harness's self-test: the wrong evaluation order (`first-match`,
//! `last-write-wins`), decisions that ignore part of Consul's rules (`ignore-deny`,
//! `ignore-permissions`, `hardcoded-allow`), gRPC paths ignored by L7 permissions
//! (`ignore-grpc-paths`) and header rules matched case-sensitively (`case-sensitive-headers`). Every [`IntentionSet`] carries [`AuthzHooks`]; its decisions ask them
//! first, `None` meaning "decide normally".

use super::{Sabotage, Sabotages};
use crate::authz::{CompiledPermission, Decision, IntentionSet, RequestInfo, Rule};
use crate::dataplane::l7::reply::is_grpc;
use crate::spiffe::ServiceId;

/// The broken behaviours an intention set applies.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AuthzHooks(Sabotages);

fn allow(reason: String) -> Option<Decision> {
    Some(Decision {
        allowed: true,
        reason,
    })
}

impl IntentionSet {
    /// This set, evaluated with the broken behaviours in `set`.
    pub fn with_sabotage(self, set: Sabotages) -> Self {
        self.with_hooks(AuthzHooks(set))
    }
}

impl AuthzHooks {
    /// Hooks applying `set`.
    pub(crate) fn new(set: Sabotages) -> Self {
        Self(set)
    }

    fn sabotaged(self, s: Sabotage) -> bool {
        self.0.contains(s)
    }

    /// The rule that governs instead of the highest-precedence match: the lowest-precedence match
    /// (`first-match` over the reverse-sorted list) or the match with the highest `ModifyIndex`
    /// (`last-write-wins`; on a tie, the lowest precedence among them, since intentions of one
    /// destination share their config entry's index).
    /// `matching` are the rules matching the source, highest precedence first.
    pub(crate) fn governing<'r>(
        &self,
        mut matching: impl DoubleEndedIterator<Item = &'r Rule>,
    ) -> Option<Option<&'r Rule>> {
        if self.sabotaged(Sabotage::FirstMatch) {
            Some(matching.next_back())
        } else if self.sabotaged(Sabotage::LastWriteWins) {
            Some(matching.max_by_key(|r| r.intention.modify_index))
        } else {
            None
        }
    }

    /// `ignore-grpc-paths`: for a gRPC call, whether `permission` matches `request` whatever its
    /// path condition; `case-sensitive-headers`: header names compared byte for byte and
    /// `IgnoreCase` ignored; `None` = match normally.
    pub(crate) fn permission_matches(
        &self,
        permission: &CompiledPermission,
        request: &RequestInfo<'_>,
    ) -> Option<bool> {
        if self.sabotaged(Sabotage::CaseSensitiveHeaders) {
            return Some(permission.matches_case_sensitively(request));
        }
        (self.sabotaged(Sabotage::IgnoreGrpcPaths) && is_grpc(request.headers))
            .then(|| permission.matches_ignoring_path(request))
    }

    /// A broken decision for `source`, or `None` to decide normally.
    pub(crate) fn decision(&self, set: &IntentionSet, source: &ServiceId) -> Option<Decision> {
        match set.governing(source) {
            Some(r) if r.is_l7() && self.sabotaged(Sabotage::IgnorePermissions) => allow(format!(
                "Matched L7 intention: {} (Precedence: {}), permissions ignored (sabotage ignore-permissions)",
                r.label(),
                r.precedence
            )),
            Some(r) if !r.is_l7() && !r.allows() && self.sabotaged(Sabotage::IgnoreDeny) => {
                allow(format!(
                    "Matched L4 intention: {} (Precedence: {}, Action: {}), treated as ALLOW (sabotage ignore-deny)",
                    r.label(),
                    r.precedence,
                    r.intention.action.to_ascii_uppercase()
                ))
            }
            None if self.sabotaged(Sabotage::HardcodedAllow) => {
                allow("No matching intention: allow (sabotage hardcoded-allow)".to_owned())
            }
            _ => None,
        }
    }
}
