//! Where a stream's resources come from: the seam between the transport and the builders. The
//! production source calls [`resources::for_proxy`] on the store and wakes on every store write,
//! and says what a proxy's resources depend on ([`Inputs`]) so a wake-up that changed none of it
//! costs no rebuild; tests plug in a source they control.

use std::sync::Arc;

use tokio::sync::watch;

use crate::state::store::Store;
use crate::xds::resources::{self, BuildError, ProxyResources};
use crate::xds::types::XdsConfig;

/// A provider of one proxy's resources and of the signal that they may have changed.
pub(crate) trait Source: Send + Sync + 'static {
    /// Every resource of `proxy_id` now; `Ok(None)` while no such proxy is registered.
    fn build(&self, proxy_id: &str) -> Result<Option<ProxyResources>, BuildError>;
    /// Changes whenever a rebuild may give a different answer.
    fn changes(&self) -> watch::Receiver<u64>;
    /// What `build(proxy_id)` depends on now: equal inputs give an equal build (unless its
    /// `refresh_at` has passed). `None`: unknown, always build.
    fn inputs(&self, _proxy_id: &str) -> Option<Inputs> {
        None
    }
}

/// What one proxy's resources depend on: every store write except leaf-cache updates
/// ([`State::input_gen`](crate::state::store::State)), plus the proxy's own leaf entry (its issue
/// index and pending rotation point). Another service's leaf being issued changes neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Inputs {
    generation: u64,
    leaf: Option<(u64, Option<time::OffsetDateTime>)>,
}

/// The production source: the store, through the resource builders.
#[derive(Debug)]
pub(crate) struct StoreSource {
    pub(crate) store: Arc<Store>,
    pub(crate) cfg: XdsConfig,
}

impl Source for StoreSource {
    fn build(&self, proxy_id: &str) -> Result<Option<ProxyResources>, BuildError> {
        resources::for_proxy(&self.store, proxy_id, &self.cfg)
    }

    fn changes(&self) -> watch::Receiver<u64> {
        // Leaf-cache writes too: a proxy's resources carry its service's leaf.
        self.store.subscribe_any()
    }

    fn inputs(&self, proxy_id: &str) -> Option<Inputs> {
        let node = self.store.cfg.node_name.clone();
        Some(self.store.read(|st| {
            let dest = st
                .services
                .get(&(node, proxy_id.to_owned()))
                .map(|s| s.proxy.destination_service_name.as_str());
            Inputs {
                generation: st.input_gen,
                leaf: dest
                    .and_then(|d| st.leaves.get(d))
                    .map(|e| (e.leaf.modify_index, e.rotate_at)),
            }
        }))
    }
}
