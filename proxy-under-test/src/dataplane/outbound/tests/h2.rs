//! Upstream listeners for gRPC upstreams: the app's h2c streams reach an instance's proxy over
//! mTLS (ALPN `h2`, our identity), per-stream answers and trailers come back intact, 16 MiB bodies
//! pass, resets come back as resets, and the pooled connection is redialed after a failure.

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;

use super::{ep, target};
use crate::authz::{DefaultPolicy, Intention};
use crate::dataplane::DataPlane;
use crate::knobs::{Knobs, Protocol};
use crate::metrics::Metrics;
use crate::snapshot::Upstream;
use crate::testutil::h2::*;
use crate::testutil::*;

const ALLOWED: &str = "/pkg.Svc/Allowed";

pub(super) fn web_snapshot(ca: &TestCa, db: std::net::SocketAddr) -> crate::snapshot::Snapshot {
    let up = Upstream {
        name: "db".into(),
        bind: "127.0.0.1:0".parse().unwrap(),
        connect_timeout: Duration::from_secs(2),
        protocol: Protocol::Grpc,
        targets: vec![target("db", vec![ep(db, "n1/db")])],
        virtual_ips: vec![],
        l7: None,
    };
    let unused: std::net::SocketAddr = "127.0.0.1:9".parse().unwrap();
    let mut snap = snapshot(
        ca,
        unused,
        vec![],
        DefaultPolicy::DENY,
        Knobs::default(),
        vec![up],
    );
    snap.service = "web".into();
    snap.proxy_id = "web-sidecar-proxy".into();
    snap.leaf = ca.service_leaf("web").leaf();
    snap
}

#[tokio::test]
async fn grpc_through_an_upstream_listener_over_mtls() {
    let ca = TestCa::new("Consul CA 1");
    let (app, _) = h2_app().await;
    let mut perms = grpc_method_only(ALLOWED);
    perms.extend(grpc_method_only("/reset"));
    let ixns = vec![Intention::l7("web", "db", perms)];
    let (_db_tx, db) = start(&Metrics::new(), &ca, app, Protocol::Grpc, ixns.clone()).await;
    let (web_tx, rx) =
        tokio::sync::watch::channel(Some(Arc::new(web_snapshot(&ca, db.inbound_addr()))));
    let web = DataPlane::new(rx).start().await.unwrap();
    let mut c = h2c_client(web.upstream_addr("db").unwrap()).await;

    let ok = call(&mut c, ALLOWED, true, body_of(b"ping")).await.unwrap();
    assert_eq!((ok.status, &ok.body[..]), (StatusCode::OK, &b"ping"[..]));
    assert_eq!(
        ok.headers["x-seen-xfcc"].to_str().unwrap(),
        "",
        "gRPC: the instance's sidecar sanitizes XFCC (includeXFCC && notGRPC)"
    );
    assert_eq!(ok.headers["x-seen-md"], "md-value");
    let t = ok.trailers.as_ref().expect("trailers");
    assert_eq!(t["grpc-status"], "0");
    assert_eq!(t["x-custom-trailer"], "kept");

    // The instance's proxy refuses another method: PERMISSION_DENIED comes back unchanged.
    let denied = call(&mut c, "/pkg.Svc/Other", true, body_of(b"x"))
        .await
        .unwrap();
    assert_eq!(
        (denied.get("grpc-status"), denied.get("grpc-message")),
        ("7", "RBAC: access denied")
    );

    // Large bodies both ways on the same pooled connection.
    let big: Vec<u8> = (0..16 * 1024 * 1024).map(|i| (i % 253) as u8).collect();
    let a = call(&mut c, ALLOWED, true, body_of(&big)).await.unwrap();
    assert!(a.body.len() == big.len() && a.body[..] == big[..]);
    assert_eq!(a.get("grpc-status"), "0");

    // A reset by the app comes back as a reset.
    let err = call(&mut c, "/reset", true, body_of(b"x"))
        .await
        .unwrap_err();
    assert!(err.contains("INTERNAL_ERROR"), "{err}");

    // The instance goes away: UNAVAILABLE; a new one at another address is dialed afresh.
    db.shutdown(Duration::from_millis(100)).await;
    let gone = call(&mut c, ALLOWED, true, body_of(b"x")).await.unwrap();
    assert_eq!(gone.get("grpc-status"), "14", "{gone:?}");
    let (_db_tx2, db2) = start(&Metrics::new(), &ca, app, Protocol::Grpc, ixns).await;
    web_tx.send_modify(|cur| {
        let mut next = (**cur.as_ref().unwrap()).clone();
        next.upstreams[0].targets = vec![target("db", vec![ep(db2.inbound_addr(), "n2/db")])];
        *cur = Some(Arc::new(next));
    });
    let back = call(&mut c, ALLOWED, true, body_of(b"again"))
        .await
        .unwrap();
    assert_eq!(
        (&back.body[..], back.get("grpc-status")),
        (&b"again"[..], "0")
    );
}
