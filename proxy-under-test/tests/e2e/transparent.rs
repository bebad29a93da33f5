//! Transparent mode without root: the proxy's outbound listener is dialed directly and the
//! "original destination" (what `SO_ORIGINAL_DST` reports after an iptables redirect) is injected
//! through the library's test seam. Virtual IPs and instance addresses come from agent-sim.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use agent_sim::CheckUpdate;
use proxy_under_test::{Proxy, RunningProxy};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpSocket, TcpStream};

use super::support::*;

/// Original destinations by client address.
static DESTS: Mutex<BTreeMap<SocketAddr, SocketAddr>> = Mutex::new(BTreeMap::new());

/// The seam: the destination registered for the connecting client (else `ENOENT`-like).
fn injected(tcp: &TcpStream) -> io::Result<SocketAddr> {
    let peer = tcp.peer_addr()?;
    DESTS
        .lock()
        .unwrap()
        .get(&peer)
        .copied()
        .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
}

/// Sends a line to the transparent listener as if the application had dialed `dst`; returns
/// the answering instance's name (FakeUpstream answers `<name> hello`).
async fn as_if_dialing(listener: SocketAddr, dst: SocketAddr) -> Result<String, String> {
    let fut = async {
        let sock = TcpSocket::new_v4().map_err(|e| e.to_string())?;
        sock.bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .map_err(|e| e.to_string())?;
        DESTS
            .lock()
            .unwrap()
            .insert(sock.local_addr().map_err(|e| e.to_string())?, dst);
        let mut s = sock.connect(listener).await.map_err(|e| e.to_string())?;
        s.write_all(b"hello\n")
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut line = String::new();
        let n = BufReader::new(&mut s)
            .read_line(&mut line)
            .await
            .map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err("closed".to_owned());
        }
        Ok(line
            .trim_end()
            .strip_suffix(" hello")
            .unwrap_or(&line)
            .to_owned())
    };
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .map_err(|_| "round trip timed out".to_owned())?
}

fn refused_unknown(proxy: &RunningProxy) -> u64 {
    let key = "proxy_connections_refused_total{reason=\"unknown_destination\"} ";
    proxy
        .metrics()
        .render()
        .lines()
        .find_map(|l| l.strip_prefix(key)?.parse().ok())
        .unwrap_or(0)
}

async fn instance(w: &World, name: &str, node: &str) -> FakeUpstream {
    let c = w.c();
    let u = FakeUpstream::start(name, &c.issue_identity("cache").unwrap(), &c.root_pems()).await;
    u.register(c, node, "cache");
    u
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transparent_outbound_listener_routes_mesh_destinations_and_refuses_others() {
    let (up, outbound) = (free_port(), free_port());
    let w = World::new(
        sim_builder(),
        json!({"Mode": "transparent",
               "TransparentProxy": {"OutboundListenerPort": outbound},
               "Config": {"reauthorize_interval_ms": 200},
               "Upstreams": [{"DestinationName": "cache", "LocalBindPort": up}]}),
    )
    .await;
    // Destinations outside the mesh are refused only under MeshDestinationsOnly (Consul's
    // default passes them through: the scenario `mesh-destinations-only` grades both).
    w.c()
        .upsert_config_entry(
            &json!({"Kind": "mesh", "TransparentProxy": {"MeshDestinationsOnly": true}}),
        )
        .unwrap();
    let c1 = instance(&w, "cache-1", "n2").await;
    let proxy = start(Proxy::new(w.client(), "db-sidecar-proxy").with_original_dst(injected)).await;
    let listener = SocketAddr::from(([127, 0, 0, 1], outbound));
    assert_eq!(proxy.transparent_addr(), Some(listener));
    let vip = w.c().virtual_ip("cache").expect("cache has a virtual IP");
    let via_vip = SocketAddr::new(vip.into(), 6379);
    eventually("cache reached through its virtual IP", PATIENCE, || async {
        as_if_dialing(listener, via_vip).await.as_deref() == Ok("cache-1")
    })
    .await;
    // Its instance address too, and the explicit upstream listener is still there.
    assert_eq!(
        as_if_dialing(listener, c1.addr).await.as_deref(),
        Ok("cache-1")
    );
    let explicit = SocketAddr::from(([127, 0, 0, 1], up));
    assert_eq!(via_upstream(explicit).await.as_deref(), Ok("cache-1"));
    let db = format!("spiffe://{}/ns/default/dc/dc1/svc/db", w.c().trust_domain());
    assert!(c1.client_uris().iter().all(|u| *u == db), "mTLS as db");
    // Not in the mesh (the echo app, an outside address), or the listener itself: refused.
    let before = refused_unknown(&proxy);
    assert!(as_if_dialing(listener, w.app).await.is_err());
    assert!(
        as_if_dialing(listener, "192.0.2.10:443".parse().unwrap())
            .await
            .is_err()
    );
    assert!(as_if_dialing(listener, listener).await.is_err());
    assert_eq!(refused_unknown(&proxy) - before, 3);
    assert_eq!(
        w.app_connections(),
        0,
        "nothing reached the unknown destination"
    );
    // Freshness: a new instance, the old one critical; the virtual IP follows.
    let _c2 = instance(&w, "cache-2", "n3").await;
    w.c()
        .set_check(CheckUpdate {
            node: Some("n2".into()),
            check_id: "cache-1-alive".into(),
            status: "critical".into(),
            output: None,
        })
        .unwrap();
    eventually("the virtual IP reaches only cache-2", PATIENCE, || async {
        let mut all = Vec::new();
        for _ in 0..3 {
            all.push(as_if_dialing(listener, via_vip).await);
        }
        all.iter().all(|r| r.as_deref() == Ok("cache-2"))
    })
    .await;
    proxy.shutdown().await;
    assert!(
        TcpStream::connect(listener).await.is_err(),
        "the listener closes with the proxy"
    );
}
