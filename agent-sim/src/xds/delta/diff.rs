//! Consul's `createDeltaResponse` diff for one type: what the client has (ACKed versions and
//! subscriptions) against the versions of the current resource set, minus what it NACKed.

use std::collections::BTreeMap;

use super::{Pending, TypeState};

/// The changes to send, whether any counts for this step (upserts or removals), and whether a
/// NACKed change was held back.
pub(super) struct Diff {
    pub(super) updates: BTreeMap<String, Pending>,
    pub(super) relevant: bool,
    pub(super) suppressed: bool,
}

/// Wildcard: every known name that changed or is gone, and every new name. Explicit: subscribed
/// names whose version changed, and subscribed names the client lacks (never removals, as Consul).
pub(super) fn compute(
    t: &TypeState,
    versions: &BTreeMap<&str, &str>,
    upsert: bool,
    remove: bool,
) -> Diff {
    let mut updates: BTreeMap<String, Pending> = BTreeMap::new();
    let mut relevant = false;
    let mut suppressed = false;
    let mut note = |name: &str, change: Pending, updates: &mut BTreeMap<String, Pending>| {
        if t.rejected.get(name) == Some(&change) {
            suppressed = true;
            return;
        }
        let counts = match change {
            Pending::Remove => remove,
            Pending::Upsert(_) => upsert,
        };
        relevant |= counts;
        updates.insert(name.to_owned(), change);
    };
    if t.wildcard {
        for (name, have) in &t.versions {
            match versions.get(name.as_str()) {
                None => note(name, Pending::Remove, &mut updates),
                Some(v) if v != have => {
                    note(name, Pending::Upsert((*v).to_owned()), &mut updates);
                }
                Some(_) => {}
            }
        }
        for (name, v) in versions {
            if !t.versions.contains_key(*name) {
                note(name, Pending::Upsert((*v).to_owned()), &mut updates);
            }
        }
    } else {
        for (name, have) in &t.versions {
            if t.subscriptions.contains(name)
                && let Some(v) = versions.get(name.as_str()).filter(|v| **v != have)
            {
                note(name, Pending::Upsert((*v).to_owned()), &mut updates);
            }
        }
        for name in &t.subscriptions {
            if t.versions.contains_key(name) {
                continue;
            }
            if let Some(v) = versions.get(name.as_str()) {
                note(name, Pending::Upsert((*v).to_owned()), &mut updates);
            }
        }
    }
    Diff {
        updates,
        relevant,
        suppressed,
    }
}
