//! Outbound: the `cache` upstream through fake mTLS instances registered in the sim's catalog:
//! identity checks both ways, impostors refused, health changes, resolver redirect and failover.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use agent_sim::CheckUpdate;
use serde_json::json;

use super::support::*;

/// A world whose `db` sidecar has upstream `cache` on a fixed local port.
async fn world() -> (World, SocketAddr) {
    let up = free_port();
    let w = World::new(
        sim_builder(),
        json!({"Config": {"reauthorize_interval_ms": 200},
               "Upstreams": [{"DestinationName": "cache", "LocalBindPort": up}]}),
    )
    .await;
    (w, SocketAddr::from(([127, 0, 0, 1], up)))
}

/// A fake instance `name` proving `identity_of`, registered for `service` on node `node`.
async fn instance(
    w: &World,
    name: &str,
    identity_of: &str,
    node: &str,
    service: &str,
) -> FakeUpstream {
    let c = w.c();
    let u = FakeUpstream::start(
        name,
        &c.issue_identity(identity_of).unwrap(),
        &c.root_pems(),
    )
    .await;
    u.register(c, node, service);
    u
}

/// The instances that answered `n` connections through `addr` (failures are recorded as
/// `!error`).
async fn answers(addr: SocketAddr, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(via_upstream(addr).await.unwrap_or_else(|e| format!("!{e}")));
    }
    out
}

fn set_check(w: &World, node: &str, instance: &str, status: &str) {
    w.c()
        .set_check(CheckUpdate {
            node: Some(node.into()),
            check_id: format!("{instance}-alive"),
            status: status.into(),
            output: None,
        })
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_traffic_is_mutual_tls_with_identities_checked() {
    let (w, addr) = world().await;
    let c1 = instance(&w, "cache-1", "cache", "n2", "cache").await;
    let c2 = instance(&w, "cache-2", "cache", "n3", "cache").await;
    let proxy = w.proxy().await;
    assert_eq!(proxy.upstream_addr("cache"), Some(addr));
    // Endpoints arrive with the health watch; the listener is up from the first snapshot.
    eventually("both instances reached", PATIENCE, || async {
        let got: BTreeSet<String> = answers(addr, 4).await.into_iter().collect();
        got == BTreeSet::from(["cache-1".to_owned(), "cache-2".to_owned()])
    })
    .await;
    let db = format!("spiffe://{}/ns/default/dc/dc1/svc/db", w.c().trust_domain());
    for u in [&c1, &c2] {
        let seen = u.client_uris();
        assert!(!seen.is_empty());
        assert!(seen.iter().all(|s| *s == db), "{}: {seen:?}", u.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impostor_instances_get_no_traffic() {
    let (w, addr) = world().await;
    // Registered as cache, proves to be web.
    let impostor = instance(&w, "cache-x", "web", "n2", "cache").await;
    let _proxy = w.proxy().await;
    stays("impostor alone: connection closed", 5, || async {
        via_upstream(addr).await.is_err()
    })
    .await;
    let _good = instance(&w, "cache-1", "cache", "n3", "cache").await;
    eventually("good instance reached", PATIENCE, || async {
        via_upstream(addr).await.as_deref() == Ok("cache-1")
    })
    .await;
    for got in answers(addr, 6).await {
        assert_eq!(got, "cache-1");
    }
    assert!(
        impostor.client_uris().is_empty(),
        "impostor completed a handshake"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_changes_move_traffic() {
    let (w, addr) = world().await;
    let _c1 = instance(&w, "cache-1", "cache", "n2", "cache").await;
    let _c2 = instance(&w, "cache-2", "cache", "n3", "cache").await;
    let _proxy = w.proxy().await;
    eventually("cache-1 reached", PATIENCE, || async {
        answers(addr, 4).await.iter().any(|a| a == "cache-1")
    })
    .await;
    set_check(&w, "n2", "cache-1", "critical");
    eventually(
        "only cache-2 after cache-1 turned critical",
        PATIENCE,
        || async { answers(addr, 4).await.iter().all(|a| a == "cache-2") },
    )
    .await;
    let _c3 = instance(&w, "cache-3", "cache", "n4", "cache").await;
    eventually("new instance cache-3 reached", PATIENCE, || async {
        answers(addr, 4).await.iter().any(|a| a == "cache-3")
    })
    .await;
    assert!(!answers(addr, 6).await.iter().any(|a| a == "cache-1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolver_redirect_is_followed() {
    let (w, addr) = world().await;
    let _c1 = instance(&w, "cache-1", "cache", "n2", "cache").await;
    let _v2 = instance(&w, "cache-v2-1", "cache-v2", "n3", "cache-v2").await;
    let _proxy = w.proxy().await;
    eventually("cache reached", PATIENCE, || async {
        via_upstream(addr).await.as_deref() == Ok("cache-1")
    })
    .await;
    w.c()
        .upsert_config_entry(&json!({"Kind": "service-resolver", "Name": "cache",
            "Redirect": {"Service": "cache-v2"}}))
        .unwrap();
    eventually("redirected to cache-v2", PATIENCE, || async {
        answers(addr, 3).await.iter().all(|a| a == "cache-v2-1")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolver_failover_when_all_primaries_are_critical() {
    let (w, addr) = world().await;
    w.c()
        .upsert_config_entry(&json!({"Kind": "service-resolver", "Name": "cache",
            "Failover": {"*": {"Service": "cache-backup"}}}))
        .unwrap();
    let _c1 = instance(&w, "cache-1", "cache", "n2", "cache").await;
    let _b1 = instance(&w, "backup-1", "cache-backup", "n3", "cache-backup").await;
    let _proxy = w.proxy().await;
    eventually("primary reached", PATIENCE, || async {
        via_upstream(addr).await.as_deref() == Ok("cache-1")
    })
    .await;
    for got in answers(addr, 4).await {
        assert_eq!(got, "cache-1", "failover used while the primary is healthy");
    }
    set_check(&w, "n2", "cache-1", "critical");
    eventually("failed over to cache-backup", PATIENCE, || async {
        answers(addr, 3).await.iter().all(|a| a == "backup-1")
    })
    .await;
    set_check(&w, "n2", "cache-1", "passing");
    eventually("back on the primary", PATIENCE, || async {
        answers(addr, 3).await.iter().all(|a| a == "cache-1")
    })
    .await;
}
