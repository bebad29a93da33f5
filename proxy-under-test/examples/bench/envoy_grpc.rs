//! The Envoy pair for the gRPC benchmark, as Consul configures sidecars for a `grpc` service
//! (static bootstraps, no xDS): Envoy B's public listener offers ALPN `h2`, `http/1.1`, runs the
//! HTTP connection manager with HTTP/2 options, `grpc_stats`, `grpc_http1_bridge`, HTTP RBAC
//! allowing `web` and the router to `local_app` (explicit HTTP/2); Envoy A's upstream listener
//! runs the connection manager (HTTP/2) and routes to an mTLS cluster for `db` with explicit
//! HTTP/2, presenting `web`'s leaf and checking `db`'s SPIFFE ID.

use std::net::SocketAddr;

use serde_json::{Value, json};

use super::envoy::{Pem, addr, admin, downstream_tls, static_cluster, upstream_tls, web_principal};

fn http2_cluster(name: &str, to: SocketAddr) -> Value {
    let mut c = static_cluster(name, to);
    c["typed_extension_protocol_options"] = json!({
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
            "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
            "explicit_http_config": {"http2_protocol_options": {}}
        }
    });
    c
}

fn hcm(stat_prefix: &str, cluster: &str, mut filters: Vec<Value>) -> Value {
    filters.push(json!({
        "name": "envoy.filters.http.router",
        "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}
    }));
    json!({
        "name": "envoy.filters.network.http_connection_manager",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
            "stat_prefix": stat_prefix,
            "http2_protocol_options": {},
            "route_config": {
                "name": stat_prefix,
                "virtual_hosts": [{
                    "name": stat_prefix,
                    "domains": ["*"],
                    "routes": [{"match": {"prefix": "/"}, "route": {"cluster": cluster}}]
                }]
            },
            "http_filters": filters
        }
    })
}

/// Envoy B: `db`'s public listener (gRPC) on `listen`, forwarding to the gRPC server `app`.
pub(crate) fn server_bootstrap(
    listen: SocketAddr,
    app: SocketAddr,
    admin_port: u16,
    leaf: &Pem,
    roots: &str,
    trust_domain: &str,
) -> Value {
    let web = web_principal(trust_domain);
    let filters = vec![
        json!({
            "name": "envoy.filters.http.grpc_stats",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3.FilterConfig",
                "stats_for_all_methods": true
            }
        }),
        json!({
            "name": "envoy.filters.http.grpc_http1_bridge",
            "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.grpc_http1_bridge.v3.Config"}
        }),
        json!({
            "name": "envoy.filters.http.rbac",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC",
                "rules": {"policies": {"consul-intentions-layer4": {
                    "permissions": [{"any": true}],
                    "principals": [{"authenticated": {"principal_name": {"safe_regex": {"regex": web}}}}]
                }}}
            }
        }),
    ];
    json!({
        "admin": admin(admin_port),
        "node": {"id": "db-sidecar-proxy", "cluster": "db"},
        "static_resources": {
            "listeners": [{
                "name": format!("public_listener:{listen}"),
                "address": addr(listen),
                "filter_chains": [{
                    "filters": [hcm("public_listener", "local_app", filters)],
                    "transport_socket": downstream_tls(leaf, roots, &["h2", "http/1.1"])
                }]
            }],
            "clusters": [http2_cluster("local_app", app)]
        }
    })
}

/// Envoy A: `web`'s upstream listener for `db` (gRPC) on `listen`, mTLS to Envoy B at `server`.
pub(crate) fn client_bootstrap(
    listen: SocketAddr,
    server: SocketAddr,
    admin_port: u16,
    leaf: &Pem,
    roots: &str,
    trust_domain: &str,
) -> Value {
    let sni = format!("db.default.dc1.internal.{trust_domain}");
    let mut cluster = http2_cluster(&sni, server);
    cluster["transport_socket"] = upstream_tls(leaf, roots, trust_domain, &sni);
    json!({
        "admin": admin(admin_port),
        "node": {"id": "web-sidecar-proxy", "cluster": "web"},
        "static_resources": {
            "listeners": [{
                "name": format!("db:{listen}"),
                "address": addr(listen),
                "filter_chains": [{"filters": [hcm("upstream.db.default.default.dc1", &sni, vec![])]}]
            }],
            "clusters": [cluster]
        }
    })
}
