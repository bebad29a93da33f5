//! `consul connect envoy -bootstrap`'s JSON: node identity, admin, the static `local_agent`
//! cluster (HTTP/2 to the agent's gRPC port) and delta ADS with the ACL token as initial metadata.
//! Shared by `agent-sim connect envoy -bootstrap` and the conformance harness.
//!
//! SKELETON: the signature is fixed; the body is owned by the bootstrap work.

use std::net::SocketAddr;

use serde_json::Value;

/// What the bootstrap is rendered from (what `consul connect envoy` learns from its flags and
/// from `GET /v1/agent/service/<proxy-id>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapParams {
    /// The proxy's service ID (`node.id`).
    pub proxy_id: String,
    /// `Proxy.DestinationServiceName` (`node.cluster`).
    pub cluster: String,
    /// Namespace (`default` in CE).
    pub namespace: String,
    /// Admin partition (`default` in CE).
    pub partition: String,
    /// The agent's gRPC (xDS) address.
    pub grpc_addr: SocketAddr,
    /// The ACL token sent as `x-consul-token` (none: no initial metadata).
    pub token: Option<String>,
    /// Envoy's admin listener (`-admin-bind`, default 127.0.0.1:19000).
    pub admin_bind: SocketAddr,
}

/// Renders the bootstrap JSON.
pub fn render(p: &BootstrapParams) -> Value {
    let _ = p;
    Value::Null
}
