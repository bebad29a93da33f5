//! Route configurations (`agent/xds/routes.go`): the public listener's inline
//! `public_listener` route to `local_app`, and for an HTTP upstream the RDS route named after
//! the upstream (virtual host of the same name, `*`, prefix `/` to the chain's cluster).

use envoy_types::pb::envoy::config::route::v3::{
    Route, RouteAction, RouteConfiguration, RouteMatch, VirtualHost, route, route_action,
    route_match,
};

/// A one-route configuration: `name` / vhost `name` / `*` / prefix `/` -> `cluster`.
pub(crate) fn single(name: &str, cluster: &str) -> RouteConfiguration {
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
                    ..Default::default()
                })),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}
