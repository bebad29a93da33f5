//! `consul connect envoy -bootstrap`'s JSON: node identity, admin, the static `local_agent`
//! cluster (HTTP/2 to the agent's gRPC port) and delta ADS with the ACL token as initial metadata.
//! Shared by `agent-sim connect envoy -bootstrap` and the conformance harness.
//!
//! The shape and key order follow Consul's `command/connect/envoy/bootstrap_tpl.go` and the
//! goldens `command/connect/envoy/testdata/defaults*.golden` / `token-*.golden` (newest source:
//! admin `access_log` instead of the deprecated `access_log_path`, HTTP/2 through
//! `typed_extension_protocol_options`, `initial_fetch_timeout: 0s`, `DELTA_GRPC`).

use std::net::SocketAddr;

use serde_json::{Map, Value, json};

mod stats_tags;
#[cfg(test)]
mod tests;

/// The static cluster that carries ADS to the agent (`xds.LocalAgentClusterName`).
pub const LOCAL_AGENT_CLUSTER: &str = "local_agent";

/// What the bootstrap is rendered from (what `consul connect envoy` learns from its flags and
/// from `GET /v1/agent/service/<proxy-id>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapParams {
    /// The proxy's service ID (`node.id`).
    pub proxy_id: String,
    /// `Proxy.DestinationServiceName` (`node.cluster`, and the `local_cluster` /
    /// `consul.source.service` stats tags).
    pub cluster: String,
    /// Namespace (`default` in CE; empty renders as `default`, as Consul's template does).
    pub namespace: String,
    /// Admin partition (`default` in CE; empty renders as `default`).
    pub partition: String,
    /// The registration's `Datacenter` (the `consul.source.datacenter` stats tag; empty: no tag,
    /// as Consul skips tags it has no value for).
    pub datacenter: String,
    /// The agent's gRPC (xDS) address.
    pub grpc_addr: SocketAddr,
    /// The ACL token sent as `x-consul-token`. Consul always writes the metadata entry: `None`
    /// renders `"value": ""` exactly as `defaults.golden` does, which the agent reads as no token.
    pub token: Option<String>,
    /// Envoy's admin listener (`-admin-bind`, default 127.0.0.1:19000).
    pub admin_bind: SocketAddr,
    /// The agent's gRPC port speaks TLS (`CONSUL_GRPC_ADDR=https://...`): the PEM of the CA to
    /// verify it with (`-grpc-ca-file` / `CONSUL_GRPC_CACERT`), rendered inline into the
    /// `local_agent` cluster's `UpstreamTlsContext` as Consul's template does (`AgentCAPEM`).
    pub agent_ca_pem: Option<String>,
}

/// Renders the bootstrap JSON.
pub fn render(p: &BootstrapParams) -> Value {
    let or_default = |s: &str| {
        if s.is_empty() {
            "default".to_owned()
        } else {
            s.to_owned()
        }
    };
    let namespace = or_default(&p.namespace);
    let partition = or_default(&p.partition);
    json!({
        "admin": {
            "access_log": [{
                "name": "envoy.access_loggers.file",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog",
                    "path": "/dev/null"
                }
            }],
            "address": socket_address(p.admin_bind)
        },
        "node": {
            "cluster": p.cluster,
            "id": p.proxy_id,
            "metadata": {
                "namespace": namespace,
                "partition": partition
            }
        },
        "layered_runtime": {
            "layers": [{
                "name": "base",
                "static_layer": {"re2.max_program_size.error_level": 1_048_576}
            }]
        },
        "static_resources": {
            "clusters": [local_agent_cluster(p.grpc_addr, p.agent_ca_pem.as_deref())]
        },
        "stats_config": stats_config(p, &namespace, &partition),
        "dynamic_resources": {
            "lds_config": ads_config_source(),
            "cds_config": ads_config_source(),
            "ads_config": {
                "api_type": "DELTA_GRPC",
                "transport_api_version": "V3",
                "grpc_services": {
                    "initial_metadata": [{
                        "key": "x-consul-token",
                        "value": p.token.as_deref().unwrap_or("")
                    }],
                    "envoy_grpc": {"cluster_name": LOCAL_AGENT_CLUSTER}
                }
            }
        }
    })
}

fn socket_address(addr: SocketAddr) -> Value {
    json!({
        "socket_address": {
            "address": addr.ip().to_string(),
            "port_value": addr.port()
        }
    })
}

/// `local_agent`: STATIC, 1s connect timeout, TLS to the agent when it has a CA (`{{- if
/// .AgentTLS -}}` in Consul's template: an `UpstreamTlsContext` trusting `AgentCAPEM` inline, no
/// SNI and no name match), explicit HTTP/2, one endpoint (no keepalive, as Consul).
fn local_agent_cluster(grpc: SocketAddr, agent_ca_pem: Option<&str>) -> Value {
    let mut cluster = Map::new();
    cluster.insert("name".into(), json!(LOCAL_AGENT_CLUSTER));
    cluster.insert("ignore_health_on_host_removal".into(), json!(false));
    cluster.insert("connect_timeout".into(), json!("1s"));
    cluster.insert("type".into(), json!("STATIC"));
    if let Some(ca) = agent_ca_pem {
        cluster.insert(
            "transport_socket".into(),
            json!({
                "name": "tls",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
                    "common_tls_context": {
                        "validation_context": {
                            "trusted_ca": {"inline_string": ca}
                        }
                    }
                }
            }),
        );
    }
    let rest = json!({
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http2_protocol_options": {}}
            }
        },
        "loadAssignment": {
            "clusterName": LOCAL_AGENT_CLUSTER,
            "endpoints": [{
                "lbEndpoints": [{
                    "endpoint": {"address": socket_address(grpc)}
                }]
            }]
        }
    });
    if let Value::Object(rest) = rest {
        cluster.extend(rest);
    }
    Value::Object(cluster)
}

fn ads_config_source() -> Value {
    json!({
        "ads": {},
        "initial_fetch_timeout": "0s",
        "resource_api_version": "V3"
    })
}

/// Consul's default stats tags, then the fixed-value tags it has values for.
fn stats_config(p: &BootstrapParams, namespace: &str, partition: &str) -> Value {
    let mut tags: Vec<Value> = stats_tags::TAGS
        .iter()
        .map(|(regex, name)| json!({"regex": regex, "tag_name": name}))
        .collect();
    let fixed = [
        ("local_cluster", p.cluster.as_str()),
        ("consul.source.service", p.cluster.as_str()),
        ("consul.source.namespace", namespace),
        ("consul.source.partition", partition),
        ("consul.source.datacenter", p.datacenter.as_str()),
    ];
    tags.extend(
        fixed
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(name, v)| json!({"tag_name": name, "fixed_value": v})),
    );
    let mut o = Map::new();
    o.insert("stats_tags".into(), Value::Array(tags));
    o.insert("use_all_default_tags".into(), Value::Bool(true));
    Value::Object(o)
}
