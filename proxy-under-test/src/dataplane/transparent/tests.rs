//! Transparent-mode tests: the mapping (virtual IP, instance address, dialed directly, unknown,
//! passthrough knob, the listener itself) as a pure function; the listener itself in
//! [`listener`].

mod listener;

use std::net::SocketAddr;
use std::time::Duration;

use super::first_then;
use super::{Refusal, Route, route};
use crate::authz::DefaultPolicy;
use crate::knobs::Knobs;
use crate::snapshot::{Endpoint, Snapshot, Target, Transparent, Upstream};
use crate::testutil::*;

fn ep(host: &str, port: u16, label: &str, dialed_directly: bool) -> Endpoint {
    Endpoint {
        host: host.into(),
        port,
        datacenter: "dc1".into(),
        label: label.into(),
        dialed_directly,
    }
}

fn target(service: &str, endpoints: Vec<Endpoint>) -> Target {
    Target {
        id: format!("{service}.default.default.dc1"),
        service: service.into(),
        namespace: "default".into(),
        datacenter: "dc1".into(),
        endpoints,
    }
}

fn upstream(name: &str, vips: &[&str], targets: Vec<Target>) -> Upstream {
    Upstream {
        name: name.into(),
        bind: "127.0.0.1:0".parse().unwrap(),
        connect_timeout: Duration::from_secs(2),
        protocol: crate::knobs::Protocol::Tcp,
        targets,
        virtual_ips: vips.iter().map(|v| v.parse().unwrap()).collect(),
        l7: None,
    }
}

fn transparent_snapshot(
    ca: &TestCa,
    app: SocketAddr,
    ups: Vec<Upstream>,
    knobs: Knobs,
) -> Snapshot {
    let mut s = snapshot(ca, app, vec![], DefaultPolicy::ALLOW, knobs, ups);
    s.transparent = Some(Transparent {
        outbound: "127.0.0.1:0".parse().unwrap(),
        permissive: false,
    });
    s
}

/// `cache` (VIP 240.0.0.1, instances 10.0.0.5:21000 and 10.0.0.6:21000, the latter dialed
/// directly) and `api` (VIP 240.0.0.2 and fd00::2, instance 10.0.0.9:21001).
fn mesh_snapshot(knobs: Knobs) -> Snapshot {
    let ca = TestCa::new("CA");
    let cache = upstream(
        "cache",
        &["240.0.0.1"],
        vec![target(
            "cache",
            vec![
                ep("10.0.0.5", 21000, "n1/cache-1", false),
                ep("10.0.0.6", 21000, "n2/cache-2", true),
            ],
        )],
    );
    let api = upstream(
        "api",
        &["240.0.0.2", "fd00::2"],
        vec![target(
            "api",
            vec![ep("10.0.0.9", 21001, "n3/api-1", false)],
        )],
    );
    transparent_snapshot(&ca, "127.0.0.1:1".parse().unwrap(), vec![cache, api], knobs)
}

const OWN: &str = "127.0.0.1:15001";

fn to<'a>(snap: &'a Snapshot, dst: &str) -> Route<'a> {
    route(snap, &[OWN.parse().unwrap()], dst.parse().unwrap())
}

fn upstream_of<'a>(r: &Route<'a>) -> Option<(&'a str, Option<&'a str>)> {
    match r {
        Route::Upstream { upstream, first } => {
            Some((upstream.name.as_str(), first.map(|(_, e)| e.label.as_str())))
        }
        _ => None,
    }
}

#[test]
fn a_virtual_ip_maps_to_its_upstream_on_any_port() {
    let snap = mesh_snapshot(Knobs::default());
    assert_eq!(
        upstream_of(&to(&snap, "240.0.0.1:80")),
        Some(("cache", None))
    );
    assert_eq!(
        upstream_of(&to(&snap, "240.0.0.1:6379")),
        Some(("cache", None))
    );
    assert_eq!(
        upstream_of(&to(&snap, "240.0.0.2:443")),
        Some(("api", None))
    );
    assert_eq!(
        upstream_of(&to(&snap, "[fd00::2]:443")),
        Some(("api", None)),
        "IPv6"
    );
    assert_eq!(
        upstream_of(&to(&snap, "[::ffff:240.0.0.2]:443")),
        Some(("api", None)),
        "an IPv4-mapped IPv6 destination is its IPv4 address"
    );
}

#[test]
fn an_instance_address_maps_to_its_upstream_dialing_it_first() {
    let snap = mesh_snapshot(Knobs::default());
    assert_eq!(
        upstream_of(&to(&snap, "10.0.0.5:21000")),
        Some(("cache", Some("n1/cache-1")))
    );
    assert_eq!(
        upstream_of(&to(&snap, "10.0.0.9:21001")),
        Some(("api", Some("n3/api-1")))
    );
    // The instance's IP on another port is not that instance (it does not allow direct dials).
    assert_eq!(to(&snap, "10.0.0.5:8080"), Route::Passthrough);
}

#[test]
fn dialed_directly_instances_are_reached_at_the_original_destination() {
    let snap = mesh_snapshot(Knobs::default());
    let Route::Direct {
        upstream,
        target,
        endpoint,
    } = to(&snap, "10.0.0.6:8080")
    else {
        panic!("expected a direct dial");
    };
    assert_eq!(
        (upstream.name.as_str(), target.service.as_str()),
        ("cache", "cache")
    );
    assert_eq!((endpoint.host.as_str(), endpoint.port), ("10.0.0.6", 8080));
    assert_eq!(endpoint.datacenter, "dc1");
}

#[test]
fn unknown_destinations_pass_through_unless_mesh_destinations_only() {
    let mut snap = mesh_snapshot(Knobs::default());
    snap.mesh.mesh_destinations_only = true;
    for dst in [
        "93.184.216.34:443",
        "240.0.0.3:80",
        "10.0.0.7:21000",
        "[2001:db8::1]:80",
    ] {
        assert_eq!(to(&snap, dst), Route::Refuse(Refusal::Unknown), "{dst}");
    }
    // Consul's default (no mesh entry): the `original_destination` passthrough.
    let open = mesh_snapshot(Knobs::default());
    assert_eq!(to(&open, "93.184.216.34:443"), Route::Passthrough);
    assert_eq!(
        upstream_of(&to(&open, "240.0.0.1:80")),
        Some(("cache", None)),
        "mesh destinations still go through the mesh"
    );
}

#[test]
fn the_listener_itself_is_refused_even_with_passthrough() {
    let open = mesh_snapshot(Knobs::default());
    assert_eq!(to(&open, OWN), Route::Refuse(Refusal::OwnListener));
    assert_eq!(
        to(&open, "[::ffff:127.0.0.1]:15001"),
        Route::Refuse(Refusal::OwnListener)
    );
    // The accepted socket's own local address counts too.
    let own = [
        "127.0.0.1:15001".parse().unwrap(),
        "127.0.0.5:15001".parse().unwrap(),
    ];
    assert_eq!(
        route(&open, &own, "127.0.0.5:15001".parse().unwrap()),
        Route::Refuse(Refusal::OwnListener)
    );
    assert_eq!(to(&open, "127.0.0.1:15002"), Route::Passthrough);
}

#[test]
fn the_named_instance_comes_first_then_the_usual_candidates() {
    let snap = mesh_snapshot(Knobs::default());
    let up = &snap.upstreams[0];
    let t = &up.targets[0];
    let second = (t, &t.endpoints[1]);
    let labels =
        |v: Vec<(&Target, &Endpoint)>| v.iter().map(|(_, e)| e.label.clone()).collect::<Vec<_>>();
    let rest = super::candidates(up, 0);
    assert_eq!(
        labels(first_then(Some(second), rest.clone())),
        ["n2/cache-2", "n1/cache-1"]
    );
    assert_eq!(labels(first_then(None, rest)), ["n1/cache-1", "n2/cache-2"]);
}
