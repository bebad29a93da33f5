//! Types shared by several config entry kinds (mesh gateway, transparent proxy, expose, access
//! logs, header modifiers, Envoy extensions), serde helpers for Go's `omitempty` and duration
//! encodings, and Consul's `Meta` limits.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::go::duration::GoDuration;
use crate::go::mapstructure::{Field, Schema, Ty};

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

pub(crate) fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

pub(crate) fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

pub(crate) fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// A `time.Duration` field that a custom Go `MarshalJSON` writes as `"15s"` (omitted when 0).
pub(crate) fn ser_duration_string<S: Serializer>(ns: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&GoDuration(*ns).to_string())
}

/// `structs.MeshGatewayConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MeshGatewayConfig {
    #[serde(rename = "Mode", skip_serializing_if = "String::is_empty")]
    pub mode: String,
}

pub(crate) static MESH_GATEWAY: Schema = Schema {
    fields: &[Field("Mode", Ty::Str)],
};

/// `structs.TransparentProxyConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TransparentProxyConfig {
    #[serde(rename = "OutboundListenerPort", skip_serializing_if = "is_zero_i64")]
    pub outbound_listener_port: i64,
    #[serde(rename = "DialedDirectly", skip_serializing_if = "is_false")]
    pub dialed_directly: bool,
}

impl TransparentProxyConfig {
    pub(crate) fn is_zero(&self) -> bool {
        self.outbound_listener_port == 0 && !self.dialed_directly
    }
}

pub(crate) static TRANSPARENT_PROXY: Schema = Schema {
    fields: &[
        Field("OutboundListenerPort", Ty::Int("int")),
        Field("DialedDirectly", Ty::Bool),
    ],
};

/// `structs.ExposeConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExposeConfig {
    #[serde(rename = "Checks", skip_serializing_if = "is_false")]
    pub checks: bool,
    #[serde(rename = "Paths", skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<ExposePath>,
}

impl ExposeConfig {
    pub(crate) fn is_zero(&self) -> bool {
        !self.checks && self.paths.is_empty()
    }
}

/// `structs.ExposePath`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExposePath {
    #[serde(rename = "ListenerPort", skip_serializing_if = "is_zero_i64")]
    pub listener_port: i64,
    #[serde(rename = "Path", skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(rename = "LocalPathPort", skip_serializing_if = "is_zero_i64")]
    pub local_path_port: i64,
    #[serde(rename = "Protocol", skip_serializing_if = "String::is_empty")]
    pub protocol: String,
    #[serde(rename = "ParsedFromCheck", skip_serializing_if = "is_false")]
    pub parsed_from_check: bool,
}

static EXPOSE_PATH: Schema = Schema {
    fields: &[
        Field("ListenerPort", Ty::Int("int")),
        Field("Path", Ty::Str),
        Field("LocalPathPort", Ty::Int("int")),
        Field("Protocol", Ty::Str),
        Field("ParsedFromCheck", Ty::Bool),
    ],
};
static EXPOSE_PATH_TY: Ty = Ty::Struct(&EXPOSE_PATH);
pub(crate) static EXPOSE: Schema = Schema {
    fields: &[
        Field("Checks", Ty::Bool),
        Field("Paths", Ty::Slice(&EXPOSE_PATH_TY)),
    ],
};

/// `structs.AccessLogsConfig` (proxy-defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AccessLogsConfig {
    #[serde(rename = "Enabled", skip_serializing_if = "is_false")]
    pub enabled: bool,
    #[serde(rename = "DisableListenerLogs", skip_serializing_if = "is_false")]
    pub disable_listener_logs: bool,
    #[serde(rename = "Type", skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(rename = "Path", skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(rename = "JSONFormat", skip_serializing_if = "String::is_empty")]
    pub json_format: String,
    #[serde(rename = "TextFormat", skip_serializing_if = "String::is_empty")]
    pub text_format: String,
}

impl AccessLogsConfig {
    /// `AccessLogsConfig.Validate`.
    pub(crate) fn validate(&self) -> Result<(), String> {
        match self.kind.as_str() {
            "" | "stdout" | "stderr" => {}
            "file" if self.path.is_empty() => {
                return Err("path must be specified when using file type access logs".into());
            }
            "file" => {}
            other => return Err(format!("invalid access log type: {other}")),
        }
        if !self.json_format.is_empty() && !self.text_format.is_empty() {
            return Err("cannot specify both access log JSONFormat and TextFormat".into());
        }
        if self.kind != "file" && !self.path.is_empty() {
            return Err("path is only valid for file type access logs".into());
        }
        if !self.json_format.is_empty()
            && let Err(e) = crate::go::decode::parse_json(self.json_format.as_bytes())
        {
            // json.Unmarshal words a truncated document differently from a json.Decoder.
            let text = match e.0.as_str() {
                "EOF" | "unexpected EOF" => "unexpected end of JSON input".to_owned(),
                other => other.to_owned(),
            };
            return Err(format!("invalid access log json for JSON format: {text}"));
        }
        Ok(())
    }
}

pub(crate) static ACCESS_LOGS: Schema = Schema {
    fields: &[
        Field("Enabled", Ty::Bool),
        Field("DisableListenerLogs", Ty::Bool),
        Field("Type", Ty::Str),
        Field("Path", Ty::Str),
        Field("JSONFormat", Ty::Str),
        Field("TextFormat", Ty::Str),
    ],
};

/// `structs.EnvoyExtension` (no JSON tags in Go: every field is always written).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnvoyExtension {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Required")]
    pub required: bool,
    #[serde(rename = "Arguments")]
    pub arguments: Option<Map<String, Value>>,
    #[serde(rename = "ConsulVersion")]
    pub consul_version: String,
    #[serde(rename = "EnvoyVersion")]
    pub envoy_version: String,
}

static ENVOY_EXTENSION: Schema = Schema {
    fields: &[
        Field("Name", Ty::Str),
        Field("Required", Ty::Bool),
        Field("Arguments", Ty::OpaqueMap),
        Field("ConsulVersion", Ty::Str),
        Field("EnvoyVersion", Ty::Str),
    ],
};
pub(crate) static ENVOY_EXTENSION_TY: Ty = Ty::Struct(&ENVOY_EXTENSION);

/// `envoyextensions.ValidateExtensions`, reduced to what needs no extension registry.
pub(crate) fn validate_extensions(exts: &[EnvoyExtension]) -> Vec<String> {
    exts.iter()
        .enumerate()
        .filter(|(_, e)| e.name.is_empty())
        .map(|(i, _)| format!("invalid EnvoyExtensions[{i}]: Name is required"))
        .collect()
}

/// `structs.HTTPHeaderModifiers`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpHeaderModifiers {
    #[serde(rename = "Add", skip_serializing_if = "BTreeMap::is_empty")]
    pub add: BTreeMap<String, String>,
    #[serde(rename = "Set", skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, String>,
    #[serde(rename = "Remove", skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
}

pub(crate) static HEADER_MODIFIERS: Schema = Schema {
    fields: &[
        Field("Add", Ty::Map(&Ty::Str)),
        Field("Set", Ty::Map(&Ty::Str)),
        Field("Remove", Ty::Slice(&Ty::Str)),
    ],
};

/// `structs.ServiceResolverFailoverPolicy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FailoverPolicy {
    #[serde(rename = "Mode", skip_serializing_if = "String::is_empty")]
    pub mode: String,
    #[serde(rename = "Regions", skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<String>,
}

pub(crate) static FAILOVER_POLICY: Schema = Schema {
    fields: &[
        Field("Mode", Ty::Str),
        Field("Regions", Ty::Slice(&Ty::Str)),
    ],
};

/// `structs.ServiceResolverPrioritizeByLocality`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PrioritizeByLocality {
    #[serde(rename = "Mode", skip_serializing_if = "String::is_empty")]
    pub mode: String,
}

impl PrioritizeByLocality {
    /// CE: any non-zero value needs Enterprise (the trailing space is Consul's).
    pub(crate) fn validate(this: Option<&Self>) -> Result<(), String> {
        match this {
            Some(p) if !p.mode.is_empty() => {
                Err("Prioritize-by-locality requires Consul Enterprise ".into())
            }
            _ => Ok(()),
        }
    }
}

pub(crate) static PRIORITIZE_BY_LOCALITY: Schema = Schema {
    fields: &[Field("Mode", Ty::Str)],
};

pub(crate) const META_MAX_KEY_PAIRS: usize = 64;
pub(crate) const META_KEY_MAX_LENGTH: usize = 128;
pub(crate) const META_VALUE_MAX_LENGTH: usize = 512;

/// `validateConfigEntryMeta`: the individual errors (Go puts them in a multierror).
pub(crate) fn validate_meta(meta: &BTreeMap<String, String>) -> Vec<String> {
    let mut errs = Vec::new();
    if meta.len() > META_MAX_KEY_PAIRS {
        errs.push(format!(
            "Meta exceeds maximum element count {META_MAX_KEY_PAIRS}"
        ));
    }
    for (k, v) in meta {
        if k.len() > META_KEY_MAX_LENGTH {
            errs.push(format!(
                "Meta key {} exceeds maximum length {META_KEY_MAX_LENGTH}",
                super::go_quote(k)
            ));
        }
        if v.len() > META_VALUE_MAX_LENGTH {
            errs.push(format!(
                "Meta value for key {} exceeds maximum length {META_VALUE_MAX_LENGTH}",
                super::go_quote(k)
            ));
        }
    }
    errs
}

/// `MutualTLSMode.validate`.
pub(crate) fn validate_mutual_tls_mode(mode: &str) -> Result<(), String> {
    match mode {
        "" | "strict" | "permissive" => Ok(()),
        other => Err(format!(
            "Invalid MutualTLSMode {}. Must be one of \"\", \"strict\", or \"permissive\".",
            super::go_quote(other)
        )),
    }
}
