//! In-process data-plane tests for the inbound side: mTLS acceptance and refusals, resumption
//! off, L4 intentions, re-authorization of open connections, lifetime, fail-closed start.

mod l4_idle;
mod limits;
mod workers;

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use super::*;
use crate::authz::{DefaultPolicy, Intention, IntentionSet};
use crate::knobs::Knobs;
use crate::testutil::*;
use crate::tls::TrustRoots;

async fn start(snap: Snapshot) -> (watch::Sender<Option<Arc<Snapshot>>>, RunningDataPlane) {
    let (tx, rx) = watch::channel(Some(Arc::new(snap)));
    let dp = DataPlane::new(rx).start().await.unwrap();
    (tx, dp)
}

fn update(tx: &watch::Sender<Option<Arc<Snapshot>>>, f: impl FnOnce(&mut Snapshot)) {
    tx.send_modify(|s| {
        if let Some(cur) = s {
            let mut next = (**cur).clone();
            f(&mut next);
            *s = Some(Arc::new(next));
        }
    });
}

#[tokio::test]
async fn inbound_accepts_good_clients_and_refuses_bad_ones() {
    let ca = TestCa::new("Consul CA 1");
    let other = TestCa::new("Other cluster CA");
    let app = echo_app().await;
    let (_tx, dp) = start(snapshot(
        &ca,
        app,
        vec![],
        DefaultPolicy::ALLOW,
        Knobs::default(),
        vec![],
    ))
    .await;
    let addr = dp.inbound_addr();
    let roots = ca.roots();

    let good = ca.service_leaf("web");
    let got = probe(
        addr,
        client_config(Some(&good), &roots, "db", true),
        b"ping",
    )
    .await;
    assert_eq!(
        got.as_deref(),
        Ok(&b"ping"[..]),
        "good client, served identity is db"
    );

    let refused: Vec<(&str, Option<TestLeaf>)> = vec![
        ("untrusted CA", Some(other.service_leaf("web"))),
        (
            "expired",
            Some(ca.leaf_with(Some(&svc_uri(TD, "web")), -48, -24)),
        ),
        (
            "not yet valid",
            Some(ca.leaf_with(Some(&svc_uri(TD, "web")), 24, 48)),
        ),
        ("no client certificate", None),
        ("no URI SAN", Some(ca.leaf_with(None, -1, 24))),
        (
            "agent ID",
            Some(ca.leaf_with(
                Some(&format!("spiffe://{TD}/agent/client/dc/dc1/id/n1")),
                -1,
                24,
            )),
        ),
        (
            "non-SPIFFE URI",
            Some(ca.leaf_with(Some("https://web.example"), -1, 24)),
        ),
    ];
    for (what, leaf) in refused {
        let r = probe(
            addr,
            client_config(leaf.as_ref(), &roots, "db", true),
            b"ping",
        )
        .await;
        assert!(r.is_err(), "{what} must be refused, got {r:?}");
    }

    // A client that expects another service refuses the proxy (served identity check).
    let r = probe(
        addr,
        client_config(Some(&good), &roots, "cache", true),
        b"ping",
    )
    .await;
    assert!(r.is_err(), "served leaf must be db's");
    // Metrics counted the refusals.
    assert!(dp.open_connections() <= 1);
}

#[tokio::test]
async fn cross_signed_chain_is_accepted_with_old_root_only() {
    let old = TestCa::new("Consul CA 1");
    let new = TestCa::new("Consul CA 2");
    let app = echo_app().await;
    let (_tx, dp) = start(snapshot(
        &old,
        app,
        vec![],
        DefaultPolicy::ALLOW,
        Knobs::default(),
        vec![],
    ))
    .await;
    let leaf = new
        .service_leaf("web")
        .with_extra(new.cross_signed_by(&old));
    let got = probe(
        dp.inbound_addr(),
        client_config(Some(&leaf), &old.roots(), "db", true),
        b"x",
    )
    .await;
    assert_eq!(got.as_deref(), Ok(&b"x"[..]));
    // Without the cross-signed intermediate it is refused.
    let bare = new.service_leaf("web");
    let r = probe(
        dp.inbound_addr(),
        client_config(Some(&bare), &old.roots(), "db", true),
        b"x",
    )
    .await;
    assert!(r.is_err());
}

#[tokio::test]
async fn session_resumption_is_off() {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    let (_tx, dp) = start(snapshot(
        &ca,
        app,
        vec![],
        DefaultPolicy::ALLOW,
        Knobs::default(),
        vec![],
    ))
    .await;
    // One client config with resumption enabled, used twice.
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", true);
    for round in 0..3 {
        let mut s = connect(dp.inbound_addr(), cfg.clone()).await.unwrap();
        assert_eq!(echo_once(&mut s, b"r").await.unwrap(), b"r");
        assert_eq!(
            s.get_ref().1.handshake_kind(),
            Some(rustls::HandshakeKind::Full),
            "round {round} must be a full handshake"
        );
    }
}

#[tokio::test]
async fn intentions_allow_and_deny_by_uri_san() {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    let ixns = vec![
        Intention::l4("web", "db", true),
        Intention::l4("api", "db", false),
    ];
    let (_tx, dp) = start(snapshot(
        &ca,
        app,
        ixns,
        DefaultPolicy::ALLOW,
        Knobs::default(),
        vec![],
    ))
    .await;
    let roots = ca.roots();
    let web = client_config(Some(&ca.service_leaf("web")), &roots, "db", false);
    let api = client_config(Some(&ca.service_leaf("api")), &roots, "db", false);
    assert_eq!(
        probe(dp.inbound_addr(), web, b"w").await.as_deref(),
        Ok(&b"w"[..])
    );
    assert!(probe(dp.inbound_addr(), api, b"a").await.is_err());
}

#[tokio::test]
async fn default_policy_is_followed() {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    for allow in [false, true] {
        let policy = if allow {
            DefaultPolicy::ALLOW
        } else {
            DefaultPolicy::DENY
        };
        let (_tx, dp) = start(snapshot(&ca, app, vec![], policy, Knobs::default(), vec![])).await;
        let web = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
        assert_eq!(probe(dp.inbound_addr(), web, b"p").await.is_ok(), allow);
    }
}

/// Reads from `s` until EOF or error, within `limit`.
async fn closed_within<S: AsyncReadExt + Unpin>(s: &mut S, limit: Duration) -> bool {
    let mut buf = [0u8; 64];
    tokio::time::timeout(limit, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

#[tokio::test]
async fn intention_flip_closes_open_connection() {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    let knobs = Knobs {
        reauthorize_interval: Duration::from_secs(1),
        ..Knobs::default()
    };
    let (tx, dp) = start(snapshot(
        &ca,
        app,
        vec![Intention::l4("web", "db", true)],
        DefaultPolicy::DENY,
        knobs,
        vec![],
    ))
    .await;
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let mut s = connect(dp.inbound_addr(), cfg.clone()).await.unwrap();
    assert_eq!(echo_once(&mut s, b"1").await.unwrap(), b"1");
    // An unrelated change keeps it open.
    update(&tx, |n| {
        n.intentions = Arc::new(IntentionSet::new(
            "db",
            vec![
                Intention::l4("web", "db", true),
                Intention::l4("api", "db", false),
            ],
        ));
    });
    assert_eq!(echo_once(&mut s, b"2").await.unwrap(), b"2");
    // Flip to deny: closed within the reauthorize interval.
    update(&tx, |n| {
        n.intentions = Arc::new(IntentionSet::new(
            "db",
            vec![Intention::l4("web", "db", false)],
        ));
    });
    assert!(
        closed_within(&mut s, Duration::from_secs(2)).await,
        "open connection must be cut"
    );
    assert!(
        probe(dp.inbound_addr(), cfg, b"3").await.is_err(),
        "new connections refused"
    );
}

#[tokio::test]
async fn root_removal_closes_open_connection_and_rotation_keeps_it() {
    let old = TestCa::new("Consul CA 1");
    let new = TestCa::new("Consul CA 2");
    let app = echo_app().await;
    let (tx, dp) = start(snapshot(
        &old,
        app,
        vec![],
        DefaultPolicy::ALLOW,
        Knobs::default(),
        vec![],
    ))
    .await;
    let cfg = client_config(
        Some(&old.service_leaf("web")),
        &TrustRoots::from_ders(vec![old.root(), new.root()], TD).unwrap(),
        "db",
        false,
    );
    let mut s = connect(dp.inbound_addr(), cfg).await.unwrap();
    assert_eq!(echo_once(&mut s, b"a").await.unwrap(), b"a");
    // Rotation: both roots trusted, new leaf served. The open connection survives.
    update(&tx, |n| {
        n.roots = TrustRoots::from_ders(vec![old.root(), new.root()], TD).unwrap();
        n.leaf = new.service_leaf("db").leaf();
    });
    assert_eq!(echo_once(&mut s, b"b").await.unwrap(), b"b");
    // New-root clients are accepted, and the proxy now serves a new-root leaf.
    let new_only = client_config(Some(&new.service_leaf("web")), &new.roots(), "db", false);
    assert_eq!(
        probe(dp.inbound_addr(), new_only, b"n").await.as_deref(),
        Ok(&b"n"[..])
    );
    // Old root pruned: the old-root peer's connection is cut.
    update(&tx, |n| n.roots = new.roots());
    assert!(closed_within(&mut s, Duration::from_secs(2)).await);
}

/// A data plane with `knobs` in front of an echo app (every caller allowed), and a caller's
/// connection that has echoed once.
async fn echoed_once(
    knobs: Knobs,
) -> (
    watch::Sender<Option<Arc<Snapshot>>>,
    RunningDataPlane,
    tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
) {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    let snap = snapshot(&ca, app, vec![], DefaultPolicy::ALLOW, knobs, vec![]);
    let (tx, dp) = start(snap).await;
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let mut s = connect(dp.inbound_addr(), cfg).await.unwrap();
    assert_eq!(echo_once(&mut s, b"a").await.unwrap(), b"a");
    (tx, dp, s)
}

#[tokio::test]
async fn max_lifetime_closes_connections() {
    let knobs = Knobs {
        max_connection_lifetime: Some(Duration::from_millis(300)),
        ..Knobs::default()
    };
    let (_tx, _dp, mut s) = echoed_once(knobs).await;
    assert!(closed_within(&mut s, Duration::from_secs(3)).await);
}

#[tokio::test]
async fn no_listener_before_first_snapshot_and_bind_errors_are_clear() {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (tx, rx) = watch::channel(None);
    let start = tokio::spawn(DataPlane::new(rx).start());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!start.is_finished());
    assert!(
        tokio::net::TcpStream::connect(port).await.is_err(),
        "fail closed: nothing bound"
    );
    let mut snap = snapshot(
        &ca,
        app,
        vec![],
        DefaultPolicy::ALLOW,
        Knobs::default(),
        vec![],
    );
    snap.public_listener = port;
    tx.send_replace(Some(Arc::new(snap.clone())));
    let dp = start.await.unwrap().unwrap();
    assert_eq!(dp.inbound_addr(), port);
    // A second data plane on the same port fails with a clear error.
    let (_tx2, rx2) = watch::channel(Some(Arc::new(snap)));
    let err = DataPlane::new(rx2).start().await.unwrap_err();
    assert!(matches!(err, DataPlaneError::BindInbound { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with(&format!("cannot bind the public listener on {port}")),
        "{err}"
    );
    // Dropping the sender before any snapshot is reported too.
    let (tx3, rx3) = watch::channel::<Option<Arc<Snapshot>>>(None);
    drop(tx3);
    assert!(matches!(
        DataPlane::new(rx3).start().await,
        Err(DataPlaneError::NoSnapshot)
    ));
}

#[tokio::test]
async fn shutdown_stops_accepting_and_drains() {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    let (_tx, dp) = start(snapshot(
        &ca,
        app,
        vec![],
        DefaultPolicy::ALLOW,
        Knobs::default(),
        vec![],
    ))
    .await;
    let addr = dp.inbound_addr();
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let mut s = connect(addr, cfg).await.unwrap();
    assert_eq!(echo_once(&mut s, b"a").await.unwrap(), b"a");
    let t0 = tokio::time::Instant::now();
    dp.shutdown(Duration::from_millis(300)).await;
    assert!(t0.elapsed() < Duration::from_secs(2), "drain is bounded");
    assert!(closed_within(&mut s, Duration::from_secs(2)).await);
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "listener closed"
    );
}
