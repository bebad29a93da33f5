//! Unit tests of the delta state machine against the behaviours of Consul's `delta.go`.

use std::collections::HashMap;

use envoy_types::pb::envoy::config::listener::v3::{Filter, FilterChain, Listener, filter};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, Rds, http_connection_manager::RouteSpecifier,
};
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use envoy_types::pb::google::protobuf::Any;
use envoy_types::pb::google::rpc::Status;
use prost::{Message, Name};

use super::*;
use crate::xds::types::Resource;

pub(super) fn res(type_url: &str, name: &str, version: &str) -> Resource {
    Resource {
        name: name.to_owned(),
        version: version.to_owned(),
        any: Any {
            type_url: type_url.to_owned(),
            value: format!("{name}@{version}").into_bytes(),
        },
    }
}

pub(super) fn set(items: &[(&'static str, &str, &str)]) -> Resources {
    let mut r = Resources::default();
    for (t, n, v) in items {
        r.insert(t, res(t, n, v));
    }
    r
}

pub(super) fn sub(type_url: &str, names: &[&str]) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        type_url: type_url.to_owned(),
        resource_names_subscribe: names.iter().map(|s| (*s).to_owned()).collect(),
        ..Default::default()
    }
}

pub(super) fn ack(resp: &DeltaDiscoveryResponse) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        type_url: resp.type_url.clone(),
        response_nonce: resp.nonce.clone(),
        ..Default::default()
    }
}

fn nack(resp: &DeltaDiscoveryResponse, msg: &str) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        error_detail: Some(Status {
            code: 3,
            message: msg.to_owned(),
            details: vec![],
        }),
        ..ack(resp)
    }
}

fn names(r: &DeltaDiscoveryResponse) -> Vec<(String, String)> {
    r.resources
        .iter()
        .map(|x| (x.name.clone(), x.version.clone()))
        .collect()
}

fn nv(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[test]
fn type_url_is_required() {
    let mut s = DeltaStream::new();
    let err = s.recv(&DeltaDiscoveryRequest::default()).unwrap_err();
    assert_eq!(err.to_string(), "type URL is required for ADS");
}

#[test]
fn unknown_types_are_ignored() {
    let mut s = DeltaStream::new();
    let got = s.recv(&sub("type.googleapis.com/x.Y", &[])).unwrap();
    assert_eq!(got, Received::UnknownType);
    s.set_resources(set(&[(CLUSTER, "a", "1")]));
    assert!(s.poll().is_empty(), "nothing subscribed yet");
}

#[test]
fn nothing_is_sent_before_resources_arrive() {
    let mut s = DeltaStream::new();
    assert_eq!(
        s.recv(&sub(CLUSTER, &[])).unwrap(),
        Received::NewSubscription
    );
    assert!(!s.ready());
    assert!(s.poll().is_empty());
}

#[test]
fn wildcard_gets_everything_with_hash_versions_and_unique_nonces() {
    let mut s = DeltaStream::new();
    s.recv(&sub(CLUSTER, &[])).unwrap();
    s.recv(&sub(LISTENER, &["*"])).unwrap();
    assert_eq!(s.is_wildcard(CLUSTER), Some(true));
    assert_eq!(s.is_wildcard(LISTENER), Some(true));
    s.set_resources(set(&[
        (CLUSTER, "a", "1"),
        (CLUSTER, "b", "2"),
        (LISTENER, "l", "3"),
    ]));
    let out = s.poll();
    // Listeners wait for the clusters' ACK.
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].type_url, CLUSTER);
    assert_eq!(out[0].nonce, "00000001");
    assert_eq!(out[0].system_version_info, "");
    assert_eq!(names(&out[0]), nv(&[("a", "1"), ("b", "2")]));
    s.recv(&ack(&out[0])).unwrap();
    let out2 = s.poll();
    assert_eq!(out2.len(), 1);
    assert_eq!(out2[0].type_url, LISTENER);
    assert_eq!(out2[0].nonce, "00000002");
    assert_eq!(names(&out2[0]), nv(&[("l", "3")]));
}

#[test]
fn one_response_per_type_in_flight_until_acked() {
    let mut s = DeltaStream::new();
    s.recv(&sub(CLUSTER, &[])).unwrap();
    s.set_resources(set(&[(CLUSTER, "a", "1")]));
    let first = s.poll();
    assert_eq!(first.len(), 1);
    s.set_resources(set(&[(CLUSTER, "a", "2")]));
    assert!(s.poll().is_empty(), "a second CDS response before the ACK");
    assert_eq!(s.in_flight(), vec![(CLUSTER, "00000001".to_owned())]);
    s.recv(&ack(&first[0])).unwrap();
    let next = s.poll();
    assert_eq!(next.len(), 1);
    assert_eq!(names(&next[0]), nv(&[("a", "2")]));
}

#[test]
fn ack_then_change_pushes_only_the_diff_and_removals() {
    let mut s = DeltaStream::new();
    s.recv(&sub(CLUSTER, &[])).unwrap();
    s.set_resources(set(&[
        (CLUSTER, "a", "1"),
        (CLUSTER, "b", "1"),
        (CLUSTER, "c", "1"),
    ]));
    let r = s.poll();
    s.recv(&ack(&r[0])).unwrap();
    assert!(s.poll().is_empty(), "no change, nothing sent");
    s.set_resources(set(&[
        (CLUSTER, "a", "1"),
        (CLUSTER, "b", "2"),
        (CLUSTER, "d", "1"),
    ]));
    let r = s.poll();
    // Upserts first; cluster removals come in their own later step.
    assert_eq!(r.len(), 1);
    assert_eq!(names(&r[0]), nv(&[("b", "2"), ("d", "1")]));
    assert!(r[0].removed_resources.is_empty());
    s.recv(&ack(&r[0])).unwrap();
    let r = s.poll();
    assert_eq!(r.len(), 1);
    assert!(r[0].resources.is_empty());
    assert_eq!(r[0].removed_resources, vec!["c".to_owned()]);
    s.recv(&ack(&r[0])).unwrap();
    assert_eq!(
        s.acked(CLUSTER).into_iter().collect::<Vec<_>>(),
        nv(&[("a", "1"), ("b", "2"), ("d", "1")])
    );
}

#[test]
fn listeners_wait_for_cluster_and_endpoint_acks_in_consul_order() {
    let mut s = DeltaStream::new();
    s.recv(&sub(CLUSTER, &[])).unwrap();
    s.recv(&sub(LISTENER, &[])).unwrap();
    s.set_resources(set(&[
        (CLUSTER, "c", "1"),
        (ENDPOINT, "c", "1"),
        (LISTENER, "l", "1"),
    ]));
    let r = s.poll();
    assert_eq!(
        r.iter().map(|x| x.type_url.as_str()).collect::<Vec<_>>(),
        vec![CLUSTER]
    );
    s.recv(&ack(&r[0])).unwrap();
    // Envoy subscribes to the endpoints of the cluster it just got.
    s.recv(&sub(ENDPOINT, &["c"])).unwrap();
    let r = s.poll();
    assert_eq!(
        r.iter().map(|x| x.type_url.as_str()).collect::<Vec<_>>(),
        vec![ENDPOINT]
    );
    s.recv(&ack(&r[0])).unwrap();
    let r = s.poll();
    assert_eq!(
        r.iter().map(|x| x.type_url.as_str()).collect::<Vec<_>>(),
        vec![LISTENER]
    );
}

#[test]
fn nack_is_not_resent_until_the_set_changes() {
    let mut s = DeltaStream::new();
    s.recv(&sub(CLUSTER, &[])).unwrap();
    s.recv(&sub(LISTENER, &[])).unwrap();
    s.set_resources(set(&[(CLUSTER, "c", "1"), (LISTENER, "l", "1")]));
    let r = s.poll();
    s.recv(&ack(&r[0])).unwrap();
    let r = s.poll();
    assert_eq!(r[0].type_url, LISTENER);
    let got = s.recv(&nack(&r[0], "bad listener")).unwrap();
    assert_eq!(
        got,
        Received::Nack {
            nonce: r[0].nonce.clone(),
            code: 3,
            message: "bad listener".into()
        }
    );
    assert!(!got.triggers_send());
    assert!(s.in_flight().is_empty());
    // Another request (a subscription change) triggers a computation: still nothing.
    s.recv(&sub(CLUSTER, &[])).unwrap();
    assert!(s.poll().is_empty(), "the rejected listener was re-sent");
    // The same set again is no change.
    assert!(!s.set_resources(set(&[(CLUSTER, "c", "1"), (LISTENER, "l", "1")])));
    assert!(s.poll().is_empty());
    // A new set: the listener (new version) goes out.
    assert!(s.set_resources(set(&[(CLUSTER, "c", "1"), (LISTENER, "l", "2")])));
    let r = s.poll();
    assert_eq!(names(&r[0]), nv(&[("l", "2")]));
}

#[test]
fn nack_of_first_response_is_resent_after_a_change_elsewhere() {
    let mut s = DeltaStream::new();
    s.recv(&sub(CLUSTER, &[])).unwrap();
    s.set_resources(set(&[(CLUSTER, "c", "1")]));
    let r = s.poll();
    s.recv(&nack(&r[0], "no")).unwrap();
    assert!(s.poll().is_empty());
    s.set_resources(set(&[(CLUSTER, "c", "1"), (ENDPOINT, "c", "1")]));
    let r = s.poll();
    assert_eq!(names(&r[0]), nv(&[("c", "1")]));
}

#[test]
fn reconnect_with_initial_versions_gets_only_what_differs() {
    let mut s = DeltaStream::new();
    let mut req = sub(CLUSTER, &[]);
    req.initial_resource_versions = HashMap::from([
        ("a".to_owned(), "1".to_owned()),
        ("b".to_owned(), "old".to_owned()),
        ("gone".to_owned(), "1".to_owned()),
    ]);
    s.recv(&req).unwrap();
    s.set_resources(set(&[(CLUSTER, "a", "1"), (CLUSTER, "b", "2")]));
    let r = s.poll();
    assert_eq!(r.len(), 1);
    assert_eq!(names(&r[0]), nv(&[("b", "2")]));
    s.recv(&ack(&r[0])).unwrap();
    let r = s.poll();
    assert_eq!(r[0].removed_resources, vec!["gone".to_owned()]);
}

#[test]
fn reconnect_with_everything_current_gets_one_empty_response() {
    let mut s = DeltaStream::new();
    let mut req = sub(CLUSTER, &[]);
    req.initial_resource_versions = HashMap::from([("a".to_owned(), "1".to_owned())]);
    s.recv(&req).unwrap();
    s.set_resources(set(&[(CLUSTER, "a", "1")]));
    let r = s.poll();
    assert_eq!(r.len(), 1, "Consul answers once even with nothing new");
    assert!(r[0].resources.is_empty() && r[0].removed_resources.is_empty());
    s.recv(&ack(&r[0])).unwrap();
    assert!(s.poll().is_empty());
}

#[test]
fn explicit_subscriptions_and_resubscribe_forces_a_resend() {
    let mut s = DeltaStream::new();
    s.recv(&sub(CLUSTER, &[])).unwrap();
    s.set_resources(set(&[
        (CLUSTER, "x", "1"),
        (ENDPOINT, "x", "1"),
        (ENDPOINT, "y", "1"),
    ]));
    let r = s.poll();
    s.recv(&ack(&r[0])).unwrap();
    s.recv(&sub(ENDPOINT, &["x"])).unwrap();
    assert_eq!(s.is_wildcard(ENDPOINT), Some(false));
    let r = s.poll();
    assert_eq!(names(&r[0]), nv(&[("x", "1")]));
    s.recv(&ack(&r[0])).unwrap();
    assert!(s.poll().is_empty());
    s.recv(&sub(ENDPOINT, &["x"])).unwrap();
    let r = s.poll();
    assert_eq!(names(&r[0]), nv(&[("x", "1")]), "re-subscribe must re-send");
    s.recv(&ack(&r[0])).unwrap();
    let mut un = sub(ENDPOINT, &[]);
    un.resource_names_unsubscribe = vec!["x".into()];
    s.recv(&un).unwrap();
    assert!(s.subscriptions(ENDPOINT).is_empty());
    s.set_resources(set(&[
        (CLUSTER, "x", "1"),
        (ENDPOINT, "x", "2"),
        (ENDPOINT, "y", "1"),
    ]));
    assert!(s.poll().is_empty(), "unsubscribed resources are not sent");
}

#[test]
fn cluster_upsert_resends_its_endpoints() {
    let mut s = DeltaStream::new();
    s.recv(&sub(CLUSTER, &[])).unwrap();
    s.set_resources(set(&[(CLUSTER, "x", "1"), (ENDPOINT, "x", "1")]));
    let r = s.poll();
    s.recv(&ack(&r[0])).unwrap();
    s.recv(&sub(ENDPOINT, &["x"])).unwrap();
    let r = s.poll();
    s.recv(&ack(&r[0])).unwrap();
    // Only the cluster changes.
    s.set_resources(set(&[(CLUSTER, "x", "2"), (ENDPOINT, "x", "1")]));
    let r = s.poll();
    let types: Vec<_> = r.iter().map(|x| x.type_url.as_str()).collect();
    assert_eq!(types, vec![CLUSTER, ENDPOINT]);
    assert_eq!(names(&r[1]), nv(&[("x", "1")]));
}

fn listener_with_rds(name: &str, route: &str) -> Resource {
    let hcm = HttpConnectionManager {
        stat_prefix: "x".into(),
        route_specifier: Some(RouteSpecifier::Rds(Rds {
            route_config_name: route.into(),
            ..Default::default()
        })),
        ..Default::default()
    };
    let l = Listener {
        name: name.into(),
        filter_chains: vec![FilterChain {
            filters: vec![Filter {
                name: "envoy.filters.network.http_connection_manager".into(),
                config_type: Some(filter::ConfigType::TypedConfig(Any {
                    type_url: HttpConnectionManager::type_url(),
                    value: hcm.encode_to_vec(),
                })),
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    Resource::pack(name, &l)
}

#[test]
fn listener_upsert_resends_its_rds_routes() {
    let mut s = DeltaStream::new();
    s.recv(&sub(LISTENER, &[])).unwrap();
    let mut rs = Resources::default();
    rs.insert(LISTENER, listener_with_rds("db:1.2.3.4:5", "db"));
    rs.insert(ROUTE, res(ROUTE, "db", "1"));
    s.set_resources(rs.clone());
    let r = s.poll();
    assert_eq!(r[0].type_url, LISTENER);
    s.recv(&ack(&r[0])).unwrap();
    s.recv(&sub(ROUTE, &["db"])).unwrap();
    let r = s.poll();
    s.recv(&ack(&r[0])).unwrap();
    assert!(s.poll().is_empty());
    // A different listener naming the same route: the route is re-sent after it.
    let mut rs2 = Resources::default();
    let mut l2 = listener_with_rds("db:1.2.3.4:5", "db");
    l2.version = "other".into();
    rs2.insert(LISTENER, l2);
    rs2.insert(ROUTE, res(ROUTE, "db", "1"));
    s.set_resources(rs2);
    let r = s.poll();
    let types: Vec<_> = r.iter().map(|x| x.type_url.as_str()).collect();
    assert_eq!(types, vec![LISTENER, ROUTE]);
}

#[test]
fn stale_nonce_is_ignored() {
    let mut s = DeltaStream::new();
    s.recv(&sub(CLUSTER, &[])).unwrap();
    s.set_resources(set(&[(CLUSTER, "a", "1")]));
    let r = s.poll();
    let mut stale = ack(&r[0]);
    stale.response_nonce = "deadbeef".into();
    assert_eq!(
        s.recv(&stale).unwrap(),
        Received::Ack {
            nonce: "deadbeef".into(),
            matched: false
        }
    );
    assert_eq!(
        s.in_flight().len(),
        1,
        "a stale ACK must not clear the pending response"
    );
    assert!(s.acked(CLUSTER).is_empty());
}

#[test]
fn secrets_go_first() {
    let mut s = DeltaStream::new();
    s.recv(&sub(CLUSTER, &[])).unwrap();
    s.recv(&sub(SECRET, &["connect-leaf", "connect-root"]))
        .unwrap();
    s.set_resources(set(&[
        (CLUSTER, "a", "1"),
        (SECRET, "connect-leaf", "1"),
        (SECRET, "connect-root", "1"),
    ]));
    let r = s.poll();
    let types: Vec<_> = r.iter().map(|x| x.type_url.as_str()).collect();
    assert_eq!(types, vec![SECRET, CLUSTER]);
    assert_eq!(
        names(&r[0]),
        nv(&[("connect-leaf", "1"), ("connect-root", "1")])
    );
}
