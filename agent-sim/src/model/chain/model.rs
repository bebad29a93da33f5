//! The compiled discovery chain as `/v1/discovery-chain/:service` returns it: `{"Chain": ...}`
//! with Go's field order, `omitempty` rules and custom marshallers (durations as strings on
//! resolvers and targets, `RequestTimeout` as integer nanoseconds). Maps are `BTreeMap`s, which
//! sort keys the way Go's encoder does.

use std::collections::BTreeMap;

use serde::Serialize;

use super::definition::{
    EnvoyExtension, FailoverPolicy, LoadBalancer, ServiceRoute, ServiceSplit, Subset,
};
use super::gofmt::{is_false, is_zero_f32, is_zero_i64, ser_duration_str, ser_f32};

/// The response body: `{"Chain": CompiledDiscoveryChain}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChainResponse {
    #[serde(rename = "Chain")]
    pub chain: CompiledChain,
}

impl ChainResponse {
    /// The compact JSON body, byte-for-byte in Consul's key order.
    pub fn to_json(&self) -> Vec<u8> {
        // Serializing plain structs, strings and maps with string keys cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// `structs.CompiledDiscoveryChain`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct CompiledChain {
    pub service_name: String,
    pub namespace: String,
    pub partition: String,
    pub datacenter: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub customization_hash: String,
    #[serde(skip_serializing_if = "is_false")]
    pub default: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub protocol: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub service_meta: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub envoy_extensions: Vec<EnvoyExtension>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub start_node: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub nodes: BTreeMap<String, GraphNode>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub targets: BTreeMap<String, DiscoveryTarget>,
    /// Not `omitempty`: `null` until the service has a virtual IP.
    #[serde(rename = "AutoVirtualIPs")]
    pub auto_virtual_ips: Option<Vec<String>>,
    #[serde(rename = "ManualVirtualIPs")]
    pub manual_virtual_ips: Option<Vec<String>>,
}

/// `structs.DiscoveryGraphNode`; `Type` is `router`, `splitter` or `resolver`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct GraphNode {
    #[serde(rename = "Type")]
    pub node_type: String,
    pub name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<DiscoveryRoute>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub splits: Vec<DiscoverySplit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolver: Option<DiscoveryResolver>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancer>,
}

impl GraphNode {
    pub(crate) const ROUTER: &'static str = "router";
    pub(crate) const SPLITTER: &'static str = "splitter";
    pub(crate) const RESOLVER: &'static str = "resolver";

    /// The key of this node in `Nodes` (`<type>:<name>`).
    pub fn map_key(&self) -> String {
        format!("{}:{}", self.node_type, self.name)
    }
}

/// `structs.DiscoveryRoute`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct DiscoveryRoute {
    pub definition: ServiceRoute,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub next_node: String,
}

/// `structs.DiscoverySplit`; `Weight` is the effective (flattened) weight.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct DiscoverySplit {
    pub definition: ServiceSplit,
    #[serde(serialize_with = "ser_f32", skip_serializing_if = "is_zero_f32")]
    pub weight: f32,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub next_node: String,
}

/// `structs.DiscoveryResolver`, with its marshaller's `ConnectTimeout` string written first.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct DiscoveryResolver {
    #[serde(
        serialize_with = "ser_duration_str",
        skip_serializing_if = "is_zero_i64"
    )]
    pub connect_timeout: i64,
    #[serde(skip_serializing_if = "is_false")]
    pub default: bool,
    /// Integer nanoseconds: this field has no string marshaller in Consul.
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub request_timeout: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub target: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failover: Option<DiscoveryFailover>,
}

/// `structs.DiscoveryFailover`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct DiscoveryFailover {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<FailoverPolicy>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<String>,
}

/// `structs.DiscoveryTarget`, with its marshaller's `ConnectTimeout` string written first.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct DiscoveryTarget {
    #[serde(
        serialize_with = "ser_duration_str",
        skip_serializing_if = "is_zero_i64"
    )]
    pub connect_timeout: i64,
    #[serde(rename = "ID", skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub service: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub service_subset: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub partition: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub datacenter: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub peer: String,
    pub mesh_gateway: MeshGatewayConfig,
    pub subset: Subset,
    pub transparent_proxy: TransparentProxyConfig,
    #[serde(skip_serializing_if = "is_false")]
    pub external: bool,
    #[serde(rename = "SNI", skip_serializing_if = "String::is_empty")]
    pub sni: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prioritize_by_locality: Option<PrioritizeByLocality>,
}

/// `MeshGatewayConfig` (`{}` when the mode is unset).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct MeshGatewayConfig {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mode: String,
}

/// `TransparentProxyConfig` as a target carries it (only `DialedDirectly` is ever set).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransparentProxyConfig {
    #[serde(skip_serializing_if = "is_false")]
    pub dialed_directly: bool,
}

/// `DiscoveryPrioritizeByLocality`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct PrioritizeByLocality {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mode: String,
}
