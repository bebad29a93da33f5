//! Listeners (`agent/xds/listeners.go`): the public listener `public_listener:<addr>:<port>`
//! (mTLS; L4: network RBAC then `tcp_proxy` to `local_app`; with `max_inbound_connections` a
//! `connection_limit` filter before the terminal one; HTTP: connection manager that
//! normalizes requests as the `mesh` entry says, with the HTTP RBAC filter, the router and
//! client-cert forwarding unless sanitized; in transparent mode with `MutualTLSMode=permissive`
//! a plaintext chain on the service port) and one outbound listener per upstream
//! (`<id>:<addr>:<port>`, `tcp_proxy`, or HCM + RDS for an HTTP chain).

use envoy_types::pb::envoy::config::core::v3::{
    CidrRange, Http2ProtocolOptions, HttpProtocolOptions, TrafficDirection,
    http_protocol_options::HeadersWithUnderscoresAction,
};
use envoy_types::pb::envoy::config::listener::v3::listener::{
    ConnectionBalanceConfig,
    connection_balance_config::{BalanceType, ExactBalance},
};
use envoy_types::pb::envoy::config::listener::v3::{
    Filter, FilterChain, FilterChainMatch, Listener, ListenerFilter, filter, listener_filter,
};
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use envoy_types::pb::envoy::extensions::filters::http::router::v3::Router;
use envoy_types::pb::envoy::extensions::filters::http::{grpc_http1_bridge, grpc_stats};
use envoy_types::pb::envoy::extensions::filters::listener::original_dst::v3::OriginalDst;
use envoy_types::pb::envoy::extensions::filters::network::connection_limit::v3::ConnectionLimit;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, HttpFilter, Rds,
    http_connection_manager::{
        ForwardClientCertDetails, PathWithEscapedSlashesAction, RouteSpecifier,
        SetCurrentClientCertDetails, Tracing,
    },
    http_filter,
};
use envoy_types::pb::envoy::extensions::filters::network::tcp_proxy::v3::{
    TcpProxy, tcp_proxy::ClusterSpecifier,
};
use envoy_types::pb::envoy::r#type::v3::Percent;
use envoy_types::pb::google::protobuf::{BoolValue, UInt32Value, UInt64Value};

use super::snapshot::{Snapshot, Upstream};
use super::{any, clusters, endpoints, jwt_authn, rbac, routes, tls};
use crate::xds::types::TlsMode;

/// True for the protocols Consul serves with an HTTP connection manager.
pub(crate) fn is_http(protocol: &str) -> bool {
    matches!(protocol, "http" | "http2" | "grpc")
}

/// The public listener.
pub(crate) fn public(snap: &Snapshot, mode: TlsMode) -> Listener {
    let http = is_http(&snap.protocol);
    let rules = rbac::rules(snap, http);
    let (filters, alpn): (Vec<Filter>, &[&str]) = if http {
        let mut hcm = HttpConnectionManager {
            stat_prefix: "public_listener".to_owned(),
            route_specifier: Some(RouteSpecifier::RouteConfig(routes::single(
                "public_listener",
                "local_app",
                snap.local_request_timeout_ms,
            ))),
            http_filters: http_filters(
                &snap.protocol,
                jwt_authn::filter(snap),
                rbac::http_filter(&rules),
            ),
            tracing: Some(tracing()),
            http2_protocol_options: http2(&snap.protocol),
            ..Default::default()
        };
        // `includeXFCC && notGRPC`: unless the mesh entry sanitizes XFCC (or the service
        // speaks gRPC), append the caller's details; otherwise Envoy's default, SANITIZE.
        let sanitize = snap.mesh.as_ref().is_some_and(|m| m.sanitize_xfcc());
        if !sanitize && snap.protocol != "grpc" {
            hcm.forward_client_cert_details = ForwardClientCertDetails::AppendForward as i32;
            hcm.set_current_client_cert_details = Some(SetCurrentClientCertDetails {
                subject: Some(BoolValue { value: true }),
                cert: true,
                chain: true,
                dns: true,
                uri: true,
                ..Default::default()
            });
        }
        set_normalization_options(snap, &mut hcm);
        let alpn: &[&str] = if http2(&snap.protocol).is_some() {
            &["h2", "http/1.1"]
        } else {
            &["http/1.1"]
        };
        (vec![hcm_filter(&hcm)], alpn)
    } else {
        (
            vec![
                rbac::network_filter(&rules),
                tcp_proxy("public_listener", "local_app"),
            ],
            &[],
        )
    };
    // `makeConnectionLimitFilter`: in the one filter chain, after the L4 RBAC filter (which
    // `injectConnectFilters` puts first) and before the terminal filter.
    let mut filters = filters;
    if snap.max_inbound_connections > 0 {
        let at = filters.len() - 1;
        filters.insert(at, connection_limit(snap.max_inbound_connections));
    }
    let mut listener = Listener {
        name: format!("public_listener:{}:{}", snap.public_addr, snap.public_port),
        connection_balance_config: balance(&snap.balance_inbound_connections),
        address: Some(endpoints::socket_address(
            &snap.public_addr,
            u32::from(snap.public_port),
        )),
        filter_chains: vec![FilterChain {
            filters,
            transport_socket: Some(tls::downstream_socket(snap, mode, alpn)),
            ..Default::default()
        }],
        traffic_direction: TrafficDirection::Inbound as i32,
        ..Default::default()
    };
    // `makePermissiveFilterChain`: only with tproxy (golden
    // `connect-proxy-without-tproxy-and-permissive-mtls` has no such chain) and a service
    // port; plaintext sent to the service port goes to the app unauthorized.
    if snap.mutual_tls_mode == "permissive" && snap.transparent.is_some() && snap.local_port > 0 {
        listener.filter_chains.push(FilterChain {
            filter_chain_match: Some(FilterChainMatch {
                destination_port: Some(UInt32Value {
                    value: u32::from(snap.local_port),
                }),
                ..Default::default()
            }),
            filters: vec![tcp_proxy("permissive_public_listener", "local_app")],
            ..Default::default()
        });
        listener.use_original_dst = Some(BoolValue { value: true });
    }
    listener
}

/// `setNormalizationOptions` (Consul 1.20.1+, CVE-2024-10005) for the inbound HCM: paths are
/// normalized (RFC 3986, `\` to `/`, unreserved %-escapes decoded) unless the mesh entry's
/// `InsecureDisablePathNormalization` says otherwise; `MergeSlashes`,
/// `PathWithEscapedSlashesAction` and `HeadersWithUnderscoresAction` as configured (the
/// latter only when not `ALLOW`).
fn set_normalization_options(snap: &Snapshot, hcm: &mut HttpConnectionManager) {
    let rn = snap.mesh.as_ref().and_then(|m| m.request_normalization());
    let rn = rn.cloned().unwrap_or_default();
    if !rn.insecure_disable_path_normalization {
        hcm.normalize_path = Some(BoolValue { value: true });
    }
    hcm.merge_slashes = rn.merge_slashes;
    hcm.path_with_escaped_slashes_action = match rn.path_with_escaped_slashes_action.as_str() {
        "KEEP_UNCHANGED" => PathWithEscapedSlashesAction::KeepUnchanged,
        "REJECT_REQUEST" => PathWithEscapedSlashesAction::RejectRequest,
        "UNESCAPE_AND_REDIRECT" => PathWithEscapedSlashesAction::UnescapeAndRedirect,
        "UNESCAPE_AND_FORWARD" => PathWithEscapedSlashesAction::UnescapeAndForward,
        _ => PathWithEscapedSlashesAction::ImplementationSpecificDefault,
    } as i32;
    let underscores = match rn.headers_with_underscores_action.as_str() {
        "REJECT_REQUEST" => HeadersWithUnderscoresAction::RejectRequest,
        "DROP_HEADER" => HeadersWithUnderscoresAction::DropHeader,
        _ => HeadersWithUnderscoresAction::Allow,
    };
    if underscores != HeadersWithUnderscoresAction::Allow {
        hcm.common_http_protocol_options = Some(HttpProtocolOptions {
            headers_with_underscores_action: underscores as i32,
            ..Default::default()
        });
    }
}

/// The transparent proxy's `outbound_listener:127.0.0.1:<port>` (listener filter
/// `original_dst`): one filter chain per upstream without a listener of its own, matched by
/// its virtual IPs, instances' `virtual` tagged addresses and, when the target is dialed
/// directly, instance addresses; anything else goes to `original-destination`
/// (golden `listeners/transparent-proxy.latest.golden`). An HTTP chain's filter chain is the
/// HTTP connection manager on RDS, with its route returned alongside, as for an explicit
/// upstream.
pub(crate) fn outbound(snap: &Snapshot) -> Option<(Listener, Vec<RouteConfiguration>)> {
    let t = snap.transparent.as_ref()?;
    let mut chains = Vec::new();
    let mut routes = Vec::new();
    for up in &snap.upstreams {
        if up.bind_port != 0 || !up.socket_path.is_empty() {
            continue;
        }
        let Some(cluster) = start_cluster(up) else {
            continue;
        };
        let mut addrs: Vec<String> = up.virtual_ips.clone();
        for (id, eps) in &up.endpoints {
            let direct = up
                .chain
                .targets
                .get(id)
                .is_some_and(|t| t.transparent_proxy.dialed_directly);
            for ep in eps {
                addrs.extend(ep.virtual_address.clone());
                if direct {
                    addrs.push(ep.address.clone());
                }
            }
        }
        addrs.sort();
        addrs.dedup();
        if addrs.is_empty() {
            continue;
        }
        let (filter, route) = upstream_filter(snap, up, &cluster);
        routes.extend(route);
        chains.push(FilterChain {
            filter_chain_match: Some(FilterChainMatch {
                prefix_ranges: addrs
                    .iter()
                    .map(|a| CidrRange {
                        address_prefix: a.clone(),
                        prefix_len: Some(UInt32Value {
                            value: if a.contains(':') { 128 } else { 32 },
                        }),
                    })
                    .collect(),
                ..Default::default()
            }),
            filters: vec![filter],
            ..Default::default()
        });
    }
    // "Filter chains are stable sorted to avoid draining if the list is provided out of order":
    // by the first prefix as `<address>/<length>` text.
    chains.sort_by_cached_key(|c| {
        c.filter_chain_match
            .as_ref()
            .and_then(|m| m.prefix_ranges.first())
            .map(|r| {
                let len = r.prefix_len.as_ref().map_or(0, |l| l.value);
                format!("{}/{len}", r.address_prefix)
            })
            .unwrap_or_default()
    });
    let mesh_destinations_only = snap
        .mesh
        .as_ref()
        .is_some_and(|m| m.transparent_proxy.mesh_destinations_only);
    // "Only add the outbound listener if configured."
    if chains.is_empty() && mesh_destinations_only {
        return None;
    }
    let listener = Listener {
        name: format!("outbound_listener:127.0.0.1:{}", t.outbound_port),
        address: Some(endpoints::socket_address(
            "127.0.0.1",
            u32::from(t.outbound_port),
        )),
        filter_chains: chains,
        // The catch-all to destinations outside the mesh, unless the mesh entry's
        // `TransparentProxy.MeshDestinationsOnly` takes it away.
        default_filter_chain: (!mesh_destinations_only).then(|| FilterChain {
            filters: vec![tcp_proxy(
                "upstream.original-destination",
                clusters::ORIGINAL_DESTINATION,
            )],
            ..Default::default()
        }),
        listener_filters: vec![ListenerFilter {
            name: "envoy.filters.listener.original_dst".to_owned(),
            config_type: Some(listener_filter::ConfigType::TypedConfig(any(
                &OriginalDst::default(),
            ))),
            ..Default::default()
        }],
        traffic_direction: TrafficDirection::Outbound as i32,
        ..Default::default()
    };
    Some((listener, routes))
}

/// One upstream's listener, and its RDS route when the chain speaks HTTP. An upstream with
/// neither a port nor a socket path (transparent-proxy style) gets no listener of its own.
pub(crate) fn upstream(
    snap: &Snapshot,
    up: &Upstream,
) -> Option<(Listener, Option<RouteConfiguration>)> {
    if up.bind_port == 0 && up.socket_path.is_empty() {
        return None;
    }
    let cluster = start_cluster(up)?;
    let (filter, route) = upstream_filter(snap, up, &cluster);
    let (name, address) = if up.socket_path.is_empty() {
        (
            format!("{}:{}:{}", up.id, up.bind_addr, up.bind_port),
            endpoints::socket_address(&up.bind_addr, u32::from(up.bind_port)),
        )
    } else {
        let mode = u32::from_str_radix(&up.socket_mode, 8).unwrap_or(0);
        (
            format!("{}:{}", up.id, up.socket_path),
            endpoints::pipe_address(&up.socket_path, mode),
        )
    };
    let listener = Listener {
        name,
        address: Some(address),
        filter_chains: vec![FilterChain {
            filters: vec![filter],
            ..Default::default()
        }],
        traffic_direction: TrafficDirection::Outbound as i32,
        ..Default::default()
    };
    Some((listener, route))
}

/// An upstream's filter (`makeUpstreamFilterChain`): an HTTP chain gets the HTTP connection
/// manager on RDS (the route named after the upstream, built here), a TCP one `tcp_proxy` to
/// the start node's cluster. Stat prefix `upstream.<svc>.default.default.<dc>`.
fn upstream_filter(
    snap: &Snapshot,
    up: &Upstream,
    cluster: &str,
) -> (Filter, Option<RouteConfiguration>) {
    // A prepared query's filter is named by its upstream ID (`makeStatPrefix`: colons become
    // underscores), a chain's by its service.
    let stat = if up.query {
        format!("upstream.{}", up.id.replace(':', "_"))
    } else {
        format!(
            "upstream.{}.default.default.{}",
            up.service, snap.datacenter
        )
    };
    if !is_http(&up.chain.protocol) {
        return (tcp_proxy(&stat, cluster), None);
    }
    let hcm = HttpConnectionManager {
        stat_prefix: stat,
        route_specifier: Some(RouteSpecifier::Rds(Rds {
            config_source: Some(tls::ads_source()),
            route_config_name: up.id.clone(),
        })),
        http_filters: vec![router()],
        tracing: Some(tracing()),
        http2_protocol_options: http2(&up.chain.protocol),
        ..Default::default()
    };
    (hcm_filter(&hcm), routes::upstream(up))
}

/// The cluster of the chain's start node; a router or splitter start (not modelled) falls
/// back to the first resolver.
fn start_cluster(up: &Upstream) -> Option<String> {
    let start = up
        .chain
        .nodes
        .get(&up.chain.start_node)
        .and_then(|n| n.resolver.as_ref());
    match start {
        Some(r) => clusters::resolver_cluster(up, r),
        None => clusters::resolvers(up).find_map(|r| clusters::resolver_cluster(up, r)),
    }
}

fn http2(protocol: &str) -> Option<Http2ProtocolOptions> {
    matches!(protocol, "http2" | "grpc").then(Http2ProtocolOptions::default)
}

fn tracing() -> Tracing {
    Tracing {
        random_sampling: Some(Percent { value: 0.0 }),
        ..Default::default()
    }
}

/// JWT (when an intention asks for one), RBAC, then the router; for `grpc` Consul puts
/// `grpc_stats` (all methods) and `grpc_http1_bridge` in front (`makeHTTPFilter`).
fn http_filters(protocol: &str, jwt: Option<HttpFilter>, rbac: HttpFilter) -> Vec<HttpFilter> {
    let mut out = Vec::new();
    if protocol == "grpc" {
        let stats = grpc_stats::v3::FilterConfig {
            per_method_stat_specifier: Some(
                grpc_stats::v3::filter_config::PerMethodStatSpecifier::StatsForAllMethods(
                    BoolValue { value: true },
                ),
            ),
            ..Default::default()
        };
        out.push(typed_http_filter(
            "envoy.filters.http.grpc_stats",
            any(&stats),
        ));
        out.push(typed_http_filter(
            "envoy.filters.http.grpc_http1_bridge",
            any(&grpc_http1_bridge::v3::Config::default()),
        ));
    }
    out.extend(jwt);
    out.push(rbac);
    out.push(router());
    out
}

fn typed_http_filter(name: &str, config: envoy_types::pb::google::protobuf::Any) -> HttpFilter {
    HttpFilter {
        name: name.to_owned(),
        config_type: Some(http_filter::ConfigType::TypedConfig(config)),
        ..Default::default()
    }
}

fn router() -> HttpFilter {
    HttpFilter {
        name: "envoy.filters.http.router".to_owned(),
        config_type: Some(http_filter::ConfigType::TypedConfig(
            any(&Router::default()),
        )),
        ..Default::default()
    }
}

fn hcm_filter(hcm: &HttpConnectionManager) -> Filter {
    Filter {
        name: "envoy.filters.network.http_connection_manager".to_owned(),
        config_type: Some(filter::ConfigType::TypedConfig(any(hcm))),
    }
}

/// `envoy.filters.network.connection_limit` with Consul's stat prefix.
fn connection_limit(max: u64) -> Filter {
    let cfg = ConnectionLimit {
        stat_prefix: "inbound_connection_limit".to_owned(),
        max_connections: Some(UInt64Value { value: max }),
        ..Default::default()
    };
    Filter {
        name: "envoy.filters.network.connection_limit".to_owned(),
        config_type: Some(filter::ConfigType::TypedConfig(any(&cfg))),
    }
}

/// `injectConnectionBalanceConfig`: `exact_balance` only.
fn balance(kind: &str) -> Option<ConnectionBalanceConfig> {
    (kind == "exact_balance").then_some(ConnectionBalanceConfig {
        balance_type: Some(BalanceType::ExactBalance(ExactBalance {})),
    })
}

fn tcp_proxy(stat_prefix: &str, cluster: &str) -> Filter {
    let tp = TcpProxy {
        stat_prefix: stat_prefix.to_owned(),
        cluster_specifier: Some(ClusterSpecifier::Cluster(cluster.to_owned())),
        ..Default::default()
    };
    Filter {
        name: "envoy.filters.network.tcp_proxy".to_owned(),
        config_type: Some(filter::ConfigType::TypedConfig(any(&tp))),
    }
}
