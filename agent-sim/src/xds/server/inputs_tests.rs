//! Rebuilds only when a proxy's inputs changed, and one build per proxy and inputs shared by its
//! streams: the production source against a real store and the transport on loopback. The
//! resources a stream receives must be the same as when every wake-up rebuilt.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::json;
use tokio::sync::watch;

use super::tests::{PROXY, ack_of, first, names, open};
use super::*;
use crate::assembly::sim::AgentSim;
use crate::xds::types::{CLUSTER, LISTENER, TlsMode, XdsConfig};

fn sim() -> Control {
    let (_router, control) = AgentSim::builder().build().expect("sim");
    control
        .register(&json!({"Name": "web", "Port": 8080, "Connect": {"SidecarService": {}}}))
        .expect("register web");
    control
}

fn source(c: &Control) -> StoreSource {
    StoreSource {
        store: c.store.clone(),
        cfg: XdsConfig {
            tls_mode: TlsMode::Inline,
            ..Default::default()
        },
    }
}

#[test]
fn inputs_follow_store_writes_and_the_own_leaf_but_not_other_leaves() {
    let c = sim();
    let src = source(&c);
    let before = src.inputs(PROXY).expect("inputs");
    let built = src.build(PROXY).expect("build").expect("registered");
    let with_leaf = src.inputs(PROXY).expect("inputs");
    assert_ne!(
        before, with_leaf,
        "issuing the proxy's own leaf is an input"
    );
    // Another service's leaf is issued (a leaf-cache write that wakes every stream).
    c.store.leaf_now("other", "dc1").expect("leaf");
    assert_eq!(src.inputs(PROXY), Some(with_leaf.clone()));
    // Same inputs, same resources.
    let again = src.build(PROXY).expect("build").expect("registered");
    assert_eq!(again, built);
    assert_eq!(src.inputs(PROXY), Some(with_leaf.clone()));
    c.put_intention("a", "web", &json!({"Action": "allow"}))
        .expect("intention");
    let after_intention = src.inputs(PROXY).expect("inputs");
    assert_ne!(after_intention, with_leaf, "an intention write is an input");
    c.rotate_ca(true).expect("rotate");
    assert_ne!(src.inputs(PROXY), Some(after_intention));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_of_one_proxy_get_the_same_pushes_without_rebuilding_for_other_leaves() {
    let c = sim();
    let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0))).expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (_shutdown, shutdown_rx) = watch::channel(false);
    tokio::spawn(serve(
        listener,
        c.clone(),
        Arc::new(source(&c)),
        c.faults.subscribe(),
        shutdown_rx,
        plain(),
    ));
    let mut clients = Vec::new();
    let mut seen = Vec::new();
    for _ in 0..2 {
        let mut cl = open(addr, None).await.expect("open");
        cl.send(first(CLUSTER, &[])).await;
        let cds = cl.next().await.expect("cds");
        cl.send(ack_of(&cds)).await;
        cl.send(first(LISTENER, &[])).await;
        let lds = cl.next().await.expect("lds");
        cl.send(ack_of(&lds)).await;
        seen.push((names(&cds), names(&lds)));
        clients.push(cl);
    }
    assert_eq!(
        seen[0], seen[1],
        "two streams of one proxy got different resources"
    );
    let log = c.xds_log();
    let builds = log.builds();
    // Unrelated leaf-cache writes, then a change that is an input: both streams get the same
    // new listener, and no stream rebuilt for the leaves of other services.
    for i in 0..5 {
        c.store
            .leaf_now(&format!("other-{i}"), "dc1")
            .expect("leaf");
    }
    c.put_intention("a", "web", &json!({"Action": "deny"}))
        .expect("intention");
    let mut pushed = Vec::new();
    for cl in &mut clients {
        let lds = cl.next().await.expect("lds after the intention");
        assert_eq!(lds.type_url, LISTENER);
        cl.send(ack_of(&lds)).await;
        pushed.push(names(&lds));
    }
    assert_eq!(pushed[0], pushed[1]);
    assert_ne!(pushed[0], seen[0].1, "the listener did not change");
    for cl in &mut clients {
        assert!(cl.quiet().await, "an unexpected push");
    }
    let rebuilt = log.builds() - builds;
    assert!(
        (1..=2).contains(&rebuilt),
        "{rebuilt} builds for one input change seen by two streams"
    );
}
