//! Freshness through blocking queries: intention changes (new and open connections), CA
//! rotation with and without cross-signing, and leaf renewal with a short TTL.

use std::time::Duration;

use serde_json::json;

use super::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn intention_flip_refuses_new_and_cuts_open_connections() {
    let w = World::basic().await; // reauthorize_interval_ms = 200
    w.allow("web");
    let _proxy = w.proxy().await;
    let web = w.probe("web");
    let mut open = web.connect(w.public()).await.unwrap();
    round_trip(&mut open, b"before").await.unwrap();

    let flipped = tokio::time::Instant::now();
    w.deny("web");
    assert!(
        closed_within(&mut open, PATIENCE).await,
        "open connection survived the deny"
    );
    let cut = flipped.elapsed();
    // The change reaches the proxy through a blocking query and every open connection is
    // re-checked on it (and every 200 ms): seconds would mean neither works.
    assert!(
        cut < Duration::from_secs(5),
        "open connection cut only after {cut:?}"
    );
    eventually("new web connections refused", PATIENCE, || async {
        !web.works(w.public()).await
    })
    .await;
    stays("web stays refused", 5, || async {
        !web.works(w.public()).await
    })
    .await;

    // And back: allowed again for new connections.
    w.allow("web");
    eventually("web allowed again", PATIENCE, || web.works(w.public())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_allow_falls_back_to_the_default_deny() {
    let w = World::basic().await;
    w.allow("web");
    let _proxy = w.proxy().await;
    let web = w.probe("web");
    let mut open = web.connect(w.public()).await.unwrap();
    round_trip(&mut open, b"before").await.unwrap();
    w.c().delete_intention("web", "db").unwrap();
    assert!(
        closed_within(&mut open, PATIENCE).await,
        "open connection survived"
    );
    assert!(!web.works(w.public()).await);
}

/// Rotates the CA while a connection is open and checks what a correct proxy shows.
async fn rotation(cross_sign: bool) {
    let w = World::basic().await;
    w.allow("web");
    let _proxy = w.proxy().await;
    let old_roots = w.c().root_pems();
    let old_id = w.c().issue_identity("web").unwrap();
    let old_web = Probe::new(&old_id, &old_roots);
    let mut open = old_web.connect(w.public()).await.unwrap();
    round_trip(&mut open, b"before rotation").await.unwrap();

    w.c().rotate_ca(cross_sign).unwrap();
    let all_roots = w.c().root_pems();
    let new_roots: Vec<String> = all_roots
        .iter()
        .filter(|r| !old_roots.contains(r))
        .cloned()
        .collect();
    assert_eq!(new_roots.len(), 1, "one new root");

    // The proxy serves a leaf signed by the new root (checked on the leaf alone).
    let observer = Probe::new(&w.c().issue_identity("web").unwrap(), &all_roots);
    eventually("new leaf served", PATIENCE, || async {
        match observer.connect(w.public()).await {
            Ok(s) => {
                let chain = s.get_ref().1.peer_certificates().unwrap_or_default();
                chain
                    .first()
                    .is_some_and(|leaf| chains_to(&[leaf.clone().into_owned()], &new_roots))
            }
            Err(_) => false,
        }
    })
    .await;

    // A client holding a new-root leaf, presented without any intermediate: only accepted once
    // the proxy trusts the new root itself.
    let mut fresh = w.c().issue_identity("web").unwrap();
    let leaf_only = certs(&fresh.cert_chain_pem).len() == 1;
    if !leaf_only {
        let first_end = fresh
            .cert_chain_pem
            .find("-----END CERTIFICATE-----")
            .unwrap();
        fresh
            .cert_chain_pem
            .truncate(first_end + "-----END CERTIFICATE-----\n".len());
    }
    let new_web = Probe::new(&fresh, &all_roots);
    eventually("new-root client accepted", PATIENCE, || {
        new_web.works(w.public())
    })
    .await;
    // The old root is still listed: old-root clients (that know the new root to check the
    // proxy's new leaf) are still accepted.
    Probe::new(&old_id, &all_roots)
        .echo(w.public(), b"old root")
        .await
        .unwrap();
    // The rotation did not drop the open connection.
    round_trip(&mut open, b"after rotation").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ca_rotation_cross_signed() {
    rotation(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ca_rotation_without_cross_signing() {
    rotation(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaf_is_renewed_before_it_expires() {
    let ttl = Duration::from_secs(4);
    let w = World::new(sim_builder().leaf_ttl(ttl), json!({})).await;
    w.allow("web");
    let _proxy = w.proxy().await;
    let roots = w.c().root_pems();
    let mut serials = Vec::new();
    let deadline = tokio::time::Instant::now() + ttl * 4;
    while tokio::time::Instant::now() < deadline {
        // A fresh client leaf each time: client leaves expire as fast as the proxy's.
        let probe = Probe::new(&w.c().issue_identity("web").unwrap(), &roots);
        let s = probe.connect(w.public()).await;
        // The probe's verifier rejects an expired server leaf, so every handshake succeeding
        // means the proxy never served an expired leaf.
        let s = s.unwrap_or_else(|e| panic!("handshake failed (expired leaf served?): {e}"));
        let leaf = s.get_ref().1.peer_certificates().unwrap()[0].clone();
        let serial = serial(&leaf);
        if serials.last() != Some(&serial) {
            let left = not_after(&leaf) - time_now();
            assert!(left > 0, "served leaf {serial} already expired");
            serials.push(serial);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        serials.len() >= 3,
        "expected at least two renewals in {:?}, saw {serials:?}",
        ttl * 4
    );
}

fn time_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruned_root_cuts_its_identities() {
    let w = World::basic().await;
    w.allow("web");
    let proxy = w.proxy().await;
    let old_id = w.c().issue_identity("web").unwrap();
    let mut open = Probe::new(&old_id, &w.c().root_pems())
        .connect(w.public())
        .await
        .unwrap();
    round_trip(&mut open, b"old root").await.unwrap();
    // Old roots are pruned 2 x LeafCertTTL after the rotation: make that 4 s.
    w.c().set_leaf_ttl(Duration::from_secs(2));
    let before = w.c().root_pems();
    w.c().rotate_ca(false).unwrap();
    round_trip(&mut open, b"rotation alone keeps it")
        .await
        .unwrap();
    let mut snaps = proxy.snapshots();
    tokio::time::timeout(
        PATIENCE,
        snaps.wait_for(|s| {
            s.as_ref()
                .is_some_and(|s| s.roots.store.len() == 1 && w.c().root_pems().len() == 1)
        }),
    )
    .await
    .expect("old root pruned and seen by the proxy")
    .unwrap();
    assert!(
        closed_within(&mut open, PATIENCE).await,
        "connection of a pruned root's identity survived"
    );
    let now_roots = w.c().root_pems();
    assert!(before.iter().all(|r| !now_roots.contains(r)));
    let old = Probe::new(&old_id, &now_roots);
    assert!(
        old.echo(w.public(), b"x").await.is_err(),
        "pruned identity accepted"
    );
    Probe::new(&w.c().issue_identity("web").unwrap(), &now_roots)
        .echo(w.public(), b"new root")
        .await
        .unwrap();
}
