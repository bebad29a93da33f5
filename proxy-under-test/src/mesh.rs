//! The mesh-wide settings Consul's `mesh` config entry gives a sidecar, read from
//! `GET /v1/config/mesh` (this proxy's own wire types, [`MeshEntry`]) and turned into what the
//! data plane applies: inbound request normalization (paths and header names with
//! underscores), the TLS floor, ceiling and TLS 1.2 cipher suites per direction, whether the
//! caller's `X-Forwarded-Client-Cert` is appended or sanitized, and whether transparent mode
//! may leave the mesh. With no entry everything is Consul's default.

use serde::Deserialize;

use crate::agent::types::null_default;
use crate::normalize::{EscapedSlashes, PathNormalization};

#[cfg(test)]
mod tests;

/// What happens to a request header whose name contains `_` (Envoy's
/// `headers_with_underscores_action`; Consul's `HeadersWithUnderscoresAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Underscores {
    /// Pass it on (Envoy's and Consul's default).
    #[default]
    Allow,
    /// Answer 400.
    RejectRequest,
    /// Drop the header, serve the request.
    DropHeader,
}

/// A TLS protocol version this proxy can speak (rustls: 1.2 and 1.3; Consul's `TLSv1_0` and
/// `TLSv1_1` floors mean 1.2 here, since nothing lower is ever offered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    /// TLS 1.2.
    Tls12,
    /// TLS 1.3.
    Tls13,
}

/// One direction's TLS bounds (`TLS.Incoming` or `TLS.Outgoing`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsBounds {
    /// `TLSMinVersion` (`None`: unset or `TLS_AUTO`).
    pub min: Option<TlsVersion>,
    /// `TLSMaxVersion` (`None`: unset or `TLS_AUTO`).
    pub max: Option<TlsVersion>,
    /// `CipherSuites` by IANA name, in the configured order; they restrict TLS 1.2 only.
    pub cipher_suites: Vec<String>,
}

/// Everything of the mesh entry the data plane applies.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MeshSettings {
    /// `HTTP.Incoming.RequestNormalization.HeadersWithUnderscoresAction`.
    pub underscores: Underscores,
    /// `TLS.Incoming`.
    pub tls_incoming: TlsBounds,
    /// `TLS.Outgoing`.
    pub tls_outgoing: TlsBounds,
    /// `HTTP.SanitizeXForwardedClientCert`: remove XFCC instead of appending the caller.
    pub sanitize_xfcc: bool,
    /// `TransparentProxy.MeshDestinationsOnly`: no passthrough out of the mesh.
    pub mesh_destinations_only: bool,
}

/// `GET /v1/config/mesh` items, as far as this proxy reads them (unknown keys ignored).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct MeshEntry {
    /// `TransparentProxy`.
    #[serde(deserialize_with = "null_default")]
    pub transparent_proxy: MeshTransparent,
    /// `TLS`.
    #[serde(rename = "TLS")]
    pub tls: Option<MeshTls>,
    /// `HTTP`.
    #[serde(rename = "HTTP")]
    pub http: Option<MeshHttp>,
}

/// `TransparentProxy` of the mesh entry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct MeshTransparent {
    /// `MeshDestinationsOnly`.
    pub mesh_destinations_only: bool,
}

/// `TLS` of the mesh entry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct MeshTls {
    /// `Incoming`.
    pub incoming: Option<MeshDirectionalTls>,
    /// `Outgoing`.
    pub outgoing: Option<MeshDirectionalTls>,
}

/// `TLS.Incoming` / `TLS.Outgoing`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct MeshDirectionalTls {
    /// `TLSMinVersion`.
    #[serde(rename = "TLSMinVersion")]
    pub min: String,
    /// `TLSMaxVersion`.
    #[serde(rename = "TLSMaxVersion")]
    pub max: String,
    /// `CipherSuites`.
    #[serde(rename = "CipherSuites", deserialize_with = "null_default")]
    pub cipher_suites: Vec<String>,
}

/// `HTTP` of the mesh entry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct MeshHttp {
    /// `SanitizeXForwardedClientCert`.
    pub sanitize_x_forwarded_client_cert: bool,
    /// `Incoming`.
    pub incoming: Option<MeshHttpIncoming>,
}

/// `HTTP.Incoming`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct MeshHttpIncoming {
    /// `RequestNormalization`.
    pub request_normalization: Option<MeshRequestNormalization>,
}

/// `HTTP.Incoming.RequestNormalization`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct MeshRequestNormalization {
    /// `InsecureDisablePathNormalization`.
    pub insecure_disable_path_normalization: bool,
    /// `MergeSlashes`.
    pub merge_slashes: bool,
    /// `PathWithEscapedSlashesAction`.
    pub path_with_escaped_slashes_action: String,
    /// `HeadersWithUnderscoresAction`.
    pub headers_with_underscores_action: String,
}

fn version(v: &str) -> Option<TlsVersion> {
    match v {
        "TLSv1_0" | "TLSv1_1" | "TLSv1_2" => Some(TlsVersion::Tls12),
        "TLSv1_3" => Some(TlsVersion::Tls13),
        _ => None,
    }
}

fn bounds(d: Option<&MeshDirectionalTls>) -> TlsBounds {
    let Some(d) = d else {
        return TlsBounds::default();
    };
    let max = match d.max.as_str() {
        // A ceiling below 1.2 leaves this proxy nothing it can speak; 1.2 is the closest.
        "TLSv1_0" | "TLSv1_1" => Some(TlsVersion::Tls12),
        other => version(other),
    };
    TlsBounds {
        min: version(&d.min).filter(|v| *v > TlsVersion::Tls12),
        max,
        cipher_suites: d.cipher_suites.clone(),
    }
}

impl MeshEntry {
    fn normalization(&self) -> Option<&MeshRequestNormalization> {
        self.http
            .as_ref()?
            .incoming
            .as_ref()?
            .request_normalization
            .as_ref()
    }

    /// The path normalization Consul's `setNormalizationOptions` configures.
    pub fn path_normalization(&self) -> PathNormalization {
        let Some(rn) = self.normalization() else {
            return PathNormalization::default();
        };
        PathNormalization {
            normalize_path: !rn.insecure_disable_path_normalization,
            merge_slashes: rn.merge_slashes,
            escaped_slashes: match rn.path_with_escaped_slashes_action.as_str() {
                "REJECT_REQUEST" => EscapedSlashes::RejectRequest,
                "UNESCAPE_AND_REDIRECT" => EscapedSlashes::UnescapeAndRedirect,
                "UNESCAPE_AND_FORWARD" => EscapedSlashes::UnescapeAndForward,
                _ => EscapedSlashes::KeepUnchanged,
            },
        }
    }

    /// The settings the data plane applies besides path normalization.
    pub fn settings(&self) -> MeshSettings {
        let underscores = match self
            .normalization()
            .map(|rn| rn.headers_with_underscores_action.as_str())
        {
            Some("REJECT_REQUEST") => Underscores::RejectRequest,
            Some("DROP_HEADER") => Underscores::DropHeader,
            _ => Underscores::Allow,
        };
        let tls = self.tls.as_ref();
        MeshSettings {
            underscores,
            tls_incoming: bounds(tls.and_then(|t| t.incoming.as_ref())),
            tls_outgoing: bounds(tls.and_then(|t| t.outgoing.as_ref())),
            sanitize_xfcc: self
                .http
                .as_ref()
                .is_some_and(|h| h.sanitize_x_forwarded_client_cert),
            mesh_destinations_only: self.transparent_proxy.mesh_destinations_only,
        }
    }
}
