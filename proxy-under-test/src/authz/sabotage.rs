//! Broken authorization for the harness's self-test (feature `sabotage`): the wrong evaluation
//! order (`first-match`, `last-write-wins`) and decisions that ignore part of Consul's rules
//! (`ignore-deny`, `ignore-permissions`, `hardcoded-allow`). [`IntentionSet`]'s hooks call these
//! first; `None` means "decide normally".

use super::{Decision, IntentionSet, Rule};
use crate::sabotage::{Sabotage, Sabotages};
use crate::spiffe::ServiceId;

fn allow(reason: String) -> Option<Decision> {
    Some(Decision {
        allowed: true,
        reason,
    })
}

impl IntentionSet {
    /// This set, evaluated with the broken behaviours in `set`.
    pub fn with_sabotage(mut self, set: Sabotages) -> Self {
        self.sabotage = set;
        self
    }

    fn sabotaged(&self, s: Sabotage) -> bool {
        self.sabotage.contains(s)
    }

    /// The rule that governs instead of the highest-precedence match: the lowest-precedence match
    /// (`first-match` over the reverse-sorted list) or the match with the highest `ModifyIndex`
    /// (`last-write-wins`; on a tie, the lowest precedence among them, since intentions of one
    /// destination share their config entry's index).
    pub(super) fn sabotaged_governing(&self, source: &ServiceId) -> Option<Option<&Rule>> {
        let mut matching = self.rules.iter().filter(|r| self.rule_matches(r, source));
        if self.sabotaged(Sabotage::FirstMatch) {
            Some(matching.next_back())
        } else if self.sabotaged(Sabotage::LastWriteWins) {
            Some(matching.max_by_key(|r| r.intention.modify_index))
        } else {
            None
        }
    }

    /// `ignore-grpc-paths` is on and `request` is a gRPC call.
    pub(super) fn ignores_grpc_paths(&self, request: &super::RequestInfo<'_>) -> bool {
        self.sabotaged(Sabotage::IgnoreGrpcPaths)
            && crate::dataplane::is_grpc_request(request.headers)
    }

    /// A broken decision for `source`, or `None` to decide normally.
    pub(super) fn sabotaged_decision(&self, source: &ServiceId) -> Option<Decision> {
        match self.governing(source) {
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
