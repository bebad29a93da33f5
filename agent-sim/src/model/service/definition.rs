//! `PUT /v1/agent/service/register` bodies: the decoded `ServiceDefinition` and the strict,
//! Go-compatible decoder (`Request decode failed: ...`, `Missing service name`,
//! `Invalid service address`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::RegisterError;
use super::check::{CheckDefinition, RawCheck};
use super::model::{ConnectProxyConfig, Locality, ServiceAddress, ServiceKind, Weights};
use super::validate::is_any_address;
use crate::go::decode::{KeySchema, decode_value, normalize_keys, parse_json};

/// A decoded service registration (Consul's `ServiceDefinition`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServiceDefinition {
    pub kind: ServiceKind,
    /// Defaults to `name` when empty.
    pub id: String,
    pub name: String,
    pub tags: Vec<String>,
    pub address: String,
    pub tagged_addresses: BTreeMap<String, ServiceAddress>,
    pub meta: BTreeMap<String, String>,
    pub port: u16,
    pub socket_path: String,
    /// `Check`, `None` when absent or all-zero (Consul skips an empty check).
    pub check: Option<CheckDefinition>,
    pub checks: Vec<CheckDefinition>,
    pub weights: Option<Weights>,
    /// The service's own token (used by Consul for anti-entropy, not for the request's ACL).
    pub token: String,
    pub enable_tag_override: bool,
    pub locality: Option<Locality>,
    pub proxy: Option<ConnectProxyConfig>,
    pub connect: Option<ConnectDefinition>,
}

/// `Connect{Native, SidecarService}` of a registration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConnectDefinition {
    pub native: bool,
    /// The nested sidecar registration (`{}` is valid: everything is defaulted).
    pub sidecar_service: Option<Box<ServiceDefinition>>,
}

impl ServiceDefinition {
    /// `Check` (when set) followed by `Checks`, in registration order.
    pub fn check_definitions(&self) -> Vec<&CheckDefinition> {
        self.check.iter().chain(self.checks.iter()).collect()
    }

    /// The nested `Connect.SidecarService`, if any.
    pub fn sidecar_service(&self) -> Option<&Self> {
        self.connect
            .as_ref()
            .and_then(|c| c.sidecar_service.as_deref())
    }
}

/// Every canonical key of a registration body (service, check, connect and proxy objects).
#[rustfmt::skip]
const REGISTER_KEYS: &[&str] = &[
    // ServiceDefinition
    "Kind", "ID", "Name", "Tags", "Address", "TaggedAddresses", "Meta", "Port", "SocketPath",
    "Check", "Checks", "Weights", "Token", "EnableTagOverride", "Locality", "Proxy", "Connect",
    // ServiceAddress, Weights, Locality, Connect
    "Passing", "Warning", "Region", "Zone", "Native", "SidecarService", "PeerMeta",
    // ConnectProxyConfig
    "EnvoyExtensions", "DestinationServiceName", "DestinationServiceID", "LocalServiceAddress",
    "LocalServicePort", "LocalServiceSocketPath", "Mode", "Config", "Upstreams", "MeshGateway",
    "Expose", "TransparentProxy", "AccessLogs", "MutualTLSMode",
    // Upstream
    "DestinationType", "DestinationNamespace", "DestinationPartition", "DestinationPeer",
    "DestinationName", "Datacenter", "LocalBindAddress", "LocalBindPort", "LocalBindSocketPath",
    "LocalBindSocketMode", "CentrallyConfigured",
    // Expose, TransparentProxy, AccessLogs
    "Paths", "ListenerPort", "Path", "LocalPathPort", "Protocol", "ParsedFromCheck",
    "OutboundListenerPort", "DialedDirectly", "Enabled", "DisableListenerLogs", "Type",
    "JSONFormat", "TextFormat",
    // CheckType
    "CheckID", "Status", "Notes", "ScriptArgs", "Args", "HTTP", "H2PING", "H2PingUseTLS", "Header",
    "Method", "Body", "DisableRedirects", "TCP", "UDP", "Interval", "AliasNode", "AliasService",
    "DockerContainerID", "Shell", "GRPC", "GRPCUseTLS", "OSService", "TLSServerName",
    "TLSSkipVerify", "Timeout", "TTL", "SuccessBeforePassing", "FailuresBeforeWarning",
    "FailuresBeforeCritical", "ProxyHTTP", "ProxyGRPC", "DeregisterCriticalServiceAfter",
    "OutputMaxSize", "ServiceID",
];

/// User-data fields whose contents are never rewritten.
pub(crate) const OPAQUE_KEYS: &[&str] = &[
    "Meta",
    "Config",
    "Header",
    "EnvoyExtensions",
    "PeerMeta",
    "NodeMeta",
];

const REGISTER_SCHEMA: KeySchema = KeySchema {
    canonical: REGISTER_KEYS,
    opaque: OPAQUE_KEYS,
    keyed: &["TaggedAddresses"],
};

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "PascalCase")]
struct RawServiceDefinition {
    kind: ServiceKind,
    #[serde(rename = "ID")]
    id: String,
    name: String,
    tags: Vec<String>,
    address: String,
    tagged_addresses: BTreeMap<String, ServiceAddress>,
    meta: BTreeMap<String, String>,
    port: u16,
    socket_path: String,
    check: Option<RawCheck>,
    checks: Vec<RawCheck>,
    weights: Option<Weights>,
    token: String,
    enable_tag_override: bool,
    locality: Option<Locality>,
    proxy: Option<ConnectProxyConfig>,
    connect: Option<RawConnect>,
}

/// Consul decodes `Connect` with a lenient decoder: unknown keys there are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
struct RawConnect {
    native: bool,
    sidecar_service: Option<Box<RawServiceDefinition>>,
}

impl RawServiceDefinition {
    fn into_definition(self) -> Result<ServiceDefinition, String> {
        let check = match self.check {
            Some(raw) => Some(raw.into_definition()?).filter(|c| !c.is_empty()),
            None => None,
        };
        let checks = self
            .checks
            .into_iter()
            .map(RawCheck::into_definition)
            .collect::<Result<_, _>>()?;
        let connect = match self.connect {
            Some(c) => Some(ConnectDefinition {
                native: c.native,
                sidecar_service: match c.sidecar_service {
                    Some(sc) => Some(Box::new(sc.into_definition()?)),
                    None => None,
                },
            }),
            None => None,
        };
        Ok(ServiceDefinition {
            kind: self.kind,
            id: self.id,
            name: self.name,
            tags: self.tags,
            address: self.address,
            tagged_addresses: self.tagged_addresses,
            meta: self.meta,
            port: self.port,
            socket_path: self.socket_path,
            check,
            checks,
            weights: self.weights,
            token: self.token,
            enable_tag_override: self.enable_tag_override,
            locality: self.locality,
            proxy: self.proxy,
            connect,
        })
    }
}

/// Decodes a `PUT /v1/agent/service/register` body strictly, with Consul's 400 texts, and
/// applies the checks Consul makes before resolving the request's token: `Missing service
/// name` and `Invalid service address`.
pub fn decode_register(body: &[u8]) -> Result<ServiceDefinition, RegisterError> {
    let decode_failed =
        |e: String| RegisterError::BadRequest(format!("Request decode failed: {e}"));
    let value = parse_json(body).map_err(|e| decode_failed(e.0))?;
    let value = prepare(value, &REGISTER_SCHEMA);
    let raw: RawServiceDefinition =
        decode_value(value, &REGISTER_SCHEMA).map_err(|e| decode_failed(e.0))?;
    let def = raw.into_definition().map_err(decode_failed)?;
    if def.name.is_empty() {
        return Err(RegisterError::BadRequest("Missing service name".into()));
    }
    if is_any_address(&def.address) {
        return Err(RegisterError::BadRequest("Invalid service address".into()));
    }
    Ok(def)
}

/// Normalizes keys and drops `null` members outside user data (Go leaves the zero value for
/// `null`, so an absent key is equivalent). A `null` body decodes like `{}`, as in Go.
pub(crate) fn prepare(value: Value, schema: &KeySchema) -> Value {
    let value = normalize_keys(value, schema);
    if value.is_null() {
        return Value::Object(serde_json::Map::new());
    }
    strip_nulls(value, schema.opaque)
}

fn strip_nulls(value: Value, opaque: &[&str]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    let v = if opaque.contains(&k.as_str()) {
                        v
                    } else {
                        strip_nulls(v, opaque)
                    };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| strip_nulls(v, opaque)).collect())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests;
