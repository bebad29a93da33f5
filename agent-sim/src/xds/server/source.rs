//! Where a stream's resources come from: the seam between the transport and the builders. The
//! production source calls [`resources::for_proxy`] on the store and wakes on every store write;
//! tests plug in a source they control.

use std::sync::Arc;

use tokio::sync::watch;

use crate::store::Store;
use crate::xds::resources::{self, BuildError, ProxyResources};
use crate::xds::types::XdsConfig;

/// A provider of one proxy's resources and of the signal that they may have changed.
pub(crate) trait Source: Send + Sync + 'static {
    /// Every resource of `proxy_id` now; `Ok(None)` while no such proxy is registered.
    fn build(&self, proxy_id: &str) -> Result<Option<ProxyResources>, BuildError>;
    /// Changes whenever a rebuild may give a different answer.
    fn changes(&self) -> watch::Receiver<u64>;
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
        self.store.subscribe()
    }
}
