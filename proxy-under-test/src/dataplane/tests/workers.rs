//! The data plane with connection workers ([`Workers`]): connections are served on them,
//! re-authorized on snapshot changes and drained at shutdown as without them.

use super::*;

#[tokio::test]
async fn connections_on_workers_are_served_revoked_and_drained() {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    let knobs = Knobs {
        reauthorize_interval: Duration::from_secs(1),
        ..Knobs::default()
    };
    let snap = snapshot(
        &ca,
        app,
        vec![Intention::l4("web", "db", true)],
        DefaultPolicy::DENY,
        knobs,
        vec![],
    );
    let (tx, rx) = watch::channel(Some(Arc::new(snap)));
    let workers = Arc::new(Workers::start(2).unwrap());
    assert_eq!(workers.len(), 2);
    let dp = DataPlane::new(rx)
        .with_workers(workers)
        .start()
        .await
        .unwrap();
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    // Three connections: round-robin puts them on both workers.
    let mut open = Vec::new();
    for i in 0..3u8 {
        let mut s = connect(dp.inbound_addr(), cfg.clone()).await.unwrap();
        assert_eq!(echo_once(&mut s, &[i]).await.unwrap(), [i]);
        open.push(s);
    }
    assert_eq!(dp.open_connections(), 3);
    update(&tx, |n| {
        n.intentions = Arc::new(IntentionSet::new(
            "db",
            vec![Intention::l4("web", "db", false)],
        ));
    });
    for s in &mut open {
        assert!(
            closed_within(s, Duration::from_secs(3)).await,
            "a connection on a worker must be cut when its intention flips"
        );
    }
    assert!(probe(dp.inbound_addr(), cfg, b"x").await.is_err());
    dp.shutdown(Duration::from_secs(2)).await;
}
