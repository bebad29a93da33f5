//! Service registrations, the catalog and the health wire model of the simulated agent: the
//! `NodeService`/`HealthCheck`/`Node` model, strict Go-compatible decoding of agent and catalog
//! registrations, validation and `Connect.SidecarService` expansion with Consul's texts, the
//! central-config merge for proxies, and the JSON shapes the agent, catalog and health
//! endpoints return (Go key order, null-vs-`[]` quirks, `ContentHash`).
//!
//! Everything here is pure and synchronous; indexes, the existing state and ACLs come from the
//! caller.

mod agent_json;
mod catalog;
mod catalog_json;
mod central;
mod check;
mod definition;
mod model;
mod register;
mod validate;
mod wire;

pub use agent_json::{agent_service_json, agent_services_json, content_hash};
pub use catalog::{
    CatalogDeregistration, CatalogRegistration, decode_catalog_deregister, decode_catalog_register,
};
pub use catalog_json::{
    catalog_service_json, health_check_json, health_entry_json, node_json, node_service_json,
};
pub use central::{CentralConfig, merge_central_config};
pub use check::{CheckDefinition, aggregated_status, is_passing, valid_status};
pub use definition::{ConnectDefinition, ServiceDefinition, decode_register};
pub use model::{
    AccessLogsConfig, ConnectProxyConfig, ExposeConfig, ExposePath, HEALTH_CRITICAL,
    HEALTH_MAINTENANCE, HEALTH_PASSING, HEALTH_WARNING, HealthCheck, HealthCheckDefinition,
    Locality, MeshGatewayConfig, Node, NodeService, ServiceAddress, ServiceConnect, ServiceKind,
    TransparentProxyConfig, Upstream, Weights,
};
pub use register::{
    RegisterContext, Registration, RegistrationTokens, SIDECAR_SUFFIX, ServiceWrite,
    expand_registration,
};
pub(crate) use wire::go_value;

/// A registration the agent refuses, with Consul's status and exact text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// 400, e.g. `Request decode failed: json: unknown field "Foo"`, `Missing service name`,
    /// `Validation failed: 1 error occurred:\n\t* ...\n\n`.
    #[error("{0}")]
    BadRequest(String),
    /// 500 raised by the agent itself (e.g. no sidecar port left, script checks disabled).
    #[error("{0}")]
    Internal(String),
    /// 500 raised by the servers' catalog RPC (`Must provide node`, ...). A client agent
    /// prefixes such errors with `rpc error making call: `; a server agent does not.
    #[error("{0}")]
    Rpc(String),
}

impl RegisterError {
    /// The HTTP status Consul answers with.
    pub fn status(&self) -> u16 {
        match self {
            Self::BadRequest(_) => 400,
            Self::Internal(_) | Self::Rpc(_) => 500,
        }
    }
}
