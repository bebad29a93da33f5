//! Broken transparent-mode mapping against the reference: `ignore-original-dst` sends everything
//! to the first upstream, `forward-unknown` sends unknown destinations there,
//! `ignore-mesh-destinations-only` passes them through, `always-permissive` ignores the mode.

use std::net::SocketAddr;
use std::time::Duration;

use crate::authz::DefaultPolicy;
use crate::dataplane::transparent::{Refusal, Route, route};
use crate::knobs::Knobs;
use crate::sabotage::{Hooks, Sabotage, Sabotages};
use crate::snapshot::{Snapshot, Transparent, Upstream};
use crate::testutil::*;

fn upstream(name: &str, vip: &str) -> Upstream {
    Upstream {
        name: name.into(),
        bind: "127.0.0.1:0".parse().unwrap(),
        connect_timeout: Duration::from_secs(1),
        protocol: crate::knobs::Protocol::Tcp,
        targets: vec![],
        virtual_ips: vec![vip.parse().unwrap()],
        l7: None,
    }
}

fn snap(set: Sabotages) -> Snapshot {
    let ca = TestCa::new("CA");
    let ups = vec![upstream("cache", "240.0.0.1"), upstream("api", "240.0.0.2")];
    let app = "127.0.0.1:1".parse().unwrap();
    let mut s = snapshot(
        &ca,
        app,
        vec![],
        DefaultPolicy::ALLOW,
        Knobs::default(),
        ups,
    );
    s.transparent = Some(Transparent {
        outbound: "127.0.0.1:15001".parse().unwrap(),
        permissive: false,
    });
    s.mesh.mesh_destinations_only = true;
    s.hooks = Hooks::new(set);
    s
}

/// The upstream `dst` goes to, or the refusal.
fn goes_to(s: &Snapshot, dst: &str) -> Result<String, Refusal> {
    let own: SocketAddr = "127.0.0.1:15001".parse().unwrap();
    match route(s, &[own], dst.parse().unwrap()) {
        Route::Upstream { upstream, .. } | Route::Direct { upstream, .. } => {
            Ok(upstream.name.clone())
        }
        Route::Passthrough => Ok("passthrough".into()),
        Route::Refuse(r) => Err(r),
    }
}

#[test]
fn ignore_original_dst_sends_everything_to_the_first_upstream() {
    let good = snap(Sabotages::NONE);
    let bad = snap(Sabotage::IgnoreOriginalDst.into());
    assert_eq!(goes_to(&good, "240.0.0.2:80").as_deref(), Ok("api"));
    assert_eq!(goes_to(&bad, "240.0.0.2:80").as_deref(), Ok("cache"));
    assert_eq!(goes_to(&good, "10.9.9.9:80"), Err(Refusal::Unknown));
    assert_eq!(goes_to(&bad, "10.9.9.9:80").as_deref(), Ok("cache"));
    assert_eq!(goes_to(&bad, "127.0.0.1:15001"), Err(Refusal::OwnListener));
}

#[test]
fn forward_unknown_sends_unknown_destinations_to_the_first_upstream() {
    let good = snap(Sabotages::NONE);
    let bad = snap(Sabotage::ForwardUnknown.into());
    assert_eq!(goes_to(&good, "10.9.9.9:80"), Err(Refusal::Unknown));
    assert_eq!(goes_to(&bad, "10.9.9.9:80").as_deref(), Ok("cache"));
    assert_eq!(
        goes_to(&bad, "240.0.0.2:80").as_deref(),
        Ok("api"),
        "mesh mapping intact"
    );
    assert_eq!(goes_to(&bad, "127.0.0.1:15001"), Err(Refusal::OwnListener));
}

#[test]
fn ignore_mesh_destinations_only_passes_unknown_destinations_through() {
    let good = snap(Sabotages::NONE);
    let bad = snap(Sabotage::IgnoreMeshDestinationsOnly.into());
    assert!(good.mesh.mesh_destinations_only && bad.mesh.mesh_destinations_only);
    assert_eq!(goes_to(&good, "10.9.9.9:80"), Err(Refusal::Unknown));
    assert_eq!(goes_to(&bad, "10.9.9.9:80").as_deref(), Ok("passthrough"));
    assert_eq!(goes_to(&bad, "240.0.0.2:80").as_deref(), Ok("api"));
}

#[test]
fn always_permissive_ignores_the_mode() {
    let good = snap(Sabotages::NONE);
    let bad = snap(Sabotage::AlwaysPermissive.into());
    assert!(!good.hooks.permissive(false));
    assert!(bad.hooks.permissive(false));
    assert!(good.hooks.permissive(true));
}
