//! Pure builders: the store's state -> every xDS resource of one proxy (listeners, clusters,
//! endpoints, routes, secrets), shaped and named as Consul's golden files.
//!
//! SKELETON: owned by the resources work; `for_proxy` is the seam the transport calls.

use time::OffsetDateTime;

use super::types::{Resources, XdsConfig};
use crate::store::Store;

/// What one proxy is sent now, and when to look again even if nothing is written (the leaf's
/// renewal point, a scheduled rotation).
#[derive(Debug, Clone, PartialEq)]
pub struct ProxyResources {
    /// The resources.
    pub resources: Resources,
    /// Rebuild at this moment even without a store change.
    pub refresh_at: Option<OffsetDateTime>,
}

/// Why a proxy's resources could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The proxy service is registered but is not a connect proxy.
    #[error("service {0:?} is not a connect-proxy")]
    NotAProxy(String),
    /// The agent could not produce the material (no servers, CA error).
    #[error("{0}")]
    Unavailable(String),
}

/// Builds every resource of proxy `proxy_id`; `Ok(None)` when no such service is registered.
#[allow(dead_code)] // SKELETON: called by the transport once it lands
pub(crate) fn for_proxy(
    store: &Store,
    proxy_id: &str,
    cfg: &XdsConfig,
) -> Result<Option<ProxyResources>, BuildError> {
    let _ = (store, proxy_id, cfg);
    Ok(None)
}
