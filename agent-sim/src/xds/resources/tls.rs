//! TLS material: the sidecar's own leaf and the roots, inline in each TLS context (Consul up to
//! the SDS change, `makeCommonTLSContext`) or as SDS secrets `connect-leaf` / `connect-root`
//! (newest Consul, `secrets.go`), plus the transport sockets that carry them.

use envoy_types::pb::envoy::config::core::v3::{
    AggregatedConfigSource, ApiVersion, ConfigSource, DataSource, TransportSocket,
    config_source::ConfigSourceSpecifier, data_source::Specifier, transport_socket::ConfigType,
};
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::tls_parameters::TlsProtocol;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CertificateValidationContext, CommonTlsContext, DownstreamTlsContext, SdsSecretConfig, Secret,
    TlsCertificate, TlsParameters, UpstreamTlsContext, common_tls_context::ValidationContextType,
    secret,
};
use envoy_types::pb::envoy::r#type::matcher::v3::{StringMatcher, string_matcher::MatchPattern};
use envoy_types::pb::google::protobuf::BoolValue;

use super::any;
use super::snapshot::Snapshot;
use crate::model::config_entry::{MeshDirectionalTlsConfig, envoy_cipher_suite};
use crate::xds::types::TlsMode;

/// SDS name of the sidecar's leaf.
pub(crate) const LEAF_SECRET: &str = "connect-leaf";
/// SDS name of the roots.
pub(crate) const ROOT_SECRET: &str = "connect-root";

/// The two SDS secrets, each only when its material is present (`secretsFromSnapshotConnectProxy`).
pub(crate) fn secrets(snap: &Snapshot) -> Vec<Secret> {
    let mut out = Vec::new();
    if !snap.leaf.cert_pem.is_empty() {
        out.push(Secret {
            name: LEAF_SECRET.to_owned(),
            r#type: Some(secret::Type::TlsCertificate(leaf_certificate(snap))),
        });
    }
    if !snap.roots_pem.is_empty() {
        out.push(Secret {
            name: ROOT_SECRET.to_owned(),
            r#type: Some(secret::Type::ValidationContext(
                CertificateValidationContext {
                    trusted_ca: Some(inline(&snap.roots_pem)),
                    ..Default::default()
                },
            )),
        });
    }
    out
}

/// The public listener's transport socket: mTLS, client certificate required.
pub(crate) fn downstream_socket(snap: &Snapshot, mode: TlsMode, alpn: &[&str]) -> TransportSocket {
    let incoming = snap.mesh.as_ref().and_then(|m| m.tls_incoming());
    let mut common = match mode {
        TlsMode::Inline => inline_common(snap, None, incoming),
        TlsMode::Sds => CommonTlsContext {
            tls_params: Some(tls_params(incoming)),
            tls_certificate_sds_secret_configs: vec![sds_ref(LEAF_SECRET)],
            validation_context_type: Some(ValidationContextType::ValidationContextSdsSecretConfig(
                sds_ref(ROOT_SECRET),
            )),
            ..Default::default()
        },
    };
    common.alpn_protocols = alpn.iter().map(|s| (*s).to_owned()).collect();
    let ctx = DownstreamTlsContext {
        common_tls_context: Some(common),
        require_client_certificate: Some(BoolValue { value: true }),
        ..Default::default()
    };
    socket(any(&ctx))
}

/// An upstream cluster's transport socket: present the leaf, trust the roots, accept only the
/// target's SPIFFE IDs (deprecated `match_subject_alt_names`, as Consul's `injectSANMatcher`),
/// SNI = `sni`. Always inline: the newest Consul's `secrets.go` names the public listener as the
/// only context referring to the SDS secrets.
pub(crate) fn upstream_socket(snap: &Snapshot, sans: &[String], sni: &str) -> TransportSocket {
    let outgoing = snap.mesh.as_ref().and_then(|m| m.tls_outgoing());
    let ctx = UpstreamTlsContext {
        common_tls_context: Some(inline_common(snap, Some(sans), outgoing)),
        sni: sni.to_owned(),
        ..Default::default()
    };
    socket(any(&ctx))
}

/// `makeTLSParametersFromProxyTLSConfig`: the mesh entry's floor, ceiling and suites for one
/// direction (Envoy's BoringSSL names; unknown versions and suites left out), or empty.
pub(crate) fn tls_params(dir: Option<&MeshDirectionalTlsConfig>) -> TlsParameters {
    let Some(dir) = dir else {
        return TlsParameters::default();
    };
    let version = |v: &str| match v {
        "TLS_AUTO" => Some(TlsProtocol::TlsAuto),
        "TLSv1_0" => Some(TlsProtocol::TlSv10),
        "TLSv1_1" => Some(TlsProtocol::TlSv11),
        "TLSv1_2" => Some(TlsProtocol::TlSv12),
        "TLSv1_3" => Some(TlsProtocol::TlSv13),
        _ => None,
    };
    TlsParameters {
        tls_minimum_protocol_version: version(&dir.tls_min_version).map_or(0, |v| v as i32),
        tls_maximum_protocol_version: version(&dir.tls_max_version).map_or(0, |v| v as i32),
        cipher_suites: dir
            .cipher_suites
            .iter()
            .filter_map(|c| envoy_cipher_suite(c))
            .map(str::to_owned)
            .collect(),
        ..Default::default()
    }
}

fn inline_common(
    snap: &Snapshot,
    sans: Option<&[String]>,
    dir: Option<&MeshDirectionalTlsConfig>,
) -> CommonTlsContext {
    let trusted = (!snap.roots_pem.is_empty()).then(|| inline(&snap.roots_pem));
    CommonTlsContext {
        tls_params: Some(tls_params(dir)),
        tls_certificates: vec![leaf_certificate(snap)],
        validation_context_type: Some(ValidationContextType::ValidationContext(san_context(
            trusted,
            sans.unwrap_or_default(),
        ))),
        ..Default::default()
    }
}

#[allow(deprecated)] // Consul writes the deprecated field (`//nolint:staticcheck`)
fn san_context(trusted_ca: Option<DataSource>, sans: &[String]) -> CertificateValidationContext {
    CertificateValidationContext {
        trusted_ca,
        match_subject_alt_names: sans
            .iter()
            .map(|s| StringMatcher {
                match_pattern: Some(MatchPattern::Exact(s.clone())),
                ignore_case: false,
            })
            .collect(),
        ..Default::default()
    }
}

fn leaf_certificate(snap: &Snapshot) -> TlsCertificate {
    TlsCertificate {
        certificate_chain: Some(inline(&snap.leaf.cert_pem)),
        private_key: Some(inline(&snap.leaf.key_pem)),
        ..Default::default()
    }
}

fn inline(s: &str) -> DataSource {
    DataSource {
        specifier: Some(Specifier::InlineString(s.to_owned())),
        ..Default::default()
    }
}

/// `{name, sds_config: {ads: {}, resource_api_version: V3}}`.
pub(crate) fn sds_ref(name: &str) -> SdsSecretConfig {
    SdsSecretConfig {
        name: name.to_owned(),
        sds_config: Some(ads_source()),
    }
}

/// `{ads: {}, resource_api_version: V3}`.
pub(crate) fn ads_source() -> ConfigSource {
    ConfigSource {
        resource_api_version: ApiVersion::V3 as i32,
        config_source_specifier: Some(ConfigSourceSpecifier::Ads(AggregatedConfigSource {})),
        ..Default::default()
    }
}

fn socket(typed: envoy_types::pb::google::protobuf::Any) -> TransportSocket {
    TransportSocket {
        name: "tls".to_owned(),
        config_type: Some(ConfigType::TypedConfig(typed)),
    }
}
