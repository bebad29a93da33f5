//! What a discovery-chain route carries beyond its match and cluster, as Consul's
//! `agent/xds/routes.go` sets it: the router destination's prefix rewrite, timeouts and retry
//! policy (`getRetryPolicyForDestination`), header manipulation on routes and weighted clusters
//! (`injectHeaderManipToRoute`, `injectHeaderManipToWeightedCluster`, `makeHeadersValueOptions`)
//! and the hash policies of a hash-based load balancer (`injectLBToRouteAction`).

use envoy_types::pb::envoy::config::core::v3::{
    HeaderValue, HeaderValueOption, header_value_option::HeaderAppendAction,
};
use envoy_types::pb::envoy::config::route::v3::{
    RetryPolicy, Route, RouteAction, route_action::HashPolicy, route_action::hash_policy,
    weighted_cluster::ClusterWeight,
};
use envoy_types::pb::google::protobuf::UInt32Value;

use super::clusters::duration_ns;
use crate::model::chain::{HeaderModifiers, LoadBalancer, RouteDestination};

/// Applies a router destination to its route: `PrefixRewrite`, `RequestTimeout` /
/// `IdleTimeout` (a negative value writes `0s`, which disables Envoy's timeout), the retry
/// policy when the destination has retry features, and its header modifiers.
pub(crate) fn apply_destination(
    dest: &RouteDestination,
    route: &mut Route,
    action: &mut RouteAction,
) {
    if !dest.prefix_rewrite.is_empty() {
        action.prefix_rewrite = dest.prefix_rewrite.clone();
    }
    if let Some(t) = timeout(dest.request_timeout) {
        action.timeout = Some(t);
    }
    if let Some(t) = timeout(dest.idle_timeout) {
        action.idle_timeout = Some(t);
    }
    if has_retry_features(dest) {
        action.retry_policy = Some(retry_policy(dest));
    }
    let (add, remove) = header_manip(dest.request_headers.as_ref());
    route.request_headers_to_add.extend(add);
    route.request_headers_to_remove.extend(remove);
    let (add, remove) = header_manip(dest.response_headers.as_ref());
    route.response_headers_to_add.extend(add);
    route.response_headers_to_remove.extend(remove);
}

/// A route timeout from a Go duration: positive as is, negative as `0s`, zero unset.
pub(crate) fn timeout(ns: i64) -> Option<envoy_types::pb::google::protobuf::Duration> {
    match ns {
        0 => None,
        n if n < 0 => Some(duration_ns(0)),
        n => Some(duration_ns(n)),
    }
}

/// `ServiceRouteDestination.HasRetryFeatures`.
fn has_retry_features(d: &RouteDestination) -> bool {
    d.num_retries > 0
        || d.retry_on_connect_failure
        || !d.retry_on.is_empty()
        || !d.retry_on_status_codes.is_empty()
}

/// `getRetryPolicyForDestination`: `num_retries` when positive; `retry_on` is `RetryOn`, then
/// `connect-failure` for `RetryOnConnectFailure` unless already listed, then
/// `retriable-status-codes` with the codes, joined by commas.
pub(crate) fn retry_policy(d: &RouteDestination) -> RetryPolicy {
    let mut on: Vec<String> = d.retry_on.clone();
    if d.retry_on_connect_failure && !on.iter().any(|r| r == "connect-failure") {
        on.push("connect-failure".to_owned());
    }
    let mut policy = RetryPolicy {
        num_retries: (d.num_retries > 0).then_some(UInt32Value {
            value: d.num_retries,
        }),
        ..Default::default()
    };
    if !d.retry_on_status_codes.is_empty() {
        on.push("retriable-status-codes".to_owned());
        policy.retriable_status_codes = d.retry_on_status_codes.clone();
    }
    policy.retry_on = on.join(",");
    policy
}

/// Header modifiers as Envoy options: `Add` entries append (Envoy's default action), `Set`
/// entries overwrite (`OVERWRITE_IF_EXISTS_OR_ADD`), adds before sets; and the names removed.
/// Consul iterates Go maps here (random order); the sim writes keys sorted.
pub(crate) fn header_manip(m: Option<&HeaderModifiers>) -> (Vec<HeaderValueOption>, Vec<String>) {
    let Some(m) = m else {
        return (Vec::new(), Vec::new());
    };
    let opt = |(k, v): (&String, &String), action: HeaderAppendAction| HeaderValueOption {
        header: Some(HeaderValue {
            key: k.clone(),
            value: v.clone(),
            ..Default::default()
        }),
        append_action: action as i32,
        ..Default::default()
    };
    let adds = m
        .add
        .iter()
        .map(|kv| opt(kv, HeaderAppendAction::AppendIfExistsOrAdd));
    let sets = m
        .set
        .iter()
        .map(|kv| opt(kv, HeaderAppendAction::OverwriteIfExistsOrAdd));
    (adds.chain(sets).collect(), m.remove.clone())
}

/// `injectHeaderManipToWeightedCluster`: a split's header modifiers on its weighted cluster.
pub(crate) fn weighted_cluster_headers(
    req: Option<&HeaderModifiers>,
    resp: Option<&HeaderModifiers>,
    cw: &mut ClusterWeight,
) {
    let (add, remove) = header_manip(req);
    cw.request_headers_to_add.extend(add);
    cw.request_headers_to_remove.extend(remove);
    let (add, remove) = header_manip(resp);
    cw.response_headers_to_add.extend(add);
    cw.response_headers_to_remove.extend(remove);
}

/// `injectLBToRouteAction`: only for `ring_hash` / `maglev`, one hash policy per
/// `HashPolicies` entry: `SourceIP` (connection properties), else by `Field`: `header`,
/// `cookie` (path; TTL when non-zero; `Session` writes a zero TTL, which makes Envoy issue a
/// session cookie) or `query_parameter`; each with its `Terminal` flag.
pub(crate) fn inject_hash_policies(lb: Option<&LoadBalancer>, action: &mut RouteAction) {
    let Some(lb) = lb.filter(|lb| lb.is_hash_based()) else {
        return;
    };
    action.hash_policy = lb
        .hash_policies
        .iter()
        .filter_map(|p| {
            let spec = if p.source_ip {
                hash_policy::PolicySpecifier::ConnectionProperties(
                    hash_policy::ConnectionProperties { source_ip: true },
                )
            } else {
                match p.field.as_str() {
                    "header" => hash_policy::PolicySpecifier::Header(hash_policy::Header {
                        header_name: p.field_value.clone(),
                        ..Default::default()
                    }),
                    "cookie" => {
                        let mut cookie = hash_policy::Cookie {
                            name: p.field_value.clone(),
                            ..Default::default()
                        };
                        if let Some(cfg) = &p.cookie_config {
                            cookie.path = cfg.path.clone();
                            if cfg.ttl != 0 {
                                cookie.ttl = Some(duration_ns(cfg.ttl));
                            }
                            if cfg.session {
                                cookie.ttl = Some(duration_ns(0));
                            }
                        }
                        hash_policy::PolicySpecifier::Cookie(cookie)
                    }
                    "query_parameter" => {
                        hash_policy::PolicySpecifier::QueryParameter(hash_policy::QueryParameter {
                            name: p.field_value.clone(),
                        })
                    }
                    // Resolver validation admits no other field.
                    _ => return None,
                }
            };
            Some(HashPolicy {
                policy_specifier: Some(spec),
                terminal: p.terminal,
            })
        })
        .collect();
}
