//! `reject-hostname-endpoints` and `ignore-app-socket` against the reference: the whole proxy
//! in-process on agent-sim, compared through the snapshot it builds (the endpoints it keeps for
//! an upstream with one IP-addressed and one host-named instance; the local app of a socket app).

use std::collections::BTreeSet;
use std::time::Duration;

use agent_sim::AgentSim;
use serde_json::json;

use crate::AgentClient;
use crate::proxy::Proxy;
use crate::sabotage::{Sabotage, Sabotages};
use crate::snapshot::LocalApp;
use crate::testutil::*;

/// The hosts of the `cache` endpoints the proxy's snapshot holds under `set`, once both catalog
/// instances were read (or after a few seconds).
async fn cache_hosts(set: Sabotages) -> BTreeSet<String> {
    let sim = AgentSim::builder().start().await.unwrap();
    let c = sim.control();
    let app = echo_app().await;
    c.register(&json!({
        "Name": "db", "Address": "127.0.0.1", "Port": app.port(),
        "Connect": {"SidecarService": {"Port": free_port(), "Proxy": {
            "Upstreams": [{"DestinationName": "cache", "LocalBindPort": free_port()}]
        }}}
    }))
    .unwrap();
    for (node, id, address) in [
        ("n2", "cache-ip", "127.0.0.1"),
        ("n3", "cache-dns", "localhost"),
    ] {
        c.catalog_register(&json!({
            "Node": node, "Address": "127.0.0.1",
            "Service": {"Kind": "connect-proxy", "ID": id, "Service": "cache-sidecar-proxy",
                "Address": address, "Port": free_port(),
                "Proxy": {"DestinationServiceName": "cache"}}
        }))
        .unwrap();
    }
    let client = AgentClient::new(&sim.http_addr(), None)
        .unwrap()
        .with_sabotage(set);
    let proxy = Proxy::new(client, "db-sidecar-proxy")
        .start()
        .await
        .unwrap();
    let snaps = proxy.snapshots();
    let hosts = || -> BTreeSet<String> {
        snaps.borrow().as_ref().map_or_else(BTreeSet::new, |s| {
            s.upstream("cache")
                .into_iter()
                .flat_map(|u| &u.targets)
                .flat_map(|t| &t.endpoints)
                .map(|e| e.host.clone())
                .collect()
        })
    };
    // Both instances are in one health answer: once any endpoint is there, all of them are.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while hosts().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let got = hosts();
    drop(proxy);
    got
}

#[tokio::test]
async fn reject_hostname_endpoints_drops_host_named_instances() {
    let both = BTreeSet::from(["127.0.0.1".to_owned(), "localhost".to_owned()]);
    assert_eq!(cache_hosts(Sabotages::NONE).await, both, "reference");
    let broken = cache_hosts(Sabotage::RejectHostnameEndpoints.into()).await;
    assert_eq!(broken, BTreeSet::from(["127.0.0.1".to_owned()]));
}

/// The local app of the snapshot of a proxy for a socket-only `db`, under `set`.
async fn local_app(set: Sabotages) -> Option<LocalApp> {
    let sim = AgentSim::builder().start().await.unwrap();
    sim.control()
        .register(&json!({
            "Name": "db", "Address": "127.0.0.1", "SocketPath": "/tmp/conformance-db.sock",
            "Connect": {"SidecarService": {"Port": free_port()}}
        }))
        .unwrap();
    let client = AgentClient::new(&sim.http_addr(), None)
        .unwrap()
        .with_sabotage(set);
    let proxy = Proxy::new(client, "db-sidecar-proxy")
        .start()
        .await
        .unwrap();
    let app = proxy
        .snapshots()
        .borrow()
        .as_ref()
        .map(|s| s.local_app.clone());
    drop(proxy);
    app
}

#[tokio::test]
async fn ignore_app_socket_dials_the_missing_port_instead() {
    let socket = LocalApp::Unix("/tmp/conformance-db.sock".into());
    assert_eq!(local_app(Sabotages::NONE).await, Some(socket), "reference");
    let broken = local_app(Sabotage::IgnoreAppSocket.into()).await;
    assert_eq!(broken, Some(LocalApp::Tcp("127.0.0.1:0".parse().unwrap())));
}
