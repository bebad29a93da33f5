//! A repeated scenario's verdict from its attempts: attempts that agree give their common
//! verdict; attempts that disagree (a check's verdict, a check reached by some attempts only, or
//! the attempt's verdict, errors included) give `flaky`, except that a scenario that failed (or
//! errored) in every attempt keeps `fail` (`error`). Independent of the attempts' order.

use std::collections::BTreeMap;

use super::single_verdict;
use crate::model::{Attempt, Requirement, Verdict};

/// The verdict of a scenario from its attempts (at least one).
pub(super) fn verdict(attempts: &[Attempt]) -> Verdict {
    let verdicts: Vec<Verdict> = attempts.iter().map(attempt_verdict).collect();
    let Some(&first) = verdicts.first() else {
        return Verdict::Error;
    };
    let same = verdicts.iter().all(|v| *v == first);
    if same && matches!(first, Verdict::Fail | Verdict::Error) {
        return first;
    }
    if same && disagreeing_checks(attempts).is_empty() {
        first
    } else {
        Verdict::Flaky
    }
}

/// An attempt's verdict, re-graded from its checks and error (its stored verdict only serves
/// as the skipped/not-supported mark when no check ran, as for a single run).
fn attempt_verdict(a: &Attempt) -> Verdict {
    let checks: Vec<(Verdict, Requirement)> = a
        .checks
        .iter()
        .map(|c| (c.verdict, c.requirement))
        .collect();
    single_verdict(a.error_kind.is_some(), &checks, a.verdict)
}

/// Names of the checks on which the attempts disagree, sorted: a check whose verdicts differ,
/// or that some attempt did not record (as often). A name recorded twice in one attempt is
/// compared as the sorted list of its verdicts.
pub(super) fn disagreeing_checks(attempts: &[Attempt]) -> Vec<String> {
    let per_attempt: Vec<BTreeMap<&str, Vec<&'static str>>> = attempts
        .iter()
        .map(|a| {
            let mut m: BTreeMap<&str, Vec<&'static str>> = BTreeMap::new();
            for c in &a.checks {
                m.entry(c.name.as_str())
                    .or_default()
                    .push(c.verdict.as_str());
            }
            for v in m.values_mut() {
                v.sort_unstable();
            }
            m
        })
        .collect();
    let mut names: Vec<&str> = per_attempt.iter().flat_map(|m| m.keys().copied()).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter(|name| {
            let mut seen = per_attempt.iter().map(|m| m.get(name));
            let first = seen.next().flatten();
            seen.any(|v| v != first)
        })
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
pub(super) mod tests;
