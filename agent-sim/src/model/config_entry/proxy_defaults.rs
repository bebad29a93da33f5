//! The `proxy-defaults` config entry (name `global` only): opaque proxy `Config`, mode, mesh
//! gateway, expose, access logs; normalization (including the weakly decoded `Config.protocol`)
//! and validation.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{
    ACCESS_LOGS, AccessLogsConfig, ENVOY_EXTENSION_TY, EXPOSE, EnvoyExtension, ExposeConfig,
    FAILOVER_POLICY, FailoverPolicy, MESH_GATEWAY, MeshGatewayConfig, PRIORITIZE_BY_LOCALITY,
    PrioritizeByLocality, TRANSPARENT_PROXY, TransparentProxyConfig, validate_extensions,
    validate_meta, validate_mutual_tls_mode,
};
use super::{go_quote, multierror};
use crate::go::mapstructure::{Field, Schema, Ty, go_v};

/// A `proxy-defaults` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProxyDefaults {
    #[serde(rename = "Kind")]
    pub kind: String,
    #[serde(rename = "Name")]
    pub name: String,
    /// Opaque proxy configuration; `null` on the wire when never set (no `omitempty` in Go).
    #[serde(rename = "Config")]
    pub config: Option<Map<String, Value>>,
    /// `json:"-"` in Go: computed from `Config.protocol`, never written.
    #[serde(rename = "Protocol", skip_serializing)]
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
    #[serde(rename = "AccessLogs")]
    pub access_logs: AccessLogsConfig,
    #[serde(rename = "EnvoyExtensions", skip_serializing_if = "Vec::is_empty")]
    pub envoy_extensions: Vec<EnvoyExtension>,
    #[serde(rename = "FailoverPolicy", skip_serializing_if = "Option::is_none")]
    pub failover_policy: Option<FailoverPolicy>,
    #[serde(
        rename = "PrioritizeByLocality",
        skip_serializing_if = "Option::is_none"
    )]
    pub prioritize_by_locality: Option<PrioritizeByLocality>,
    #[serde(rename = "Meta", skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
    #[serde(rename = "Hash", skip_serializing)]
    pub hash: u64,
    #[serde(rename = "CreateIndex", skip_deserializing)]
    pub create_index: u64,
    #[serde(rename = "ModifyIndex", skip_deserializing)]
    pub modify_index: u64,
}

pub(crate) static SCHEMA: Schema = Schema {
    fields: &[
        Field("Kind", Ty::Str),
        Field("Name", Ty::Str),
        Field("Config", Ty::OpaqueMap),
        Field("Protocol", Ty::Str),
        Field("Mode", Ty::Str),
        Field("TransparentProxy", Ty::Struct(&TRANSPARENT_PROXY)),
        Field("MutualTLSMode", Ty::Str),
        Field("MeshGateway", Ty::Struct(&MESH_GATEWAY)),
        Field("Expose", Ty::Struct(&EXPOSE)),
        Field("AccessLogs", Ty::Struct(&ACCESS_LOGS)),
        Field("EnvoyExtensions", Ty::Slice(&ENVOY_EXTENSION_TY)),
        Field("FailoverPolicy", Ty::Struct(&FAILOVER_POLICY)),
        Field("PrioritizeByLocality", Ty::Struct(&PRIORITIZE_BY_LOCALITY)),
        Field("Meta", Ty::Map(&Ty::Str)),
        Field("Hash", Ty::Uint("uint64")),
    ],
};

/// `mapstructure.WeakDecode(config, &struct{Protocol string "mapstructure:protocol"})`: the key
/// matches case-insensitively, scalars convert to strings, anything else is an error.
pub(crate) fn weak_protocol(config: Option<&Map<String, Value>>) -> Result<String, String> {
    let Some(config) = config else {
        return Ok(String::new());
    };
    let value = config.get("protocol").or_else(|| {
        config
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("protocol"))
            .map(|(_, v)| v)
    });
    match value {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Bool(b)) => Ok(if *b { "1" } else { "0" }.into()),
        Some(Value::Number(n)) => Ok(format!("{}", n.as_f64().unwrap_or_default())),
        Some(other) => {
            let go_type = if other.is_array() {
                "[]interface {}"
            } else {
                "map[string]interface {}"
            };
            Err(format!(
                "1 error(s) decoding:\n\n* 'protocol' expected type 'string', got unconvertible type '{go_type}', value: '{}'",
                go_v(other)
            ))
        }
    }
}

impl ProxyDefaults {
    /// `ProxyConfigEntry.Normalize`: the name must be `global` (empty becomes `global`).
    pub(crate) fn normalize(&mut self) -> Result<(), String> {
        self.kind = "proxy-defaults".into();
        if !self.name.is_empty() && self.name != "global" {
            return Err(format!(
                "invalid name ({}), only \"global\" is supported",
                go_quote(&self.name)
            ));
        }
        self.name = "global".into();
        self.protocol = weak_protocol(self.config.as_ref())?;
        Ok(())
    }

    /// `ProxyConfigEntry.Validate`.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.name != "global" {
            return Err(format!(
                "invalid name ({}), only \"global\" is supported",
                go_quote(&self.name)
            ));
        }
        self.access_logs.validate()?;
        let meta_errs = validate_meta(&self.meta);
        if !meta_errs.is_empty() {
            return Err(multierror(&meta_errs));
        }
        const MAX_SOCKET_DIR_LEN: usize = 70;
        let dir = self
            .config
            .as_ref()
            .and_then(|c| c.get("envoy_hcp_metrics_bind_socket_dir"));
        if let Some(Value::String(path)) = dir
            && path.len() > MAX_SOCKET_DIR_LEN
        {
            return Err(format!(
                "Config: envoy_hcp_metrics_bind_socket_dir length {} exceeds max {MAX_SOCKET_DIR_LEN}",
                path.len()
            ));
        }
        let ext_errs = validate_extensions(&self.envoy_extensions);
        if !ext_errs.is_empty() {
            return Err(multierror(&ext_errs));
        }
        if let Some(fp) = &self.failover_policy
            && !matches!(fp.mode.as_str(), "" | "sequential" | "order-by-locality")
        {
            return Err(
                "Failover-policy mode must be one of '', 'sequential', or 'order-by-locality'"
                    .into(),
            );
        }
        PrioritizeByLocality::validate(self.prioritize_by_locality.as_ref())?;
        validate_mutual_tls_mode(&self.mutual_tls_mode)
    }
}
