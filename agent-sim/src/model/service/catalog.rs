//! `PUT /v1/catalog/register` and `PUT /v1/catalog/deregister` bodies: decoding (Go's
//! lenient top level, strict `Proxy`/`Upstreams` and deregister bodies) and the checks the
//! servers' `Catalog.Register`/`Deregister` RPCs make, with their texts.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::RegisterError;
use super::definition::{OPAQUE_KEYS, prepare};
use super::model::{
    ConnectProxyConfig, HealthCheck, Locality, Node, NodeService, ServiceAddress, ServiceConnect,
    ServiceKind, Weights,
};
use super::validate::{
    go_quote, is_any_address, multierror, validate_node_service, validate_weights,
};
use crate::go::decode::{KeySchema, decode_value, parse_json};
use health::{RawHealthCheck, catalog_check};

/// A decoded catalog registration: the node, optionally a service, and checks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CatalogRegistration {
    /// The node; `datacenter` defaulted to the agent's.
    pub node: Node,
    /// The service; ID defaulted to the name.
    pub service: Option<NodeService>,
    /// `Check` and `Checks`; `Node` and `CheckID` defaulted, `Status` `critical` unless given,
    /// `Type` derived from the definition, and service name/tags filled from `service` when the
    /// check belongs to it.
    pub checks: Vec<HealthCheck>,
    /// Leave an existing node record alone.
    pub skip_node_update: bool,
    /// `Token` given in the body.
    pub token: String,
}

/// A decoded catalog deregistration: the whole node, one service, or one check.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogDeregistration {
    pub datacenter: String,
    pub node: String,
    pub service_id: String,
    pub check_id: String,
}

#[rustfmt::skip]
const CATALOG_KEYS: &[&str] = &[
    // RegisterRequest / DeregisterRequest
    "Datacenter", "ID", "Node", "Address", "TaggedAddresses", "NodeMeta", "Service", "Check",
    "Checks", "Locality", "SkipNodeUpdate", "PeerName", "Token", "CreateIndex", "ModifyIndex",
    "ServiceID", "CheckID",
    // NodeService
    "Kind", "Tags", "Meta", "Port", "SocketPath", "Weights", "EnableTagOverride", "Proxy",
    "Connect", "Native", "Passing", "Warning", "Region", "Zone",
    // ConnectProxyConfig and Upstream
    "EnvoyExtensions", "DestinationServiceName", "DestinationServiceID", "LocalServiceAddress",
    "LocalServicePort", "LocalServiceSocketPath", "Mode", "Config", "Upstreams", "MeshGateway",
    "Expose", "TransparentProxy", "AccessLogs", "MutualTLSMode", "DestinationType", "DestinationNamespace",
    "DestinationPartition", "DestinationPeer", "DestinationName", "LocalBindAddress",
    "LocalBindPort", "LocalBindSocketPath", "LocalBindSocketMode", "CentrallyConfigured", "Paths",
    "ListenerPort", "Path", "LocalPathPort", "Protocol", "ParsedFromCheck", "OutboundListenerPort",
    "DialedDirectly", "Enabled", "DisableListenerLogs", "Type", "JSONFormat", "TextFormat",
    // HealthCheck and its Definition
    "Name", "Status", "Notes", "Output", "ServiceName", "ServiceTags", "Interval", "Timeout",
    "ExposedPort", "Definition", "HTTP", "TLSServerName", "TLSSkipVerify", "Header", "Method",
    "Body", "DisableRedirects", "TCP", "UDP", "H2PING", "OSService", "H2PingUseTLS",
    "OutputMaxSize", "DeregisterCriticalServiceAfter", "ScriptArgs", "DockerContainerID", "Shell",
    "GRPC", "GRPCUseTLS", "AliasNode", "AliasService", "TTL",
];

const CATALOG_SCHEMA: KeySchema = KeySchema {
    canonical: CATALOG_KEYS,
    opaque: OPAQUE_KEYS,
    keyed: &["TaggedAddresses"],
};

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
struct RawRegisterRequest {
    datacenter: String,
    #[serde(rename = "ID")]
    id: String,
    node: String,
    address: String,
    tagged_addresses: BTreeMap<String, String>,
    node_meta: BTreeMap<String, String>,
    service: Option<RawNodeService>,
    check: Option<RawHealthCheck>,
    checks: Vec<RawHealthCheck>,
    skip_node_update: bool,
    token: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
struct RawNodeService {
    kind: ServiceKind,
    #[serde(rename = "ID")]
    id: String,
    service: String,
    tags: Vec<String>,
    address: String,
    tagged_addresses: BTreeMap<String, ServiceAddress>,
    meta: BTreeMap<String, String>,
    port: u16,
    socket_path: String,
    weights: Option<Weights>,
    enable_tag_override: bool,
    locality: Option<Locality>,
    proxy: ConnectProxyConfig,
    connect: RawConnect,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
struct RawConnect {
    native: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "PascalCase")]
struct RawDeregisterRequest {
    datacenter: String,
    node: String,
    #[serde(rename = "ServiceID")]
    service_id: String,
    #[serde(rename = "CheckID")]
    check_id: String,
    peer_name: String,
    token: String,
    /// Obsolete; Consul explicitly accepts it.
    address: String,
}

fn decode<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, RegisterError> {
    let failed = |e: String| RegisterError::BadRequest(format!("Request decode failed: {e}"));
    let value = parse_json(body).map_err(|e| failed(e.0))?;
    decode_value(prepare(value, &CATALOG_SCHEMA), &CATALOG_SCHEMA).map_err(|e| failed(e.0))
}

/// Decodes a `PUT /v1/catalog/register` body and applies the servers' checks
/// (`Must provide node`, `Must provide address if SkipNodeUpdate is not set`, `Bad node ID:
/// ...`, the service's validation multierror, `Invalid service address`, ...). Server-side
/// failures are [`RegisterError::Rpc`].
pub fn decode_catalog_register(
    body: &[u8],
    default_dc: &str,
) -> Result<CatalogRegistration, RegisterError> {
    let raw: RawRegisterRequest = decode(body)?;
    let rpc = RegisterError::Rpc;
    if raw.node.is_empty() {
        return Err(rpc("Must provide node".into()));
    }
    if raw.address.is_empty() && !raw.skip_node_update {
        return Err(rpc(
            "Must provide address if SkipNodeUpdate is not set".into()
        ));
    }
    if !raw.id.is_empty() {
        parse_go_uuid(&raw.id).map_err(|e| rpc(format!("Bad node ID: {e}")))?;
    }
    let datacenter = if raw.datacenter.is_empty() {
        default_dc.to_owned()
    } else {
        raw.datacenter
    };
    let node = Node {
        id: raw.id,
        name: raw.node,
        address: raw.address,
        datacenter,
        tagged_addresses: raw.tagged_addresses,
        meta: raw.node_meta,
        ..Node::default()
    };
    let service = raw.service.map(catalog_service).transpose()?;
    let mut checks = Vec::new();
    for raw_check in raw.check.into_iter().chain(raw.checks) {
        let check = catalog_check(raw_check, &node.name, service.as_ref())?;
        if !check.node.eq_ignore_ascii_case(&node.name) {
            return Err(rpc(format!(
                "check node {} does not match node {}",
                go_quote(&check.node),
                go_quote(&node.name)
            )));
        }
        checks.push(check);
    }
    Ok(CatalogRegistration {
        node,
        service,
        checks,
        skip_node_update: raw.skip_node_update,
        token: raw.token,
    })
}

/// Decodes a `PUT /v1/catalog/deregister` body (strict; `Address` tolerated) and applies
/// `Must provide node`.
pub fn decode_catalog_deregister(
    body: &[u8],
    default_dc: &str,
) -> Result<CatalogDeregistration, RegisterError> {
    let raw: RawDeregisterRequest = decode(body)?;
    if raw.node.is_empty() {
        return Err(RegisterError::Rpc("Must provide node".into()));
    }
    let datacenter = if raw.datacenter.is_empty() {
        default_dc.to_owned()
    } else {
        raw.datacenter
    };
    Ok(CatalogDeregistration {
        datacenter,
        node: raw.node,
        service_id: raw.service_id,
        check_id: raw.check_id,
    })
}

fn catalog_service(raw: RawNodeService) -> Result<NodeService, RegisterError> {
    let rpc = RegisterError::Rpc;
    // The state store keeps Weights only when valid, else 1/1 (`ToServiceNode`).
    let weights = raw
        .weights
        .filter(|w| validate_weights(w).is_ok())
        .unwrap_or_default();
    let mut ns = NodeService {
        kind: raw.kind,
        id: raw.id,
        service: raw.service,
        tags: raw.tags,
        address: raw.address,
        tagged_addresses: raw.tagged_addresses,
        meta: raw.meta,
        port: raw.port,
        socket_path: raw.socket_path,
        weights,
        enable_tag_override: raw.enable_tag_override,
        locality: raw.locality,
        proxy: raw.proxy,
        connect: ServiceConnect {
            native: raw.connect.native,
        },
        ..NodeService::default()
    };
    let errors = validate_node_service(&ns, None);
    if !errors.is_empty() {
        return Err(rpc(multierror(&errors)));
    }
    if ns.id.is_empty() {
        ns.id.clone_from(&ns.service);
    }
    if !ns.id.is_empty() && ns.service.is_empty() {
        return Err(rpc(
            "Must provide service name (Service.Service) with ID (Service.ID)".into(),
        ));
    }
    if is_any_address(&ns.address) {
        return Err(rpc("Invalid service address".into()));
    }
    Ok(ns)
}

/// hashicorp/go-uuid's `ParseUUID` checks, with its texts.
fn parse_go_uuid(s: &str) -> Result<(), String> {
    if s.len() != 36 {
        return Err("uuid string is wrong length".into());
    }
    let b = s.as_bytes();
    if b[8] != b'-' || b[13] != b'-' || b[18] != b'-' || b[23] != b'-' {
        return Err("uuid is improperly formatted".into());
    }
    for (i, c) in s.char_indices() {
        if matches!(i, 8 | 13 | 18 | 23) {
            continue;
        }
        if !c.is_ascii_hexdigit() {
            return Err(format!(
                "encoding/hex: invalid byte: U+{:04X} {}",
                c as u32,
                go_char(c)
            ));
        }
    }
    Ok(())
}

/// Go's `%q` of a rune.
fn go_char(c: char) -> String {
    if c == '\'' {
        "'\\''".into()
    } else {
        format!("'{c}'")
    }
}

mod health;

#[cfg(test)]
mod tests;
