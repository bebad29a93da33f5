//! Minimal client types for the agent's JSON (only what the proxy reads; unknown keys ignored,
//! `null` read as empty). Deliberately independent of agent-sim's types.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

pub(crate) fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// `GET /v1/agent/service/:id` (AgentService).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct AgentService {
    /// `connect-proxy` for sidecars; empty for typical services.
    #[serde(default)]
    pub kind: String,
    /// Service ID.
    #[serde(rename = "ID", default)]
    pub id: String,
    /// Service name.
    #[serde(default)]
    pub service: String,
    /// Port (the public listener for a proxy).
    #[serde(default)]
    pub port: u16,
    /// Address (empty = all interfaces for the listener).
    #[serde(default)]
    pub address: String,
    /// Proxy configuration (connect-proxy only).
    #[serde(default)]
    pub proxy: Option<AgentProxy>,
    /// The agent's datacenter.
    #[serde(default)]
    pub datacenter: String,
}

/// `Proxy` of an AgentService.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct AgentProxy {
    /// The proxied service's name.
    #[serde(default)]
    pub destination_service_name: String,
    /// The proxied service's ID.
    #[serde(rename = "DestinationServiceID", default)]
    pub destination_service_id: String,
    /// Local application address (default 127.0.0.1).
    #[serde(default)]
    pub local_service_address: String,
    /// Local application port.
    #[serde(default)]
    pub local_service_port: u16,
    /// Unix socket of the local application (when set, it replaces the address and port).
    #[serde(default, deserialize_with = "null_default")]
    pub local_service_socket_path: String,
    /// Opaque proxy config (knobs, `protocol`).
    #[serde(default, deserialize_with = "null_default")]
    pub config: Map<String, Value>,
    /// Upstreams.
    #[serde(default, deserialize_with = "null_default")]
    pub upstreams: Vec<AgentUpstream>,
    /// `""` / `direct` / `transparent`.
    #[serde(default, deserialize_with = "null_default")]
    pub mode: String,
    /// Transparent-proxy settings (omitted by the agent when zero).
    #[serde(default)]
    pub transparent_proxy: Option<TransparentProxyConfig>,
    /// `""` / `strict` / `permissive`, as the agent merged it from service-defaults and
    /// proxy-defaults (`agent/configentry/resolve.go`).
    #[serde(rename = "MutualTLSMode", default, deserialize_with = "null_default")]
    pub mutual_tls_mode: String,
}

/// `Proxy.TransparentProxy` (of a registration or of a catalog proxy instance).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransparentProxyConfig {
    /// The outbound listener port (0 = unset: 15001).
    #[serde(default, deserialize_with = "null_default")]
    pub outbound_listener_port: u16,
    /// Whether clients may dial this service's instances directly (by IP) over mTLS.
    #[serde(default, deserialize_with = "null_default")]
    pub dialed_directly: bool,
}

/// One `Proxy.Upstreams[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct AgentUpstream {
    /// `service` (default) or `prepared_query`.
    #[serde(default)]
    pub destination_type: String,
    /// Namespace (empty = default).
    #[serde(default)]
    pub destination_namespace: String,
    /// The upstream service.
    #[serde(default)]
    pub destination_name: String,
    /// Datacenter (empty = local).
    #[serde(default)]
    pub datacenter: String,
    /// Local bind address (default 127.0.0.1).
    #[serde(default)]
    pub local_bind_address: String,
    /// Local bind port.
    #[serde(default)]
    pub local_bind_port: u16,
    /// Unix socket to listen on instead of a port (used when `LocalBindPort` is 0).
    #[serde(default, deserialize_with = "null_default")]
    pub local_bind_socket_path: String,
    /// File mode of that socket, a Go integer literal (`"0600"`: octal).
    #[serde(default, deserialize_with = "null_default")]
    pub local_bind_socket_mode: String,
    /// Opaque upstream config (`protocol`).
    #[serde(default, deserialize_with = "null_default")]
    pub config: Map<String, Value>,
}

/// `GET /v1/agent/connect/ca/leaf/:service`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct LeafCert {
    /// Colon-hex serial.
    #[serde(default)]
    pub serial_number: String,
    /// Leaf PEM followed by intermediates.
    #[serde(rename = "CertPEM", default)]
    pub cert_pem: String,
    /// Private key PEM.
    #[serde(rename = "PrivateKeyPEM", default)]
    pub private_key_pem: String,
    /// The SPIFFE URI of the leaf.
    #[serde(rename = "ServiceURI", default)]
    pub service_uri: String,
    /// RFC 3339 expiry.
    #[serde(default)]
    pub valid_before: String,
}

/// `GET /v1/agent/connect/ca/roots`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CaRoots {
    /// ID of the active root.
    #[serde(rename = "ActiveRootID", default)]
    pub active_root_id: String,
    /// `<cluster id>.consul`.
    #[serde(default)]
    pub trust_domain: String,
    /// All roots, active or not.
    #[serde(default, deserialize_with = "null_default")]
    pub roots: Vec<CaRoot>,
}

/// One CA root.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CaRoot {
    /// Fingerprint ID.
    #[serde(rename = "ID", default)]
    pub id: String,
    /// Root certificate PEM.
    #[serde(default)]
    pub root_cert: String,
    /// Intermediates between this root and the leaves it signs (a secondary datacenter, Vault,
    /// or a cross-signed rotation); chain-building material, never trust anchors.
    #[serde(default, deserialize_with = "null_default")]
    pub intermediate_certs: Vec<String>,
    /// Whether it is the active root.
    #[serde(default)]
    pub active: bool,
}

/// `GET /v1/query/:name/execute` answer (the fields this proxy reads).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct QueryExecution {
    /// The service the query looked up (the identity its instances must present).
    #[serde(default)]
    pub service: String,
    /// The instances (with `?connect=true`: connect-capable ones, sidecars included).
    #[serde(default)]
    pub nodes: Vec<HealthEntry>,
}

/// `GET /v1/health/connect/:service` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HealthEntry {
    /// The node.
    #[serde(default)]
    pub node: HealthNode,
    /// The (proxy) service instance.
    #[serde(default)]
    pub service: HealthService,
}

/// Node of a health entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HealthNode {
    /// Node name.
    #[serde(default)]
    pub node: String,
    /// Node address.
    #[serde(default)]
    pub address: String,
    /// Node datacenter.
    #[serde(default)]
    pub datacenter: String,
}

/// Service of a health entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HealthService {
    /// Instance ID.
    #[serde(rename = "ID", default)]
    pub id: String,
    /// Service address (empty = node address).
    #[serde(default)]
    pub address: String,
    /// Port.
    #[serde(default)]
    pub port: u16,
    /// Tagged addresses; `consul-virtual` holds the service's virtual IP.
    #[serde(default, deserialize_with = "null_default")]
    pub tagged_addresses: BTreeMap<String, TaggedAddress>,
    /// The instance's proxy block (connect-proxy instances).
    #[serde(default)]
    pub proxy: Option<HealthProxy>,
}

/// One `TaggedAddresses` value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TaggedAddress {
    /// IP address (or host name).
    #[serde(default, deserialize_with = "null_default")]
    pub address: String,
    /// Port.
    #[serde(default, deserialize_with = "null_default")]
    pub port: u16,
}

/// `Service.Proxy` of a health entry (only what transparent mode reads).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HealthProxy {
    /// The destination sidecar's transparent-proxy settings.
    #[serde(default)]
    pub transparent_proxy: Option<TransparentProxyConfig>,
}

/// `POST /v1/discovery-chain/:name` response.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ChainResponse {
    /// The compiled chain.
    #[serde(default)]
    pub chain: CompiledChain,
}

/// A compiled discovery chain (the parts an L4 proxy follows).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CompiledChain {
    /// The chain's service.
    #[serde(default)]
    pub service_name: String,
    /// Protocol after overrides.
    #[serde(default)]
    pub protocol: String,
    /// The first node.
    #[serde(default)]
    pub start_node: String,
    /// Nodes by key.
    #[serde(default, deserialize_with = "null_default")]
    pub nodes: BTreeMap<String, ChainNode>,
    /// Targets by ID.
    #[serde(default, deserialize_with = "null_default")]
    pub targets: BTreeMap<String, ChainTarget>,
    /// Virtual IPs Consul assigned to the chain's service (`null` until assigned).
    #[serde(rename = "AutoVirtualIPs", default, deserialize_with = "null_default")]
    pub auto_virtual_ips: Vec<String>,
    /// Operator-assigned virtual IPs (`null` until assigned).
    #[serde(
        rename = "ManualVirtualIPs",
        default,
        deserialize_with = "null_default"
    )]
    pub manual_virtual_ips: Vec<String>,
}

/// A chain node (router, splitter or resolver).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ChainNode {
    /// `router`, `splitter` or `resolver`.
    #[serde(rename = "Type", default)]
    pub kind: String,
    /// Resolver details.
    #[serde(default)]
    pub resolver: Option<ChainResolver>,
    /// Router routes.
    #[serde(default, deserialize_with = "null_default")]
    pub routes: Vec<ChainNext>,
    /// Splitter splits.
    #[serde(default, deserialize_with = "null_default")]
    pub splits: Vec<ChainNext>,
    /// Resolver load balancing.
    #[serde(default)]
    pub load_balancer: Option<LoadBalancer>,
}

/// A route or split pointing at the next node.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ChainNext {
    /// Split weight (splits only).
    #[serde(default)]
    pub weight: f64,
    /// Next node key.
    #[serde(default)]
    pub next_node: String,
    /// The route's (`ServiceRoute`) or split's (`ServiceSplit`) definition.
    #[serde(default)]
    pub definition: Option<ChainDefinition>,
}

/// A resolver node's content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ChainResolver {
    /// Go duration string, e.g. `5s`.
    #[serde(default)]
    pub connect_timeout: String,
    /// Primary target ID.
    #[serde(default)]
    pub target: String,
    /// Whether the resolver is the implicit default one.
    #[serde(default)]
    pub default: bool,
    /// The resolver's `RequestTimeout` (route timeout when the chain starts at it).
    #[serde(default, deserialize_with = "go_duration")]
    pub request_timeout: Option<std::time::Duration>,
    /// Failover targets.
    #[serde(default)]
    pub failover: Option<ChainFailover>,
}

/// Failover of a resolver.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ChainFailover {
    /// Target IDs in order.
    #[serde(default, deserialize_with = "null_default")]
    pub targets: Vec<String>,
}

/// A chain target.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ChainTarget {
    /// Target ID.
    #[serde(rename = "ID", default)]
    pub id: String,
    /// Service.
    #[serde(default)]
    pub service: String,
    /// Namespace.
    #[serde(default)]
    pub namespace: String,
    /// Datacenter.
    #[serde(default)]
    pub datacenter: String,
    /// Subset filter.
    #[serde(default)]
    pub subset: ChainSubset,
}

/// Subset definition of a target.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ChainSubset {
    /// bexpr filter over health entries.
    #[serde(default)]
    pub filter: String,
}

mod l7;
pub use l7::{
    ChainDefinition, CookieConfig, HashPolicy, HeaderMatch, HeaderModifiers, HttpMatch,
    LoadBalancer, QueryMatch, RouteDestination, RouteMatch, go_duration,
};

#[cfg(test)]
mod tests;
