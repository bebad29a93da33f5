//! Broken transparent mode: `ignore-original-dst` (everything to the first upstream),
//! `forward-unknown` (unknown destinations to the first upstream instead of a refusal) and
//! `ignore-implicit-upstreams` (no upstreams from intentions).

use super::{Hooks, Sabotage};
use crate::dataplane::transparent::Route;
use crate::snapshot::Snapshot;

impl Hooks {
    /// `ignore-original-dst`: the first upstream, whatever the destination; `None` = the normal
    /// mapping.
    pub(crate) fn route<'a>(&self, snap: &'a Snapshot) -> Option<Route<'a>> {
        if !self.has(Sabotage::IgnoreOriginalDst) {
            return None;
        }
        first_upstream(snap)
    }

    /// `ignore-implicit-upstreams`: none of the upstreams derived from intentions; otherwise
    /// `names`.
    pub(crate) fn implicit_upstreams(&self, names: Vec<String>) -> Vec<String> {
        if self.has(Sabotage::IgnoreImplicitUpstreams) {
            return Vec::new();
        }
        names
    }

    /// `forward-unknown`: the first upstream instead of refusing an unknown destination; `None`
    /// = refuse.
    pub(crate) fn unknown_destination<'a>(&self, snap: &'a Snapshot) -> Option<Route<'a>> {
        if !self.has(Sabotage::ForwardUnknown) {
            return None;
        }
        first_upstream(snap)
    }
}

fn first_upstream(snap: &Snapshot) -> Option<Route<'_>> {
    snap.upstreams.first().map(|upstream| Route::Upstream {
        upstream,
        first: None,
    })
}
