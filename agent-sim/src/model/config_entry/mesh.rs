//! The `mesh` config entry (kind `mesh`, always named `mesh`): transparent-proxy
//! `MeshDestinationsOnly`, `AllowEnablingPermissiveMutualTLS`, `ValidateClusters`, the mesh's
//! TLS floor, ceiling and cipher suites per direction, XFCC sanitizing and inbound request
//! normalization, peering through mesh gateways; Consul's validation texts
//! (`config_entry_mesh.go`, `types/tls.go`) and the Envoy spellings the xDS builders need.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::{is_false, validate_meta};
use super::multierror;
use crate::go::mapstructure::{Field, Schema, Ty};

/// The only name a `mesh` entry has (`structs.MeshConfigMesh`).
pub const MESH_NAME: &str = "mesh";

/// A `mesh` entry. There is no `Name` field: Go's `GetName` always answers `mesh`, and a body
/// that carries `Name` is refused as an unknown key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MeshConfigEntry {
    #[serde(rename = "Kind")]
    pub kind: String,
    /// Never on the wire: kept so every entry answers `name()` the same way.
    #[serde(skip)]
    pub name: String,
    #[serde(rename = "TransparentProxy")]
    pub transparent_proxy: TransparentProxyMeshConfig,
    #[serde(
        rename = "AllowEnablingPermissiveMutualTLS",
        skip_serializing_if = "is_false"
    )]
    pub allow_enabling_permissive_mutual_tls: bool,
    #[serde(rename = "ValidateClusters", skip_serializing_if = "is_false")]
    pub validate_clusters: bool,
    #[serde(rename = "TLS", skip_serializing_if = "Option::is_none")]
    pub tls: Option<MeshTlsConfig>,
    #[serde(rename = "HTTP", skip_serializing_if = "Option::is_none")]
    pub http: Option<MeshHttpConfig>,
    #[serde(rename = "Peering", skip_serializing_if = "Option::is_none")]
    pub peering: Option<PeeringMeshConfig>,
    #[serde(rename = "Meta", skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
    #[serde(rename = "Hash", skip_serializing)]
    pub hash: u64,
    #[serde(rename = "CreateIndex", skip_deserializing)]
    pub create_index: u64,
    #[serde(rename = "ModifyIndex", skip_deserializing)]
    pub modify_index: u64,
}

/// `TransparentProxyMeshConfig` (no `omitempty`: always written).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TransparentProxyMeshConfig {
    #[serde(rename = "MeshDestinationsOnly")]
    pub mesh_destinations_only: bool,
}

/// `MeshTLSConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MeshTlsConfig {
    #[serde(rename = "Incoming", skip_serializing_if = "Option::is_none")]
    pub incoming: Option<MeshDirectionalTlsConfig>,
    #[serde(rename = "Outgoing", skip_serializing_if = "Option::is_none")]
    pub outgoing: Option<MeshDirectionalTlsConfig>,
}

/// `MeshDirectionalTLSConfig`: versions as `TLSv1_2` / `TLS_AUTO`, suites by IANA name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MeshDirectionalTlsConfig {
    #[serde(rename = "TLSMinVersion", skip_serializing_if = "String::is_empty")]
    pub tls_min_version: String,
    #[serde(rename = "TLSMaxVersion", skip_serializing_if = "String::is_empty")]
    pub tls_max_version: String,
    #[serde(rename = "CipherSuites", skip_serializing_if = "Vec::is_empty")]
    pub cipher_suites: Vec<String>,
}

/// `MeshHTTPConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MeshHttpConfig {
    #[serde(rename = "SanitizeXForwardedClientCert")]
    pub sanitize_x_forwarded_client_cert: bool,
    #[serde(rename = "Incoming", skip_serializing_if = "Option::is_none")]
    pub incoming: Option<MeshDirectionalHttpConfig>,
}

/// `MeshDirectionalHTTPConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MeshDirectionalHttpConfig {
    #[serde(
        rename = "RequestNormalization",
        skip_serializing_if = "Option::is_none"
    )]
    pub request_normalization: Option<RequestNormalization>,
}

/// `RequestNormalizationMeshConfig` (no `omitempty` on its fields).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RequestNormalization {
    #[serde(rename = "InsecureDisablePathNormalization")]
    pub insecure_disable_path_normalization: bool,
    #[serde(rename = "MergeSlashes")]
    pub merge_slashes: bool,
    #[serde(rename = "PathWithEscapedSlashesAction")]
    pub path_with_escaped_slashes_action: String,
    #[serde(rename = "HeadersWithUnderscoresAction")]
    pub headers_with_underscores_action: String,
}

/// `PeeringMeshConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PeeringMeshConfig {
    #[serde(rename = "PeerThroughMeshGateways")]
    pub peer_through_mesh_gateways: bool,
}

static TRANSPARENT_PROXY_MESH: Schema = Schema {
    fields: &[Field("MeshDestinationsOnly", Ty::Bool)],
};
static STR_TY: Ty = Ty::Str;
static DIRECTIONAL_TLS: Schema = Schema {
    fields: &[
        Field("TLSMinVersion", Ty::Str),
        Field("TLSMaxVersion", Ty::Str),
        Field("CipherSuites", Ty::Slice(&STR_TY)),
    ],
};
static MESH_TLS: Schema = Schema {
    fields: &[
        Field("Incoming", Ty::Struct(&DIRECTIONAL_TLS)),
        Field("Outgoing", Ty::Struct(&DIRECTIONAL_TLS)),
    ],
};
static REQUEST_NORMALIZATION: Schema = Schema {
    fields: &[
        Field("InsecureDisablePathNormalization", Ty::Bool),
        Field("MergeSlashes", Ty::Bool),
        Field("PathWithEscapedSlashesAction", Ty::Str),
        Field("HeadersWithUnderscoresAction", Ty::Str),
    ],
};
static DIRECTIONAL_HTTP: Schema = Schema {
    fields: &[Field(
        "RequestNormalization",
        Ty::Struct(&REQUEST_NORMALIZATION),
    )],
};
static MESH_HTTP: Schema = Schema {
    fields: &[
        Field("SanitizeXForwardedClientCert", Ty::Bool),
        Field("Incoming", Ty::Struct(&DIRECTIONAL_HTTP)),
    ],
};
static PEERING: Schema = Schema {
    fields: &[Field("PeerThroughMeshGateways", Ty::Bool)],
};

pub(crate) static SCHEMA: Schema = Schema {
    fields: &[
        Field("Kind", Ty::Str),
        Field("TransparentProxy", Ty::Struct(&TRANSPARENT_PROXY_MESH)),
        Field("AllowEnablingPermissiveMutualTLS", Ty::Bool),
        Field("ValidateClusters", Ty::Bool),
        Field("TLS", Ty::Struct(&MESH_TLS)),
        Field("HTTP", Ty::Struct(&MESH_HTTP)),
        Field("Peering", Ty::Struct(&PEERING)),
        Field("Meta", Ty::Map(&Ty::Str)),
        Field("Hash", Ty::Uint("uint64")),
    ],
};

/// `types.tlsVersions`, sorted as `types.TLSVersions()` lists them.
const TLS_VERSIONS: [&str; 5] = ["TLS_AUTO", "TLSv1_0", "TLSv1_1", "TLSv1_2", "TLSv1_3"];

/// `types.envoyTLSCipherSuiteStrings`: IANA name -> BoringSSL name.
const ENVOY_CIPHER_SUITES: [(&str, &str); 14] = [
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-ECDSA-AES128-GCM-SHA256",
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-RSA-CHACHA20-POLY1305",
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        "ECDHE-ECDSA-AES128-SHA",
    ),
    ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"),
    ("TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"),
    ("TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        "ECDHE-ECDSA-AES256-SHA",
    ),
    ("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"),
    ("TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"),
    ("TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"),
];

/// `PathWithEscapedSlashesActionStrings()`, in Consul's order.
pub const PATH_WITH_ESCAPED_SLASHES_ACTIONS: [&str; 5] = [
    "IMPLEMENTATION_SPECIFIC_DEFAULT",
    "KEEP_UNCHANGED",
    "REJECT_REQUEST",
    "UNESCAPE_AND_REDIRECT",
    "UNESCAPE_AND_FORWARD",
];

/// `HeadersWithUnderscoresActionStrings()`, in Consul's order.
pub const HEADERS_WITH_UNDERSCORES_ACTIONS: [&str; 3] = ["ALLOW", "REJECT_REQUEST", "DROP_HEADER"];

/// The BoringSSL spelling Envoy takes for an IANA cipher suite name
/// (`MarshalEnvoyTLSCipherSuiteStrings`: unknown names are dropped).
pub fn envoy_cipher_suite(iana: &str) -> Option<&'static str> {
    ENVOY_CIPHER_SUITES
        .iter()
        .find(|(i, _)| *i == iana)
        .map(|(_, e)| *e)
}

/// `tlsVersionComparison`: only concrete versions compare.
fn version_rank(v: &str) -> Option<u8> {
    match v {
        "TLSv1_0" => Some(1),
        "TLSv1_1" => Some(2),
        "TLSv1_2" => Some(3),
        "TLSv1_3" => Some(4),
        _ => None,
    }
}

fn validate_tls_version(v: &str) -> Result<(), String> {
    if TLS_VERSIONS.contains(&v) {
        return Ok(());
    }
    Err(format!(
        "no matching TLS version found for {v}, please specify one of [{}]",
        TLS_VERSIONS.join(", ")
    ))
}

/// `validateTLSConfig` (the `ECDHCurves` check of later releases is not modelled).
fn validate_directional_tls(cfg: &MeshDirectionalTlsConfig) -> Result<(), String> {
    let (min, max) = (cfg.tls_min_version.as_str(), cfg.tls_max_version.as_str());
    if !min.is_empty() {
        validate_tls_version(min)?;
    }
    if !max.is_empty() {
        validate_tls_version(max)?;
        if let (Some(lo), Some(hi)) = (version_rank(min), version_rank(max))
            && hi < lo
        {
            return Err(format!(
                "configuring max version {max} less than the configured min version {min} is invalid"
            ));
        }
    }
    if !cfg.cipher_suites.is_empty() {
        if !matches!(min, "" | "TLS_AUTO" | "TLSv1_0" | "TLSv1_1" | "TLSv1_2") {
            return Err(format!(
                "configuring CipherSuites is only applicable to connections negotiated with TLS 1.2 or earlier, TLSMinVersion is set to {min}"
            ));
        }
        let unmatched: Vec<&str> = cipher_suites_unmatched(&cfg.cipher_suites);
        if !unmatched.is_empty() {
            return Err(format!(
                "no matching Envoy TLS cipher suite found for {}",
                unmatched.join(",")
            ));
        }
    }
    Ok(())
}

fn cipher_suites_unmatched(suites: &[String]) -> Vec<&str> {
    suites
        .iter()
        .map(String::as_str)
        .filter(|s| envoy_cipher_suite(s).is_none())
        .collect()
}

fn validate_request_normalization(rn: &RequestNormalization) -> Result<(), String> {
    let p = rn.path_with_escaped_slashes_action.as_str();
    if !p.is_empty() && !PATH_WITH_ESCAPED_SLASHES_ACTIONS.contains(&p) {
        return Err(format!(
            "no matching PathWithEscapedSlashesAction value found for {p}, please specify one of [{}]",
            PATH_WITH_ESCAPED_SLASHES_ACTIONS.join(", ")
        ));
    }
    let h = rn.headers_with_underscores_action.as_str();
    if !h.is_empty() && !HEADERS_WITH_UNDERSCORES_ACTIONS.contains(&h) {
        return Err(format!(
            "no matching HeadersWithUnderscoresAction value found for {h}, please specify one of [{}]",
            HEADERS_WITH_UNDERSCORES_ACTIONS.join(", ")
        ));
    }
    Ok(())
}

impl MeshConfigEntry {
    /// `MeshConfigEntry.Normalize`: nothing but the kind and the fixed name.
    pub(crate) fn normalize(&mut self) {
        self.kind = "mesh".into();
        self.name = MESH_NAME.into();
    }

    /// `MeshConfigEntry.Validate`.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let meta_errs = validate_meta(&self.meta);
        if !meta_errs.is_empty() {
            return Err(multierror(&meta_errs));
        }
        if let Some(tls) = &self.tls {
            if let Some(i) = &tls.incoming {
                validate_directional_tls(i)
                    .map_err(|e| format!("error in incoming TLS configuration: {e}"))?;
            }
            if let Some(o) = &tls.outgoing {
                validate_directional_tls(o)
                    .map_err(|e| format!("error in outgoing TLS configuration: {e}"))?;
            }
        }
        if let Some(rn) = self.request_normalization() {
            validate_request_normalization(rn).map_err(|e| {
                format!("error in HTTP incoming request normalization configuration: {e}")
            })?;
        }
        Ok(())
    }

    /// `GetHTTPIncomingRequestNormalization`.
    pub fn request_normalization(&self) -> Option<&RequestNormalization> {
        self.http
            .as_ref()?
            .incoming
            .as_ref()?
            .request_normalization
            .as_ref()
    }

    /// `MeshConfigTLSIncoming`.
    pub fn tls_incoming(&self) -> Option<&MeshDirectionalTlsConfig> {
        self.tls.as_ref()?.incoming.as_ref()
    }

    /// `MeshConfigTLSOutgoing`.
    pub fn tls_outgoing(&self) -> Option<&MeshDirectionalTlsConfig> {
        self.tls.as_ref()?.outgoing.as_ref()
    }

    /// `HTTP.SanitizeXForwardedClientCert`.
    pub fn sanitize_xfcc(&self) -> bool {
        self.http
            .as_ref()
            .is_some_and(|h| h.sanitize_x_forwarded_client_cert)
    }
}
