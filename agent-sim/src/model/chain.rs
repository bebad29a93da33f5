//! The discovery chain: compiles the `service-*` / `proxy-defaults` config entries for a service
//! into the body of `GET|POST /v1/discovery-chain/:service` exactly as Consul CE's compiler does,
//! and decodes the POST body's overrides.
//!
//! Input entries are JSON values in Consul's canonical read shape (what `GET /v1/config/:kind/:name`
//! returns), so this module does not depend on the typed config-entry model. The output is a typed
//! [`ChainResponse`] rather than a `serde_json::Value`: this workspace's `serde_json` has no
//! `preserve_order`, so a `Value` would sort Consul's struct keys alphabetically. Serialize the
//! response (or call [`ChainResponse::to_json`]) to get Consul's key order.

mod compiler;
mod definition;
mod entries;
mod gofmt;
mod hash;
mod model;
mod overrides;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::go::duration::GoDuration;

pub use definition::{
    CookieConfig, EnvoyExtension, FailoverPolicy, HashPolicy, HeaderMatch, HeaderModifiers,
    HttpMatch, LeastRequestConfig, LoadBalancer, QueryParamMatch, RingHashConfig, RouteDestination,
    RouteMatch, ServiceRoute, ServiceSplit, Subset,
};
pub use gofmt::GoValue;
pub use model::{
    ChainResponse, CompiledChain, DiscoveryFailover, DiscoveryResolver, DiscoveryRoute,
    DiscoverySplit, DiscoveryTarget, GraphNode, MeshGatewayConfig, PrioritizeByLocality,
    TransparentProxyConfig,
};
pub use overrides::{ChainOverrides, decode_overrides};

/// The config entries a chain may use, as JSON in Consul's read shape, keyed by service name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChainEntries {
    pub service_defaults: BTreeMap<String, Value>,
    /// The `global` proxy-defaults entry.
    pub proxy_defaults: Option<Value>,
    pub resolvers: BTreeMap<String, Value>,
    pub splitters: BTreeMap<String, Value>,
    pub routers: BTreeMap<String, Value>,
}

/// What to compile, and for which context.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChainRequest {
    pub service: String,
    /// The datacenter compiled for (`?compile-dc`, else the agent's datacenter).
    pub datacenter: String,
    /// `<cluster-id>.consul`.
    pub trust_domain: String,
    pub override_protocol: Option<String>,
    pub override_connect_timeout: Option<GoDuration>,
    /// `""`, `none`, `local` or `remote`; empty means no override.
    pub override_mesh_gateway_mode: Option<String>,
    /// The service's virtual IPs `(auto, manual)`; `None` writes both as `null`.
    pub virtual_ips: Option<(Vec<String>, Vec<String>)>,
}

impl ChainRequest {
    /// Applies decoded POST overrides to this request.
    pub fn with_overrides(mut self, overrides: ChainOverrides) -> Self {
        self.override_protocol = overrides.protocol;
        self.override_connect_timeout = overrides.connect_timeout;
        self.override_mesh_gateway_mode = overrides.mesh_gateway_mode;
        self
    }
}

/// Why a chain could not be produced; the text is Consul's response body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChainError {
    /// 400: a bad request body or name.
    #[error("{0}")]
    BadRequest(String),
    /// 500: the entries do not compile (e.g. `failed to compile discovery chain: discovery chain
    /// "web" uses inconsistent protocols; ...`). A client agent prefixes
    /// `rpc error making call: `; that is the caller's business.
    #[error("{0}")]
    Internal(String),
}

impl ChainError {
    /// The HTTP status Consul answers with.
    pub fn status(&self) -> u16 {
        match self {
            Self::BadRequest(_) => 400,
            Self::Internal(_) => 500,
        }
    }
}

/// Compiles the discovery chain for `req.service` from `entries`.
pub fn compile(entries: &ChainEntries, req: &ChainRequest) -> Result<ChainResponse, ChainError> {
    if req.service.is_empty() {
        return Err(ChainError::BadRequest("Missing chain name".to_owned()));
    }
    let entries = entries::EntrySet::parse(entries);
    let mut chain = compiler::Compiler::new(&entries, req).compile()?;
    if let Some((auto, manual)) = &req.virtual_ips {
        chain.auto_virtual_ips = Some(auto.clone());
        chain.manual_virtual_ips = Some(manual.clone());
    }
    Ok(ChainResponse { chain })
}
