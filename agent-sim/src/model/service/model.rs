//! The service, check and node model the agent and catalog hold (Consul's `structs.NodeService`,
//! `structs.HealthCheck`, `structs.Node` and the proxy configuration inside a service).
//!
//! The proxy-related types also deserialize straight from request bodies (after key
//! normalization, see `definition`), with Go's zero values for absent keys and unknown keys
//! rejected, as Consul's strict decoders do.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::go::duration::GoDuration;

/// Check status `passing`.
pub const HEALTH_PASSING: &str = "passing";
/// Check status `warning`.
pub const HEALTH_WARNING: &str = "warning";
/// Check status `critical`.
pub const HEALTH_CRITICAL: &str = "critical";
/// Check status `maintenance`.
pub const HEALTH_MAINTENANCE: &str = "maintenance";

/// The kind of a service (`Kind`); typical services have none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(from = "String")]
pub enum ServiceKind {
    /// A classic service (`Kind` absent or empty).
    #[default]
    Typical,
    /// `connect-proxy`.
    ConnectProxy,
    /// `mesh-gateway`.
    MeshGateway,
    /// `terminating-gateway`.
    TerminatingGateway,
    /// `ingress-gateway`.
    IngressGateway,
    /// `api-gateway`.
    ApiGateway,
    /// Any other string; Consul stores it as given.
    Other(String),
}

impl ServiceKind {
    /// The wire spelling (`""` for a typical service).
    pub fn as_str(&self) -> &str {
        match self {
            Self::Typical => "",
            Self::ConnectProxy => "connect-proxy",
            Self::MeshGateway => "mesh-gateway",
            Self::TerminatingGateway => "terminating-gateway",
            Self::IngressGateway => "ingress-gateway",
            Self::ApiGateway => "api-gateway",
            Self::Other(s) => s,
        }
    }

    /// True for the gateway kinds (mesh, terminating, ingress, api).
    pub fn is_gateway(&self) -> bool {
        matches!(
            self,
            Self::MeshGateway | Self::TerminatingGateway | Self::IngressGateway | Self::ApiGateway
        )
    }
}

impl From<String> for ServiceKind {
    fn from(s: String) -> Self {
        match s.as_str() {
            "" => Self::Typical,
            "connect-proxy" => Self::ConnectProxy,
            "mesh-gateway" => Self::MeshGateway,
            "terminating-gateway" => Self::TerminatingGateway,
            "ingress-gateway" => Self::IngressGateway,
            "api-gateway" => Self::ApiGateway,
            _ => Self::Other(s),
        }
    }
}

impl fmt::Display for ServiceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tagged address of a service (`{"Address":..,"Port":..}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "PascalCase")]
pub struct ServiceAddress {
    pub address: String,
    pub port: u16,
}

/// DNS weights of a service; Consul's default is 1/1 (a decoded body zero-fills missing keys,
/// as Go does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct Weights {
    #[serde(default)]
    pub passing: i64,
    #[serde(default)]
    pub warning: i64,
}

impl Default for Weights {
    fn default() -> Self {
        Self {
            passing: 1,
            warning: 1,
        }
    }
}

/// Where a service or node runs (`{"Region":..,"Zone":..}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "PascalCase")]
pub struct Locality {
    pub region: String,
    pub zone: String,
}

/// `MeshGateway{Mode}` on a proxy or an upstream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "PascalCase")]
pub struct MeshGatewayConfig {
    pub mode: String,
}

/// `TransparentProxy{OutboundListenerPort,DialedDirectly}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "PascalCase")]
pub struct TransparentProxyConfig {
    pub outbound_listener_port: u16,
    pub dialed_directly: bool,
}

impl TransparentProxyConfig {
    /// True when nothing is set (Consul then omits it from responses).
    pub fn is_zero(&self) -> bool {
        self.outbound_listener_port == 0 && !self.dialed_directly
    }
}

/// `AccessLogs{...}` (Envoy access log settings).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "PascalCase")]
pub struct AccessLogsConfig {
    pub enabled: bool,
    pub disable_listener_logs: bool,
    #[serde(rename = "Type")]
    pub type_: String,
    pub path: String,
    #[serde(rename = "JSONFormat")]
    pub json_format: String,
    pub text_format: String,
}

impl AccessLogsConfig {
    /// True when nothing is set (Consul then omits it from responses).
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

/// `Expose{Checks,Paths}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "PascalCase")]
pub struct ExposeConfig {
    pub checks: bool,
    pub paths: Vec<ExposePath>,
}

/// One exposed HTTP path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "PascalCase")]
pub struct ExposePath {
    pub listener_port: u16,
    pub path: String,
    pub local_path_port: u16,
    pub protocol: String,
    pub parsed_from_check: bool,
}

/// One upstream of a proxy.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "PascalCase")]
pub struct Upstream {
    pub destination_type: String,
    pub destination_namespace: String,
    pub destination_partition: String,
    pub destination_peer: String,
    pub destination_name: String,
    pub datacenter: String,
    pub local_bind_address: String,
    pub local_bind_port: u16,
    pub local_bind_socket_path: String,
    pub local_bind_socket_mode: String,
    /// Opaque per-upstream configuration.
    pub config: Map<String, Value>,
    pub mesh_gateway: MeshGatewayConfig,
    pub centrally_configured: bool,
}

/// `Proxy` of a `connect-proxy` (or gateway) service: Consul's `ConnectProxyConfig`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "PascalCase")]
pub struct ConnectProxyConfig {
    /// Envoy extensions, kept as given (opaque).
    pub envoy_extensions: Vec<Value>,
    pub destination_service_name: String,
    #[serde(rename = "DestinationServiceID")]
    pub destination_service_id: String,
    pub local_service_address: String,
    pub local_service_port: u16,
    pub local_service_socket_path: String,
    /// `""`, `direct` or `transparent`.
    pub mode: String,
    /// Opaque proxy configuration (`Proxy.Config`).
    pub config: Map<String, Value>,
    pub upstreams: Vec<Upstream>,
    pub mesh_gateway: MeshGatewayConfig,
    pub expose: ExposeConfig,
    pub transparent_proxy: TransparentProxyConfig,
    pub access_logs: AccessLogsConfig,
    /// `""`, `strict` or `permissive`.
    #[serde(rename = "MutualTLSMode")]
    pub mutual_tls_mode: String,
}

/// `Connect` of a stored service: only `Native` survives registration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServiceConnect {
    pub native: bool,
}

/// A service instance as the agent and the catalog hold it (Consul's `NodeService`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeService {
    pub kind: ServiceKind,
    pub id: String,
    /// The service name (`Service` on the wire).
    pub service: String,
    pub tags: Vec<String>,
    pub address: String,
    pub tagged_addresses: BTreeMap<String, ServiceAddress>,
    /// Service metadata. Empty renders as `null` in catalog/health shapes (Go's nil map) and as
    /// `{}` in agent shapes.
    pub meta: BTreeMap<String, String>,
    pub port: u16,
    pub socket_path: String,
    pub weights: Weights,
    pub enable_tag_override: bool,
    pub locality: Option<Locality>,
    pub proxy: ConnectProxyConfig,
    pub connect: ServiceConnect,
    /// Registered through a parent's `Connect.SidecarService` (removed with the parent). Never
    /// rendered.
    pub locally_registered_as_sidecar: bool,
    pub create_index: u64,
    pub modify_index: u64,
}

impl NodeService {
    /// A `connect-proxy` with a destination (Consul's `IsSidecarProxy`).
    pub fn is_sidecar_proxy(&self) -> bool {
        self.kind == ServiceKind::ConnectProxy
            && (!self.proxy.destination_service_id.is_empty()
                || !self.proxy.destination_service_name.is_empty())
    }

    /// Equal apart from the raft indexes (Consul's `IsSame`).
    pub fn is_same(&self, other: &Self) -> bool {
        let strip = |s: &Self| Self {
            create_index: 0,
            modify_index: 0,
            ..s.clone()
        };
        strip(self) == strip(other)
    }
}

/// The `Definition` object of a health check. Agent-registered checks leave it empty (`{}`);
/// catalog registrations may fill it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealthCheckDefinition {
    pub http: String,
    pub tls_server_name: String,
    pub tls_skip_verify: bool,
    pub header: BTreeMap<String, Vec<String>>,
    pub method: String,
    pub body: String,
    pub disable_redirects: bool,
    pub tcp: String,
    pub udp: String,
    pub h2ping: String,
    pub os_service: String,
    pub h2ping_use_tls: bool,
    pub interval: GoDuration,
    pub output_max_size: u64,
    pub timeout: GoDuration,
    pub deregister_critical_service_after: GoDuration,
    pub script_args: Vec<String>,
    pub docker_container_id: String,
    pub shell: String,
    pub grpc: String,
    pub grpc_use_tls: bool,
    pub alias_node: String,
    pub alias_service: String,
    pub ttl: GoDuration,
}

/// A health check on a node or service (Consul's `HealthCheck`), plus what the agent needs to
/// run it (`ttl`, `tcp`, `http`, `grpc`, `alias_*`; not rendered).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealthCheck {
    pub node: String,
    pub check_id: String,
    pub name: String,
    /// `passing`, `warning`, `critical` or `maintenance`.
    pub status: String,
    pub notes: String,
    pub output: String,
    pub service_id: String,
    pub service_name: String,
    pub service_tags: Vec<String>,
    /// `ttl`, `tcp`, `http`, `alias`, ... (empty for node checks like `serfHealth`).
    pub type_: String,
    /// The interval as Go prints it (`10s`), or empty.
    pub interval: String,
    /// The timeout as Go prints it, or empty.
    pub timeout: String,
    pub exposed_port: u16,
    pub definition: HealthCheckDefinition,
    /// TTL of a `ttl` check.
    pub ttl: Option<GoDuration>,
    /// Target of a `tcp` check (`host:port`).
    pub tcp: String,
    /// URL of an `http` check.
    pub http: String,
    /// Target of a `grpc` check.
    pub grpc: String,
    /// Service ID an `alias` check mirrors.
    pub alias_service: String,
    /// Node an `alias` check mirrors.
    pub alias_node: String,
    pub create_index: u64,
    pub modify_index: u64,
}

impl HealthCheck {
    /// Equal apart from the raft indexes.
    pub fn is_same(&self, other: &Self) -> bool {
        let strip = |c: &Self| Self {
            create_index: 0,
            modify_index: 0,
            ..c.clone()
        };
        strip(self) == strip(other)
    }
}

/// A catalog node (Consul's `Node`). Empty `tagged_addresses`/`meta` render as `null` (Go's
/// nil maps); the agent's own node always has both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    /// Node ID (a UUID), may be empty.
    pub id: String,
    /// Node name (`Node` on the wire).
    pub name: String,
    pub address: String,
    pub datacenter: String,
    pub tagged_addresses: BTreeMap<String, String>,
    pub meta: BTreeMap<String, String>,
    pub create_index: u64,
    pub modify_index: u64,
}
