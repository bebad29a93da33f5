//! Route configurations (`agent/xds/routes.go`): the public listener's inline
//! `public_listener` route to `local_app`, and for an HTTP upstream the RDS route named after
//! the upstream (virtual host of the same name, `*`), from its discovery chain.

use envoy_types::pb::envoy::config::route::v3::{
    HeaderMatcher, QueryParameterMatcher, Route, RouteAction, RouteConfiguration, RouteMatch,
    VirtualHost, WeightedCluster, header_matcher, query_parameter_matcher, route, route_action,
    route_match, weighted_cluster,
};
use envoy_types::pb::envoy::r#type::matcher::v3::{
    RegexMatcher, StringMatcher, string_matcher::MatchPattern,
};
use envoy_types::pb::google::protobuf::{BoolValue, UInt32Value};

use super::snapshot::Upstream;
use super::{clusters, route_policy};

/// A one-route configuration: `name` / vhost `name` / `*` / prefix `/` -> `cluster`.
pub(crate) fn single(name: &str, cluster: &str, timeout_ms: Option<u64>) -> RouteConfiguration {
    RouteConfiguration {
        name: name.to_owned(),
        virtual_hosts: vec![VirtualHost {
            name: name.to_owned(),
            domains: vec!["*".to_owned()],
            routes: vec![Route {
                r#match: Some(RouteMatch {
                    path_specifier: Some(route_match::PathSpecifier::Prefix("/".to_owned())),
                    ..Default::default()
                }),
                action: Some(route::Action::Route(RouteAction {
                    cluster_specifier: Some(route_action::ClusterSpecifier::Cluster(
                        cluster.to_owned(),
                    )),
                    // `makeHTTPFilter`: `local_request_timeout_ms` becomes the route timeout.
                    timeout: timeout_ms.map(millis),
                    ..Default::default()
                })),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn millis(ms: u64) -> envoy_types::pb::google::protobuf::Duration {
    clusters::duration_ns(
        i64::try_from(ms)
            .unwrap_or(i64::MAX / 1_000_000)
            .saturating_mul(1_000_000),
    )
}

/// The RDS route of an HTTP upstream, named after it (`makeUpstreamRouteForDiscoveryChain`),
/// with `validate_clusters` set as Consul does: a router start node becomes one route per
/// chain route (path, header, query and method matches; the compiled chain ends with the
/// catch-all), each with its destination's prefix rewrite, timeouts, retry policy and header
/// modifiers (`route_policy`); a splitter becomes weighted clusters (weights x100, truncated as
/// Go's `int(float32)`), each with its split's header modifiers; a resolver start becomes one
/// prefix `/` route with the resolver's `RequestTimeout`. A hash-based load balancer of the node
/// routed to adds its hash policies. A route whose resolver has no cluster is dropped.
pub(crate) fn upstream(up: &Upstream) -> Option<RouteConfiguration> {
    let start = up.chain.nodes.get(&up.chain.start_node)?;
    let routes = match start.node_type.as_str() {
        "router" => start
            .routes
            .iter()
            .filter_map(|r| {
                let next = up.chain.nodes.get(&r.next_node)?;
                let mut action = action_for(up, &r.next_node)?;
                route_policy::inject_hash_policies(next.load_balancer.as_ref(), &mut action);
                let mut route = Route::default();
                if let Some(dest) = &r.definition.destination {
                    route_policy::apply_destination(dest, &mut route, &mut action);
                }
                route.r#match = Some(route_match(r.definition.r#match.as_ref()));
                route.action = Some(route::Action::Route(action));
                Some(route)
            })
            .collect(),
        kind => {
            let mut action = action_for(up, &up.chain.start_node)?;
            route_policy::inject_hash_policies(start.load_balancer.as_ref(), &mut action);
            if kind == "resolver"
                && let Some(t) = start
                    .resolver
                    .as_ref()
                    .and_then(|r| route_policy::timeout(r.request_timeout))
            {
                action.timeout = Some(t);
            }
            vec![Route {
                r#match: Some(route_match(None)),
                action: Some(route::Action::Route(action)),
                ..Default::default()
            }]
        }
    };
    let mut rc = single(&up.id, "", None);
    rc.validate_clusters = Some(BoolValue { value: true });
    if let Some(vh) = rc.virtual_hosts.first_mut() {
        vh.routes = routes;
    }
    Some(rc)
}

/// Where a resolver or splitter node sends a request (`makeRouteActionForChainCluster`,
/// `makeRouteActionForSplitter`).
fn action_for(up: &Upstream, node_key: &str) -> Option<RouteAction> {
    let node = up.chain.nodes.get(node_key)?;
    let specifier = match node.node_type.as_str() {
        "resolver" => route_action::ClusterSpecifier::Cluster(clusters::resolver_cluster(
            up,
            node.resolver.as_ref()?,
        )?),
        "splitter" => {
            let clusters: Vec<_> = node
                .splits
                .iter()
                .filter_map(|s| {
                    let next = up.chain.nodes.get(&s.next_node)?;
                    let name = clusters::resolver_cluster(up, next.resolver.as_ref()?)?;
                    let mut cw = weighted_cluster::ClusterWeight {
                        name,
                        weight: Some(UInt32Value {
                            value: split_weight(s.weight),
                        }),
                        ..Default::default()
                    };
                    route_policy::weighted_cluster_headers(
                        s.definition.request_headers.as_ref(),
                        s.definition.response_headers.as_ref(),
                        &mut cw,
                    );
                    Some(cw)
                })
                .collect();
            // Consul fails the whole route set here ("number of clusters in splitter must be
            // > 0"); the sim leaves this upstream without a route.
            if clusters.is_empty() {
                return None;
            }
            route_action::ClusterSpecifier::WeightedClusters(WeightedCluster {
                clusters,
                ..Default::default()
            })
        }
        _ => return None,
    };
    Some(RouteAction {
        cluster_specifier: Some(specifier),
        ..Default::default()
    })
}

/// `int(split.Weight * 100)`: the product in `float32`, truncated toward zero (so `33.33`
/// becomes 3333 and a weight of `0` stays a zero-weight cluster, as Consul sends it).
pub(crate) fn split_weight(weight: f32) -> u32 {
    let scaled = weight * 100.0_f32;
    // Validation keeps weights within 0..=100.
    scaled.clamp(0.0, 10_000.0) as u32
}

fn route_match(m: Option<&crate::model::chain::RouteMatch>) -> RouteMatch {
    let Some(h) = m.and_then(|m| m.http.as_ref()) else {
        return RouteMatch {
            path_specifier: Some(route_match::PathSpecifier::Prefix("/".to_owned())),
            ..Default::default()
        };
    };
    let path = if !h.path_exact.is_empty() {
        route_match::PathSpecifier::Path(h.path_exact.clone())
    } else if !h.path_prefix.is_empty() {
        route_match::PathSpecifier::Prefix(h.path_prefix.clone())
    } else if !h.path_regex.is_empty() {
        route_match::PathSpecifier::SafeRegex(regex(&h.path_regex))
    } else {
        route_match::PathSpecifier::Prefix("/".to_owned())
    };
    let mut headers: Vec<HeaderMatcher> = h.header.iter().filter_map(header).collect();
    if !h.methods.is_empty() {
        headers.push(HeaderMatcher {
            name: ":method".to_owned(),
            header_match_specifier: Some(header_matcher::HeaderMatchSpecifier::StringMatch(
                StringMatcher {
                    match_pattern: Some(MatchPattern::SafeRegex(regex(&h.methods.join("|")))),
                    ignore_case: false,
                },
            )),
            ..Default::default()
        });
    }
    RouteMatch {
        path_specifier: Some(path),
        case_sensitive: h.case_insensitive.then_some(BoolValue { value: false }),
        headers,
        query_parameters: h
            .query_param
            .iter()
            .filter_map(|q| {
                let spec = if !q.exact.is_empty() {
                    exact_or_regex(MatchPattern::Exact(q.exact.clone()))
                } else if !q.regex.is_empty() {
                    exact_or_regex(MatchPattern::SafeRegex(regex(&q.regex)))
                } else if q.present {
                    query_parameter_matcher::QueryParameterMatchSpecifier::PresentMatch(true)
                } else {
                    return None;
                };
                Some(QueryParameterMatcher {
                    name: q.name.clone(),
                    query_parameter_match_specifier: Some(spec),
                })
            })
            .collect(),
        ..Default::default()
    }
}

fn exact_or_regex(p: MatchPattern) -> query_parameter_matcher::QueryParameterMatchSpecifier {
    query_parameter_matcher::QueryParameterMatchSpecifier::StringMatch(StringMatcher {
        match_pattern: Some(p),
        ignore_case: false,
    })
}

fn header(h: &crate::model::chain::HeaderMatch) -> Option<HeaderMatcher> {
    let string = |p: MatchPattern| {
        header_matcher::HeaderMatchSpecifier::StringMatch(StringMatcher {
            match_pattern: Some(p),
            ignore_case: false,
        })
    };
    let spec = if !h.exact.is_empty() {
        string(MatchPattern::Exact(h.exact.clone()))
    } else if !h.regex.is_empty() {
        string(MatchPattern::SafeRegex(regex(&h.regex)))
    } else if !h.prefix.is_empty() {
        string(MatchPattern::Prefix(h.prefix.clone()))
    } else if !h.suffix.is_empty() {
        string(MatchPattern::Suffix(h.suffix.clone()))
    } else if h.present {
        header_matcher::HeaderMatchSpecifier::PresentMatch(true)
    } else {
        return None;
    };
    Some(HeaderMatcher {
        name: h.name.clone(),
        invert_match: h.invert,
        header_match_specifier: Some(spec),
        ..Default::default()
    })
}

fn regex(pattern: &str) -> RegexMatcher {
    RegexMatcher {
        regex: pattern.to_owned(),
        ..Default::default()
    }
}
