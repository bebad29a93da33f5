//! JWT on the public listener, as Consul's `agent/xds/jwt_authn.go` and `clusters.go`
//! (`makeJWTProviderCluster`) render it: one `envoy.filters.http.jwt_authn` provider per
//! provider the destination's intentions (or their permissions) name, payload written to
//! metadata `jwt_payload_<name>`, one rule on prefix `/` requiring each provider OR
//! `allow_missing_or_failed` (so the RBAC filter, not this one, decides: a missing or bad token
//! is a 403 from RBAC), and a `jwks_cluster_<name>` cluster for every remote provider stored.
//!
//! Deliberately as Consul does it: `CacheDuration` is a `time.Duration` but its nanoseconds
//! go into `cache_duration.seconds` (`int64(r.CacheDuration)`), so a 2 s cache becomes
//! 2,000,000,000 s; `ClockSkewSeconds` and `CacheConfig` are not rendered at all (Envoy's own
//! 60 s skew applies); a remote JWKS without `JWKSCluster` gets a `STATIC` cluster (the zero
//! `Cluster_Type`); the request timeout is whole seconds of `RequestTimeoutMs`.

use std::collections::BTreeMap;

use envoy_types::pb::envoy::config::cluster::v3::{
    Cluster,
    cluster::{ClusterDiscoveryType, DiscoveryType},
};
use envoy_types::pb::envoy::config::core::v3::{
    Address, BackoffStrategy, DataSource, HttpUri, RetryPolicy, SocketAddress, TransportSocket,
    address, data_source, http_uri, socket_address, transport_socket,
};
use envoy_types::pb::envoy::config::endpoint::v3::{
    ClusterLoadAssignment, Endpoint, LbEndpoint, LocalityLbEndpoints, lb_endpoint,
};
use envoy_types::pb::envoy::config::route::v3::{RouteMatch, route_match};
use envoy_types::pb::envoy::extensions::filters::http::jwt_authn::v3::{
    JwksAsyncFetch, JwtAuthentication, JwtHeader, JwtProvider, JwtRequirement,
    JwtRequirementAndList, JwtRequirementOrList, RemoteJwks, RequirementRule, jwt_provider,
    jwt_requirement, requirement_rule,
};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpFilter, http_filter,
};
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CertificateProviderPluginInstance, CertificateValidationContext, CommonTlsContext,
    UpstreamTlsContext, common_tls_context::ValidationContextType,
};
use envoy_types::pb::google::protobuf::{Any, Duration, Empty, UInt32Value};
use prost::{Message, Name};

use super::any;
use super::snapshot::Snapshot;
use crate::model::config_entry::remote_host_port;
use crate::model::config_entry::{
    IntentionJwtProvider, JwksTlsCertificate, JwtProviderConfigEntry, RemoteJwks as Remote,
};
use crate::model::intention::Intention;

/// The filter's name, also the metadata namespace the RBAC matchers read.
pub(crate) const FILTER: &str = "envoy.filters.http.jwt_authn";

/// `buildPayloadInMetadataKey`: `jwt_payload_<provider>`.
pub(crate) fn payload_key(provider: &str) -> String {
    format!("jwt_payload_{provider}")
}

/// `collectJWTProviders`: permission-level providers first, then the intention's own.
fn collect(ixn: &Intention) -> Vec<&IntentionJwtProvider> {
    let mut out: Vec<&IntentionJwtProvider> = ixn
        .permissions
        .iter()
        .filter_map(|p| p.jwt.as_ref())
        .flat_map(|j| j.providers.iter())
        .collect();
    if let Some(j) = &ixn.jwt {
        out.extend(j.providers.iter());
    }
    out
}

/// The first provider an intention names that is not stored: Consul fails the whole listener
/// build with this text (`provider specified in intention does not exist`).
pub(crate) fn missing_provider(snap: &Snapshot) -> Option<String> {
    snap.intentions
        .iter()
        .flat_map(collect)
        .find(|p| !snap.jwt_providers.contains_key(&p.name))
        .map(|p| {
            format!(
                "provider specified in intention does not exist. Provider name: {}",
                p.name
            )
        })
}

/// `makeJWTAuthFilter`; `None` when no intention asks for a JWT.
pub(crate) fn filter(snap: &Snapshot) -> Option<HttpFilter> {
    let mut providers: BTreeMap<String, JwtProvider> = BTreeMap::new();
    let mut reqs = Vec::new();
    for ixn in &snap.intentions {
        for p in collect(ixn) {
            if providers.contains_key(&p.name) {
                continue;
            }
            let ce = snap.jwt_providers.get(&p.name)?;
            providers.insert(p.name.clone(), provider(ce)?);
            reqs.push(requirement(&p.name));
        }
    }
    if reqs.is_empty() {
        return None;
    }
    let requires = if reqs.len() == 1 {
        reqs.remove(0)
    } else {
        JwtRequirement {
            requires_type: Some(jwt_requirement::RequiresType::RequiresAll(
                JwtRequirementAndList { requirements: reqs },
            )),
        }
    };
    let head = JwtAuthentication {
        rules: vec![RequirementRule {
            r#match: Some(RouteMatch {
                path_specifier: Some(route_match::PathSpecifier::Prefix("/".into())),
                ..Default::default()
            }),
            requirement_type: Some(requirement_rule::RequirementType::Requires(requires)),
        }],
        ..Default::default()
    };
    // `providers` is a map: one-entry maps in name order encode deterministically.
    let mut value = head.encode_to_vec();
    for (name, p) in providers {
        let one = JwtAuthentication {
            providers: [(name, p)].into_iter().collect(),
            ..Default::default()
        };
        value.extend(one.encode_to_vec());
    }
    Some(HttpFilter {
        name: FILTER.to_owned(),
        config_type: Some(http_filter::ConfigType::TypedConfig(Any {
            type_url: JwtAuthentication::type_url(),
            value,
        })),
        ..Default::default()
    })
}

/// `providerToJWTRequirement`: the provider OR `allow_missing_or_failed`.
fn requirement(name: &str) -> JwtRequirement {
    JwtRequirement {
        requires_type: Some(jwt_requirement::RequiresType::RequiresAny(
            JwtRequirementOrList {
                requirements: vec![
                    JwtRequirement {
                        requires_type: Some(jwt_requirement::RequiresType::ProviderName(
                            name.to_owned(),
                        )),
                    },
                    JwtRequirement {
                        requires_type: Some(jwt_requirement::RequiresType::AllowMissingOrFailed(
                            Empty {},
                        )),
                    },
                ],
            },
        )),
    }
}

/// `buildJWTProviderConfig`; `None` without a key set (Consul errors).
fn provider(p: &JwtProviderConfigEntry) -> Option<JwtProvider> {
    let set = p.json_web_key_set.as_ref()?;
    let mut out = JwtProvider {
        issuer: p.issuer.clone(),
        audiences: p.audiences.clone(),
        payload_in_metadata: payload_key(&p.name),
        ..Default::default()
    };
    if let Some(f) = &p.forwarding {
        out.forward_payload_header = f.header_name.clone();
        out.pad_forward_payload_header = f.pad_forward_payload_header;
    }
    out.jwks_source_specifier = Some(if let Some(local) = &set.local {
        let specifier = if !local.jwks.is_empty() {
            data_source::Specifier::InlineString(local.decoded_jwks()?)
        } else {
            data_source::Specifier::Filename(local.filename.clone())
        };
        jwt_provider::JwksSourceSpecifier::LocalJwks(DataSource {
            specifier: Some(specifier),
            ..Default::default()
        })
    } else {
        let remote = set.remote.as_ref().filter(|r| !r.uri.is_empty())?;
        jwt_provider::JwksSourceSpecifier::RemoteJwks(remote_jwks(remote, &p.name))
    });
    for loc in &p.locations {
        if let Some(h) = &loc.header {
            out.forward = h.forward;
            out.from_headers.push(JwtHeader {
                name: h.name.clone(),
                value_prefix: h.value_prefix.clone(),
            });
        } else if let Some(q) = &loc.query_param {
            out.from_params.push(q.name.clone());
        } else if let Some(c) = &loc.cookie {
            out.from_cookies.push(c.name.clone());
        }
    }
    Some(out)
}

/// `makeRemoteJWKS`.
fn remote_jwks(r: &Remote, provider: &str) -> RemoteJwks {
    let retry_policy = r.retry_policy.as_ref().map(|rp| RetryPolicy {
        retry_back_off: rp.retry_policy_back_off.as_ref().map(|b| BackoffStrategy {
            base_interval: Some(duration_ns(b.base_interval)),
            max_interval: Some(duration_ns(b.max_interval)),
        }),
        num_retries: Some(UInt32Value {
            value: u32::try_from(rp.num_retries).unwrap_or(0),
        }),
        ..Default::default()
    });
    RemoteJwks {
        http_uri: Some(HttpUri {
            uri: r.uri.clone(),
            timeout: Some(Duration {
                seconds: r.request_timeout_ms / 1000,
                nanos: 0,
            }),
            http_upstream_type: Some(http_uri::HttpUpstreamType::Cluster(cluster_name(provider))),
        }),
        // Consul's unit slip, kept: the nanoseconds become seconds.
        cache_duration: (r.cache_duration > 0).then_some(Duration {
            seconds: r.cache_duration,
            nanos: 0,
        }),
        async_fetch: Some(JwksAsyncFetch {
            fast_listener: r.fetch_asynchronously,
            ..Default::default()
        }),
        retry_policy,
    }
}

/// `structs.DurationToProto`.
fn duration_ns(ns: i64) -> Duration {
    Duration {
        seconds: ns / 1_000_000_000,
        nanos: i32::try_from(ns % 1_000_000_000).unwrap_or(0),
    }
}

/// `makeJWKSClusterName`.
fn cluster_name(provider: &str) -> String {
    format!("jwks_cluster_{provider}")
}

/// One cluster per stored remote provider (`clustersFromSnapshotConnectProxy`); a URI that does
/// not parse is skipped, as Consul logs and skips it.
pub(crate) fn clusters(snap: &Snapshot) -> Vec<Cluster> {
    snap.jwt_providers
        .values()
        .filter_map(jwks_cluster)
        .collect()
}

/// `makeJWTProviderCluster`.
fn jwks_cluster(p: &JwtProviderConfigEntry) -> Option<Cluster> {
    let remote = p.json_web_key_set.as_ref()?.remote.as_ref()?;
    let (host, scheme, port) = remote_host_port(&remote.uri)?;
    let name = cluster_name(&p.name);
    let kind = match remote
        .jwks_cluster
        .as_ref()
        .map(|c| c.discovery_type.as_str())
    {
        None => DiscoveryType::Static,
        Some("STATIC") => DiscoveryType::Static,
        Some("LOGICAL_DNS") => DiscoveryType::LogicalDns,
        Some("EDS") => DiscoveryType::Eds,
        Some("ORIGINAL_DST") => DiscoveryType::OriginalDst,
        Some(_) => DiscoveryType::StrictDns,
    };
    let endpoint = LbEndpoint {
        host_identifier: Some(lb_endpoint::HostIdentifier::Endpoint(Endpoint {
            address: Some(Address {
                address: Some(address::Address::SocketAddress(SocketAddress {
                    address: host,
                    port_specifier: Some(socket_address::PortSpecifier::PortValue(u32::from(port))),
                    ..Default::default()
                })),
            }),
            ..Default::default()
        })),
        ..Default::default()
    };
    let mut cluster = Cluster {
        name: name.clone(),
        cluster_discovery_type: Some(ClusterDiscoveryType::Type(kind as i32)),
        load_assignment: Some(ClusterLoadAssignment {
            cluster_name: name,
            endpoints: vec![LocalityLbEndpoints {
                lb_endpoints: vec![endpoint],
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    if let Some(c) = &remote.jwks_cluster {
        let secs = c.connect_timeout / 1_000_000_000;
        if secs > 0 {
            cluster.connect_timeout = Some(Duration {
                seconds: secs,
                nanos: 0,
            });
        }
    }
    if scheme == "https" {
        let tls_certs = remote
            .jwks_cluster
            .as_ref()
            .and_then(|c| c.tls_certificates.as_ref());
        let tls = UpstreamTlsContext {
            common_tls_context: Some(CommonTlsContext {
                validation_context_type: Some(ValidationContextType::ValidationContext(
                    cert_validation_context(tls_certs),
                )),
                ..Default::default()
            }),
            ..Default::default()
        };
        cluster.transport_socket = Some(TransportSocket {
            name: "tls".to_owned(),
            config_type: Some(transport_socket::ConfigType::TypedConfig(any(&tls))),
        });
    }
    Some(cluster)
}

/// `makeJWTCertValidationContext`: the trusted CA from whichever source is set (a later one in
/// Go's order Filename, EnvironmentVariable, InlineString, InlineBytes replacing an earlier
/// one) and the CA certificate provider instance; empty without `TLSCertificates` (Envoy then
/// verifies nothing).
fn cert_validation_context(tls: Option<&JwksTlsCertificate>) -> CertificateValidationContext {
    let mut vc = CertificateValidationContext::default();
    let Some(tls) = tls else {
        return vc;
    };
    if let Some(ca) = &tls.trusted_ca {
        let mut specifier = None;
        if !ca.filename.is_empty() {
            specifier = Some(data_source::Specifier::Filename(ca.filename.clone()));
        }
        if !ca.environment_variable.is_empty() {
            specifier = Some(data_source::Specifier::EnvironmentVariable(
                ca.environment_variable.clone(),
            ));
        }
        if !ca.inline_string.is_empty() {
            specifier = Some(data_source::Specifier::InlineString(
                ca.inline_string.clone(),
            ));
        }
        // The bytes as the entry's JSON string gave them (see `JwksTlsCertTrustedCa`).
        if !ca.inline_bytes.is_empty() {
            specifier = Some(data_source::Specifier::InlineBytes(
                ca.inline_bytes.as_bytes().to_vec(),
            ));
        }
        vc.trusted_ca = Some(DataSource {
            specifier,
            ..Default::default()
        });
    }
    if let Some(pi) = &tls.ca_certificate_provider_instance {
        vc.ca_certificate_provider_instance = Some(CertificateProviderPluginInstance {
            instance_name: pi.instance_name.clone(),
            certificate_name: pi.certificate_name.clone(),
        });
    }
    vc
}
