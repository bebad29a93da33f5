//! `drop-on-change` against the reference: an open web connection (raw TCP or HTTP keep-alive)
//! that a change does not concern is closed when the intentions, the leaf or the roots are
//! reloaded, and kept through any other snapshot change.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;

use super::dataplane::{Tx, closed_within, http_app, snap, start};
use crate::authz::{DefaultPolicy, Intention, IntentionSet};
use crate::knobs::{Knobs, Protocol};
use crate::sabotage::{Sabotage, Sabotages};
use crate::testutil::*;

/// How long an open connection is watched after the change: the sabotaged proxy closes it at
/// once (the wait ends early); the reference must keep it open all along.
const WINDOW: Duration = Duration::from_millis(1500);

/// What a new snapshot changes while the web connection is open.
#[derive(Debug, Clone, Copy)]
enum Change {
    /// api -> db flipped to deny (web is still allowed).
    Intentions,
    /// A renewed db leaf.
    Leaf,
    /// The same root, loaded again.
    Roots,
    /// A new snapshot with the same intentions, leaf and roots.
    Nothing,
}

fn intentions(api_allowed: bool) -> Vec<Intention> {
    vec![
        Intention::l4("web", "db", true),
        Intention::l4("api", "db", api_allowed),
    ]
}

fn publish(tx: &Tx, ca: &TestCa, change: Change, set: Sabotages) {
    tx.send_modify(|s| {
        let Some(cur) = s else { return };
        let mut next = (**cur).clone();
        match change {
            Change::Intentions => {
                next.intentions =
                    Arc::new(IntentionSet::new("db", intentions(false)).with_sabotage(set));
            }
            Change::Leaf => next.leaf = ca.service_leaf("db").leaf(),
            Change::Roots => next.roots = ca.roots(),
            Change::Nothing => {}
        }
        *s = Some(Arc::new(next));
    });
}

/// Whether an open web connection still carries bytes after `change`, watched for [`WINDOW`].
async fn survives(set: Sabotages, change: Change) -> bool {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    let knobs = Knobs::default();
    let (tx, dp) = start(snap(
        &ca,
        app,
        intentions(true),
        DefaultPolicy::DENY,
        knobs,
        set,
    ))
    .await;
    let web = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let api = client_config(Some(&ca.service_leaf("api")), &ca.roots(), "db", false);
    let mut open = connect(dp.inbound_addr(), web.clone()).await.unwrap();
    assert_eq!(echo_once(&mut open, b"1").await.unwrap(), b"1");
    publish(&tx, &ca, change, set);
    // The data plane has the new snapshot: new connections follow it.
    let api_now = probe(dp.inbound_addr(), api, b"a").await;
    assert_eq!(
        api_now.is_ok(),
        !matches!(change, Change::Intentions),
        "{set} {change:?}: new api connections follow the intentions"
    );
    let web_now = probe(dp.inbound_addr(), web, b"w").await;
    assert_eq!(
        web_now.as_deref(),
        Ok(&b"w"[..]),
        "{set} {change:?}: web allowed"
    );
    if closed_within(&mut open, WINDOW).await {
        return false;
    }
    echo_once(&mut open, b"2").await.as_deref() == Ok(&b"2"[..])
}

#[tokio::test]
async fn drop_on_change_closes_open_connections_when_intentions_leaf_or_roots_change() {
    let broken: Sabotages = Sabotage::DropOnChange.into();
    for change in [Change::Intentions, Change::Leaf, Change::Roots] {
        assert!(
            survives(Sabotages::NONE, change).await,
            "reference, {change:?}: the open connection survives"
        );
        assert!(
            !survives(broken, change).await,
            "drop-on-change, {change:?}: the open connection is dropped"
        );
    }
}

#[tokio::test]
async fn drop_on_change_keeps_connections_through_other_snapshot_changes() {
    let broken: Sabotages = Sabotage::DropOnChange.into();
    assert!(survives(broken, Change::Nothing).await);
}

/// Whether a keep-alive HTTP connection as web still answers 200 after a leaf renewal, watched
/// for [`WINDOW`].
async fn http_survives(set: Sabotages) -> bool {
    let ca = TestCa::new("Consul CA 1");
    let app = http_app().await;
    let knobs = Knobs {
        protocol: Protocol::Http,
        ..Knobs::default()
    };
    let (tx, dp) = start(snap(
        &ca,
        app,
        intentions(true),
        DefaultPolicy::DENY,
        knobs,
        set,
    ))
    .await;
    let web = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let tls = connect(dp.inbound_addr(), web).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    let mut conn = tokio::spawn(conn);
    let get = || {
        Request::get("/")
            .header("host", "db")
            .body(Empty::<Bytes>::new())
            .unwrap()
    };
    let first = sender.send_request(get()).await.unwrap();
    assert_eq!(first.status(), 200, "{set}: allowed before the change");
    first.into_body().collect().await.unwrap();
    publish(&tx, &ca, Change::Leaf, set);
    // The connection task ends when the proxy closes the connection.
    if tokio::time::timeout(WINDOW, &mut conn).await.is_ok() {
        return false;
    }
    match sender.send_request(get()).await {
        Ok(resp) => resp.status() == 200,
        Err(_) => false,
    }
}

#[tokio::test]
async fn drop_on_change_closes_keep_alive_http_connections_too() {
    assert!(http_survives(Sabotages::NONE).await, "reference");
    assert!(
        !http_survives(Sabotage::DropOnChange.into()).await,
        "drop-on-change"
    );
}
