//! Broken transparent mode: `ignore-original-dst` (everything to the first upstream),
//! `forward-unknown` (unknown destinations to the first upstream instead of a refusal),
//! `ignore-implicit-upstreams` (no upstreams from intentions), `ignore-mesh-destinations-only`
//! (passthrough whatever the mesh entry says) and `always-permissive` (plaintext to the app's
//! port whatever `MutualTLSMode` says).

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

    /// `ignore-mesh-destinations-only`: never (destinations outside the mesh pass through).
    pub(crate) fn mesh_destinations_only(&self, configured: bool) -> bool {
        configured && !self.has(Sabotage::IgnoreMeshDestinationsOnly)
    }

    /// `always-permissive`: always.
    pub(crate) fn permissive(&self, configured: bool) -> bool {
        configured || self.has(Sabotage::AlwaysPermissive)
    }
}

fn first_upstream(snap: &Snapshot) -> Option<Route<'_>> {
    snap.upstreams.first().map(|upstream| Route::Upstream {
        upstream,
        first: None,
    })
}
