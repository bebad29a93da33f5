//! Broken handling of open inbound connections: no supervision at all (`never-recheck-open`),
//! closed on any change of intentions, leaf or roots (`drop-on-change`), and one L7 decision per
//! connection instead of per request (`authorize-per-connection`, its state here).

use std::future::Future;
use std::sync::{Arc, OnceLock};

use tokio::sync::watch;

use super::Sabotage;
use crate::authz::Decision;
use crate::dataplane::{SnapshotRx, flag_set};
use crate::snapshot::Snapshot;

/// The sabotage state of one open inbound connection's supervision: the newest snapshot when it
/// started.
#[derive(Debug, Clone, Default)]
pub(crate) struct OpenConnection {
    start: Option<Arc<Snapshot>>,
}

impl OpenConnection {
    /// The state of a connection whose supervision starts now.
    pub(crate) fn start(snapshots: &SnapshotRx) -> Self {
        Self {
            start: snapshots.borrow().clone(),
        }
    }

    /// `never-recheck-open` (read from the newest snapshot when supervision started): the
    /// connection's work runs without re-authorization or lifetime, until `kill`.
    pub(crate) fn unsupervised(&self, kill: &watch::Receiver<bool>) -> Option<Unsupervised> {
        let never = self
            .start
            .as_ref()
            .is_some_and(|s| s.hooks.has(Sabotage::NeverRecheckOpen));
        never.then(|| Unsupervised { kill: kill.clone() })
    }

    /// `drop-on-change`: why the connection closes now that the newest snapshot is the one in
    /// `snapshots` (see [`dropped_on_change`]).
    pub(crate) fn revoked(&self, snapshots: &SnapshotRx) -> Option<String> {
        dropped_on_change(self.start.as_ref(), snapshots.borrow().as_ref())
    }
}

/// A connection's work run by `never-recheck-open`.
#[derive(Debug)]
pub(crate) struct Unsupervised {
    kill: watch::Receiver<bool>,
}

impl Unsupervised {
    /// Runs `fut` with no re-authorization and no lifetime; only a forced shutdown ends it early.
    /// Returns whether the work finished by itself.
    pub(crate) async fn run<F: Future>(self, fut: F) -> bool {
        let mut kill = self.kill;
        tokio::select! {
            _ = fut => true,
            _ = flag_set(&mut kill) => false,
        }
    }
}

/// `authorize-per-connection`: the decision of a connection's first request (HTTP/1.1) or stream
/// (HTTP/2), kept for the rest of it.
#[derive(Debug, Default)]
pub(crate) struct PerConnection {
    pub(super) first_decision: OnceLock<Decision>,
}

/// `drop-on-change`: why an open connection that started under `start` is closed now that `now`
/// is the newest snapshot (its intentions, leaf or roots are not the ones loaded then); `None` =
/// keep it (also when the sabotage is off).
fn dropped_on_change(start: Option<&Arc<Snapshot>>, now: Option<&Arc<Snapshot>>) -> Option<String> {
    let (start, now) = (start?, now?);
    if !now.hooks.has(Sabotage::DropOnChange) {
        return None;
    }
    let changed: Vec<&str> = [
        (
            !Arc::ptr_eq(&start.intentions, &now.intentions),
            "intentions",
        ),
        (
            !Arc::ptr_eq(&start.leaf.certified, &now.leaf.certified),
            "leaf",
        ),
        (!Arc::ptr_eq(&start.roots.store, &now.roots.store), "roots"),
    ]
    .into_iter()
    .filter_map(|(changed, what)| changed.then_some(what))
    .collect();
    (!changed.is_empty()).then(|| {
        format!(
            "{} changed: connection dropped (sabotage drop-on-change)",
            changed.join(", ")
        )
    })
}
