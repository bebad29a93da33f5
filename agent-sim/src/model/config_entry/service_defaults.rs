//! The `service-defaults` config entry (protocol, proxy mode, upstream config, destination, ...)
//! with its normalization and validation texts.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::common::{
    ENVOY_EXTENSION_TY, EXPOSE, EnvoyExtension, ExposeConfig, MESH_GATEWAY, MeshGatewayConfig,
    TRANSPARENT_PROXY, TransparentProxyConfig, is_zero_i64, is_zero_u32, validate_extensions,
    validate_meta, validate_mutual_tls_mode,
};
use super::multierror;
use crate::go::mapstructure::{Field, Schema, Ty};

/// A `service-defaults` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceDefaults {
    #[serde(rename = "Kind")]
    pub kind: String,
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Protocol")]
    pub protocol: String,
    #[serde(rename = "Mode", skip_serializing_if = "String::is_empty")]
    pub mode: String,
    #[serde(rename = "TransparentProxy")]
    pub transparent_proxy: TransparentProxyConfig,
    #[serde(rename = "MutualTLSMode", skip_serializing_if = "String::is_empty")]
    pub mutual_tls_mode: String,
    #[serde(rename = "MeshGateway")]
    pub mesh_gateway: MeshGatewayConfig,
    #[serde(rename = "Expose")]
    pub expose: ExposeConfig,
    #[serde(rename = "ExternalSNI", skip_serializing_if = "String::is_empty")]
    pub external_sni: String,
    #[serde(rename = "UpstreamConfig", skip_serializing_if = "Option::is_none")]
    pub upstream_config: Option<UpstreamConfiguration>,
    #[serde(rename = "Destination", skip_serializing_if = "Option::is_none")]
    pub destination: Option<DestinationConfig>,
    #[serde(rename = "MaxInboundConnections", skip_serializing_if = "is_zero_i64")]
    pub max_inbound_connections: i64,
    #[serde(rename = "LocalConnectTimeoutMs", skip_serializing_if = "is_zero_i64")]
    pub local_connect_timeout_ms: i64,
    #[serde(rename = "LocalRequestTimeoutMs", skip_serializing_if = "is_zero_i64")]
    pub local_request_timeout_ms: i64,
    #[serde(
        rename = "BalanceInboundConnections",
        skip_serializing_if = "String::is_empty"
    )]
    pub balance_inbound_connections: String,
    #[serde(rename = "RateLimits", skip_serializing_if = "Option::is_none")]
    pub rate_limits: Option<serde_json::Value>,
    #[serde(rename = "EnvoyExtensions", skip_serializing_if = "Vec::is_empty")]
    pub envoy_extensions: Vec<EnvoyExtension>,
    #[serde(rename = "Meta", skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
    #[serde(rename = "Hash", skip_serializing)]
    pub hash: u64,
    #[serde(rename = "CreateIndex", skip_deserializing)]
    pub create_index: u64,
    #[serde(rename = "ModifyIndex", skip_deserializing)]
    pub modify_index: u64,
}

/// `UpstreamConfiguration`: per-upstream overrides and defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UpstreamConfiguration {
    #[serde(rename = "Overrides", skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<UpstreamConfig>,
    #[serde(rename = "Defaults", skip_serializing_if = "Option::is_none")]
    pub defaults: Option<UpstreamConfig>,
}

/// `UpstreamConfig` (note `Peer` has no `omitempty` in Go).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UpstreamConfig {
    #[serde(rename = "Name", skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(rename = "Peer")]
    pub peer: String,
    #[serde(rename = "EnvoyListenerJSON", skip_serializing_if = "String::is_empty")]
    pub envoy_listener_json: String,
    #[serde(rename = "EnvoyClusterJSON", skip_serializing_if = "String::is_empty")]
    pub envoy_cluster_json: String,
    #[serde(rename = "Protocol", skip_serializing_if = "String::is_empty")]
    pub protocol: String,
    #[serde(rename = "ConnectTimeoutMs", skip_serializing_if = "is_zero_i64")]
    pub connect_timeout_ms: i64,
    #[serde(rename = "Limits", skip_serializing_if = "Option::is_none")]
    pub limits: Option<UpstreamLimits>,
    #[serde(rename = "PassiveHealthCheck", skip_serializing_if = "Option::is_none")]
    pub passive_health_check: Option<PassiveHealthCheck>,
    #[serde(rename = "MeshGateway")]
    pub mesh_gateway: MeshGatewayConfig,
    #[serde(
        rename = "BalanceOutboundConnections",
        skip_serializing_if = "String::is_empty"
    )]
    pub balance_outbound_connections: String,
}

/// `UpstreamLimits`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UpstreamLimits {
    #[serde(rename = "MaxConnections", skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<i64>,
    #[serde(rename = "MaxPendingRequests", skip_serializing_if = "Option::is_none")]
    pub max_pending_requests: Option<i64>,
    #[serde(
        rename = "MaxConcurrentRequests",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_concurrent_requests: Option<i64>,
}

/// `PassiveHealthCheck` (durations are integer nanoseconds on the wire: no custom marshaller).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PassiveHealthCheck {
    #[serde(rename = "Interval", skip_serializing_if = "is_zero_i64")]
    pub interval: i64,
    #[serde(rename = "MaxFailures", skip_serializing_if = "is_zero_u32")]
    pub max_failures: u32,
    #[serde(
        rename = "EnforcingConsecutive5xx",
        skip_serializing_if = "Option::is_none"
    )]
    pub enforcing_consecutive_5xx: Option<u32>,
    #[serde(rename = "MaxEjectionPercent", skip_serializing_if = "Option::is_none")]
    pub max_ejection_percent: Option<u32>,
    #[serde(rename = "BaseEjectionTime", skip_serializing_if = "Option::is_none")]
    pub base_ejection_time: Option<i64>,
}

/// `DestinationConfig` (terminating-gateway destinations).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DestinationConfig {
    #[serde(rename = "Addresses", skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
    #[serde(rename = "Port", skip_serializing_if = "is_zero_i64")]
    pub port: i64,
}

static LIMITS: Schema = Schema {
    fields: &[
        Field("MaxConnections", Ty::Int("int")),
        Field("MaxPendingRequests", Ty::Int("int")),
        Field("MaxConcurrentRequests", Ty::Int("int")),
    ],
};
static PASSIVE: Schema = Schema {
    fields: &[
        Field("Interval", Ty::Duration),
        Field("MaxFailures", Ty::Uint("uint32")),
        Field("EnforcingConsecutive5xx", Ty::Uint("uint32")),
        Field("MaxEjectionPercent", Ty::Uint("uint32")),
        Field("BaseEjectionTime", Ty::Duration),
    ],
};
static UPSTREAM: Schema = Schema {
    fields: &[
        Field("Name", Ty::Str),
        Field("Peer", Ty::Str),
        Field("EnvoyListenerJSON", Ty::Str),
        Field("EnvoyClusterJSON", Ty::Str),
        Field("Protocol", Ty::Str),
        Field("ConnectTimeoutMs", Ty::Int("int")),
        Field("Limits", Ty::Struct(&LIMITS)),
        Field("PassiveHealthCheck", Ty::Struct(&PASSIVE)),
        Field("MeshGateway", Ty::Struct(&MESH_GATEWAY)),
        Field("BalanceOutboundConnections", Ty::Str),
    ],
};
static UPSTREAM_TY: Ty = Ty::Struct(&UPSTREAM);
static UPSTREAM_CONFIGURATION: Schema = Schema {
    fields: &[
        Field("Overrides", Ty::Slice(&UPSTREAM_TY)),
        Field("Defaults", Ty::Struct(&UPSTREAM)),
    ],
};
static DESTINATION: Schema = Schema {
    fields: &[
        Field("Addresses", Ty::Slice(&Ty::Str)),
        Field("Port", Ty::Int("int")),
    ],
};
pub(crate) static SCHEMA: Schema = Schema {
    fields: &[
        Field("Kind", Ty::Str),
        Field("Name", Ty::Str),
        Field("Protocol", Ty::Str),
        Field("Mode", Ty::Str),
        Field("TransparentProxy", Ty::Struct(&TRANSPARENT_PROXY)),
        Field("MutualTLSMode", Ty::Str),
        Field("MeshGateway", Ty::Struct(&MESH_GATEWAY)),
        Field("Expose", Ty::Struct(&EXPOSE)),
        Field("ExternalSNI", Ty::Str),
        Field("UpstreamConfig", Ty::Struct(&UPSTREAM_CONFIGURATION)),
        Field("Destination", Ty::Struct(&DESTINATION)),
        Field("MaxInboundConnections", Ty::Int("int")),
        Field("LocalConnectTimeoutMs", Ty::Int("int")),
        Field("LocalRequestTimeoutMs", Ty::Int("int")),
        Field("BalanceInboundConnections", Ty::Str),
        Field("RateLimits", Ty::Opaque),
        Field("EnvoyExtensions", Ty::Slice(&ENVOY_EXTENSION_TY)),
        Field("Meta", Ty::Map(&Ty::Str)),
        Field("Hash", Ty::Uint("uint64")),
    ],
};

impl UpstreamConfig {
    /// `PeeredServiceName().String()` as the error prefix prints it.
    fn display_name(&self) -> String {
        match (self.name.is_empty(), self.peer.is_empty()) {
            (true, _) => String::new(),
            (false, true) => self.name.clone(),
            (false, false) => format!("peer:{}/{}", self.peer, self.name),
        }
    }

    fn normalize(&mut self) {
        self.protocol = self.protocol.to_lowercase();
        self.connect_timeout_ms = self.connect_timeout_ms.max(0);
    }

    fn validate(&self, named: bool) -> Vec<String> {
        if named {
            if self.name.is_empty() {
                return vec!["Name is required".into()];
            }
            if self.name == "*" {
                return vec!["Wildcard name is not supported".into()];
            }
        } else if !self.name.is_empty() {
            return vec!["Name must be empty".into()];
        }
        let mut errs = Vec::new();
        if let Some(p) = &self.passive_health_check {
            if p.interval < 0 {
                errs.push("passive health check interval cannot be negative".into());
            } else if p.enforcing_consecutive_5xx.is_some_and(|v| v > 100) {
                errs.push("passive health check enforcing_consecutive_5xx must be a percentage between 0 and 100".into());
            } else if p.max_ejection_percent.is_some_and(|v| v > 100) {
                errs.push("passive health check max_ejection_percent must be a percentage between 0 and 100".into());
            } else if p.base_ejection_time.is_some_and(|v| v < 0) {
                errs.push("passive health check base_ejection_time cannot be negative".into());
            }
        }
        if let Some(l) = &self.limits {
            if l.max_connections.is_some_and(|v| v < 0) {
                errs.push("max connections cannot be negative".into());
            } else if l.max_pending_requests.is_some_and(|v| v < 0) {
                errs.push("max pending requests cannot be negative".into());
            } else if l.max_concurrent_requests.is_some_and(|v| v < 0) {
                errs.push("max concurrent requests cannot be negative".into());
            }
        }
        if !valid_balance(&self.balance_outbound_connections) {
            errs.push(format!(
                "invalid value for balance_outbound_connections: {}",
                self.balance_outbound_connections
            ));
        }
        errs
    }
}

fn valid_balance(s: &str) -> bool {
    s.is_empty() || s == "exact_balance"
}

/// `miekg/dns.IsDomainName`, roughly: 1..=63-byte labels, at most 255 bytes in all.
fn is_domain_name(s: &str) -> bool {
    let trimmed = s.strip_suffix('.').unwrap_or(s);
    !trimmed.is_empty()
        && trimmed.len() <= 253
        && trimmed.split('.').all(|l| !l.is_empty() && l.len() <= 63)
}

impl ServiceDefaults {
    /// `ServiceConfigEntry.Normalize`.
    pub(crate) fn normalize(&mut self) {
        self.kind = "service-defaults".into();
        self.protocol = self.protocol.to_lowercase();
        if let Some(uc) = &mut self.upstream_config {
            uc.overrides.iter_mut().for_each(UpstreamConfig::normalize);
            if let Some(d) = &mut uc.defaults {
                d.normalize();
            }
        }
    }

    /// `ServiceConfigEntry.Validate`: most problems are collected into one multierror.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("Name is required".into());
        }
        if self.name == "*" {
            return Err(
                "service-defaults name must be the name of a service, and not a wildcard".into(),
            );
        }
        let mut errs = validate_meta(&self.meta);
        if !valid_balance(&self.balance_inbound_connections) {
            errs.push(format!(
                "invalid value for balance_inbound_connections: {}",
                self.balance_inbound_connections
            ));
        }
        if self.upstream_config.is_some() && self.destination.is_some() {
            errs.push(
                "UpstreamConfig and Destination are mutually exclusive for service defaults".into(),
            );
            return Err(multierror(&errs));
        }
        if let Some(uc) = &self.upstream_config {
            for o in &uc.overrides {
                for e in o.validate(true) {
                    errs.push(format!(
                        "error in upstream override for {}: {e}",
                        o.display_name()
                    ));
                }
            }
            if let Some(d) = &uc.defaults {
                for e in d.validate(false) {
                    errs.push(format!("error in upstream defaults: {e}"));
                }
            }
        }
        if let Some(dest) = &self.destination {
            self.validate_destination(dest, &mut errs);
        }
        if self.rate_limits.is_some() {
            errs.push("RateLimits is a Consul Enterprise feature".into());
        }
        errs.extend(validate_extensions(&self.envoy_extensions));
        validate_mutual_tls_mode(&self.mutual_tls_mode)?;
        if errs.is_empty() {
            Ok(())
        } else {
            Err(multierror(&errs))
        }
    }

    fn validate_destination(&self, dest: &DestinationConfig, errs: &mut Vec<String>) {
        if dest.addresses.is_empty() {
            errs.push("Destination must contain at least one valid address".into());
        }
        let mut seen: Vec<&str> = Vec::new();
        for addr in &dest.addresses {
            if seen.contains(&addr.as_str()) {
                errs.push(format!("Duplicate address '{addr}' is not allowed"));
                continue;
            }
            seen.push(addr);
            let valid =
                addr.parse::<IpAddr>().is_ok() || (is_domain_name(addr) && !addr.contains('*'));
            if !valid {
                errs.push(format!(
                    "Destination address '{addr}' is invalid Could not validate address {addr} as an IP or Hostname"
                ));
            }
        }
        if !(1..=65535).contains(&dest.port) {
            errs.push(format!("Invalid Port number {}", dest.port));
        }
    }
}
