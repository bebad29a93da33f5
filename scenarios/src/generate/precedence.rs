//! An independent model of Consul CE's intention evaluation, written from the precedence table of
//! the wire reference (section 13), for the generator's expected outcomes. It shares no code with
//! any proxy or with agent-sim.
//!
//! - Each end counts 2 when namespace and name are exact, 1 for `ns/*`, 0 for `*/*`. In CE the
//!   namespace is always `default`, so a name is exact (2) or `*` (1).
//! - `max` is 9, 6, 3 for a destination count of 2, 1, 0; precedence = `max - (2 - source count)`:
//!   9 (web -> db), 8 (* -> db), 6 (web -> *), 5 (* -> *).
//! - Among the intentions matching the source and destination, the highest precedence decides; at
//!   equal precedence deny first (cannot happen for one source/destination pair, see the
//!   reference). No match: the default policy (`default_intention_policy`, else the ACL default).

use crate::model::{Outcome, Policy};

/// One L4 intention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    pub(crate) source: String,
    pub(crate) destination: String,
    pub(crate) action: Policy,
}

impl Rule {
    pub(crate) fn new(source: &str, destination: &str, action: Policy) -> Self {
        Self {
            source: source.to_owned(),
            destination: destination.to_owned(),
            action,
        }
    }

    fn matches(&self, source: &str, destination: &str) -> bool {
        (self.source == "*" || self.source == source)
            && (self.destination == "*" || self.destination == destination)
    }
}

/// How specific one end is: 2 = namespace and name exact; 1 = `default/*` (CE's only wildcard).
fn end_count(name: &str) -> u8 {
    if name == "*" { 1 } else { 2 }
}

/// The precedence of an intention, by the reference's formula.
pub(crate) fn precedence(source: &str, destination: &str) -> u8 {
    let max = match end_count(destination) {
        2 => 9,
        1 => 6,
        _ => 3,
    };
    max - (2 - end_count(source))
}

/// The decision for one connection, with the reason in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub(crate) outcome: Outcome,
    pub(crate) reason: String,
}

/// The matching intentions, highest precedence first (deny first at equal precedence).
pub(crate) fn matching<'a>(rules: &'a [Rule], source: &str, destination: &str) -> Vec<&'a Rule> {
    let mut m: Vec<&Rule> = rules
        .iter()
        .filter(|r| r.matches(source, destination))
        .collect();
    m.sort_by_key(|r| {
        (
            std::cmp::Reverse(precedence(&r.source, &r.destination)),
            r.action != Policy::Deny,
        )
    });
    m
}

/// Decides a connection from `source` to `destination`.
pub(crate) fn decide(rules: &[Rule], source: &str, destination: &str, default: Policy) -> Decision {
    match matching(rules, source, destination).first() {
        Some(r) => Decision {
            outcome: outcome(r.action),
            reason: format!(
                "{} -> {} {}, precedence {}",
                r.source,
                r.destination,
                policy_word(r.action),
                precedence(&r.source, &r.destination)
            ),
        },
        None => Decision {
            outcome: outcome(default),
            reason: format!("no intention matches: default {}", policy_word(default)),
        },
    }
}

pub(crate) fn outcome(p: Policy) -> Outcome {
    match p {
        Policy::Allow => Outcome::Allowed,
        Policy::Deny => Outcome::Refused,
    }
}

pub(crate) fn policy_word(p: Policy) -> &'static str {
    match p {
        Policy::Allow => "allow",
        Policy::Deny => "deny",
    }
}
