//! HTTP/2 sabotages seen misbehaving where the reference (tested in `dataplane::l7` and
//! `dataplane::outbound`) does not: `authorize-per-connection` on streams, `ignore-grpc-paths`,
//! `drop-trailers` inbound and through an upstream listener.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;

use crate::authz::{DefaultPolicy, Intention, IntentionSet};
use crate::dataplane::{DataPlane, RunningDataPlane};
use crate::knobs::{Knobs, Protocol};
use crate::metrics::Metrics;
use crate::sabotage::{Hooks, Sabotage, Sabotages};
use crate::snapshot::{Endpoint, Snapshot, Target, Upstream};
use crate::testutil::h2::*;
use crate::testutil::*;

const ALLOWED: &str = "/pkg.Svc/Allowed";

fn sabotaged(mut snap: Snapshot, ixns: Vec<Intention>, set: Sabotages) -> Snapshot {
    snap.intentions = Arc::new(IntentionSet::new("db", ixns).with_sabotage(set));
    snap.hooks = Hooks::new(set);
    snap
}

/// `db` (gRPC, only `ALLOWED` permitted to `web`) under `set`, and an HTTP/2 client as `web`.
async fn db(
    set: Sabotages,
    app: SocketAddr,
) -> (
    Tx,
    RunningDataPlane,
    hyper::client::conn::http2::SendRequest<ChanBody>,
    TestCa,
) {
    let ca = TestCa::new("Consul CA 1");
    let ixns = vec![Intention::l7("web", "db", grpc_method_only(ALLOWED))];
    let snap = sabotaged(db_snapshot(&ca, app, Protocol::Grpc, vec![]), ixns, set);
    let (tx, dp) = start_snap(&Metrics::new(), snap).await;
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let (c, _) = h2_tls_client(dp.inbound_addr(), cfg).await;
    (tx, dp, c, ca)
}

#[tokio::test]
async fn authorize_per_connection_reuses_the_first_streams_decision() {
    let (app, _) = h2_app().await;
    let (tx, _dp, mut c, _ca) = db(Sabotage::AuthorizePerConnection.into(), app).await;
    let first = call(&mut c, ALLOWED, true, body_of(b"x")).await.unwrap();
    assert_eq!(first.get("grpc-status"), "0");
    set_intentions(&tx, vec![Intention::l4("web", "db", false)]);
    let after = call(&mut c, ALLOWED, true, body_of(b"x")).await.unwrap();
    assert_eq!(
        after.get("grpc-status"),
        "0",
        "sabotaged: the first decision sticks"
    );
    let other = call(&mut c, "/pkg.Svc/Other", true, body_of(b"x"))
        .await
        .unwrap();
    assert_eq!(
        other.get("grpc-status"),
        "0",
        "even for methods never allowed"
    );
}

#[tokio::test]
async fn ignore_grpc_paths_lets_any_method_through() {
    let (app, _) = h2_app().await;
    let (_tx, _dp, mut c, _ca) = db(Sabotage::IgnoreGrpcPaths.into(), app).await;
    let other = call(&mut c, "/pkg.Svc/Other", true, body_of(b"x"))
        .await
        .unwrap();
    assert_eq!(
        other.get("grpc-status"),
        "0",
        "sabotaged: path ignored for gRPC"
    );
    assert_eq!(other.headers["x-seen-path"], "/pkg.Svc/Other");
    let plain = call(&mut c, "/pkg.Svc/Other", false, body_of(b"x"))
        .await
        .unwrap();
    assert_eq!(
        plain.status,
        StatusCode::FORBIDDEN,
        "non-gRPC still matched"
    );
}

#[tokio::test]
async fn drop_trailers_inbound_and_upstream() {
    let (app, _) = h2_app().await;
    let set: Sabotages = Sabotage::DropTrailers.into();
    let (_tx, db, mut c, ca) = db(set, app).await;
    let a = call(&mut c, ALLOWED, true, body_of(b"x")).await.unwrap();
    assert_eq!((a.status, &a.body[..]), (StatusCode::OK, &b"x"[..]));
    assert_eq!(a.trailers, None, "sabotaged: trailers dropped inbound");

    // A clean `db`, a sabotaged `web` upstream listener in front of it.
    let ixns = vec![Intention::l7("web", "db", grpc_method_only(ALLOWED))];
    let (_db2_tx, db2) = start(&Metrics::new(), &ca, app, Protocol::Grpc, ixns).await;
    let (_web_tx, web) = web_with_upstream(&ca, db2.inbound_addr(), set).await;
    let mut c = h2c_client(web.upstream_addr("db").unwrap()).await;
    let a = call(&mut c, ALLOWED, true, body_of(b"y")).await.unwrap();
    assert_eq!((a.status, &a.body[..]), (StatusCode::OK, &b"y"[..]));
    assert_eq!(a.trailers, None, "sabotaged: trailers dropped upstream");
    drop(db);
}

type Tx = tokio::sync::watch::Sender<Option<Arc<Snapshot>>>;

/// `web` (under `set`) with a gRPC upstream `db` at `db`.
async fn web_with_upstream(ca: &TestCa, db: SocketAddr, set: Sabotages) -> (Tx, RunningDataPlane) {
    let up = Upstream {
        name: "db".into(),
        bind: "127.0.0.1:0".parse().unwrap(),
        connect_timeout: Duration::from_secs(2),
        protocol: Protocol::Grpc,
        targets: vec![Target {
            id: "db.default.default.dc1".into(),
            service: "db".into(),
            namespace: "default".into(),
            datacenter: "dc1".into(),
            endpoints: vec![Endpoint {
                host: db.ip().to_string(),
                port: db.port(),
                datacenter: "dc1".into(),
                label: "n1/db".into(),
                dialed_directly: false,
            }],
        }],
        virtual_ips: vec![],
    };
    let unused: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let mut snap = snapshot(
        ca,
        unused,
        vec![],
        DefaultPolicy::DENY,
        Knobs::default(),
        vec![up],
    );
    snap.service = "web".into();
    snap.leaf = ca.service_leaf("web").leaf();
    snap.hooks = Hooks::new(set);
    let (tx, rx) = tokio::sync::watch::channel(Some(Arc::new(snap)));
    (tx, DataPlane::new(rx).start().await.unwrap())
}
