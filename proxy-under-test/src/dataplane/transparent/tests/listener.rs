//! The outbound listener in a running data plane, the original destination injected through
//! the test seam (`DataPlane::with_original_dst`): mesh destinations over mTLS, identities
//! checked, unknown and self-dials refused and counted, passthrough; and the public listener's
//! plaintext path in permissive mTLS.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use super::{ep, target, transparent_snapshot, upstream};
use crate::authz::DefaultPolicy;
use crate::dataplane::{DataPlane, RunningDataPlane};
use crate::knobs::Knobs;
use crate::metrics::Metrics;
use crate::snapshot::Snapshot;
use crate::testutil::*;
use crate::tls;

/// Original destinations by client address, read by [`injected`].
static DESTS: Mutex<BTreeMap<SocketAddr, SocketAddr>> = Mutex::new(BTreeMap::new());

/// The test seam: the "original destination" registered for the connecting client.
fn injected(tcp: &TcpStream) -> io::Result<SocketAddr> {
    let peer = tcp.peer_addr()?;
    DESTS
        .lock()
        .unwrap()
        .get(&peer)
        .copied()
        .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
}

/// Connects to the transparent listener as if the application had dialed `dst` (`None`: no
/// original destination available).
async fn dial_as(listener: SocketAddr, dst: Option<SocketAddr>) -> TcpStream {
    let sock = TcpSocket::new_v4().unwrap();
    sock.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    if let Some(dst) = dst {
        DESTS
            .lock()
            .unwrap()
            .insert(sock.local_addr().unwrap(), dst);
    }
    sock.connect(listener).await.unwrap()
}

/// Sends `hello` and returns the answer's first line (`Err` when the proxy closed).
async fn exchange(mut s: TcpStream) -> Result<String, String> {
    let fut = async {
        s.write_all(b"hello\n").await.map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 64];
        let n = s.read(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed".to_owned());
        }
        Ok(String::from_utf8_lossy(&buf[..n]).trim_end().to_owned())
    };
    tokio::time::timeout(Duration::from_secs(5), fut)
        .await
        .map_err(|_| "timeout".to_owned())?
}

/// An mTLS instance on `ip` presenting `service`'s leaf that answers `<name>` then closes.
async fn instance(ca: &TestCa, ip: &str, service: &str, name: &'static str) -> SocketAddr {
    let cfg = tls::inbound(&ca.service_leaf(service).leaf(), &ca.roots())
        .unwrap()
        .config;
    let l = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            let acceptor = TlsAcceptor::from(cfg.clone());
            tokio::spawn(async move {
                if let Ok(mut s) = acceptor.accept(tcp).await {
                    let _ = s.write_all(name.as_bytes()).await;
                    let _ = s.shutdown().await;
                }
            });
        }
    });
    addr
}

type Tx = watch::Sender<Option<Arc<Snapshot>>>;

async fn start(snap: Snapshot) -> (Tx, RunningDataPlane, Arc<Metrics>) {
    let metrics = Metrics::new();
    let (tx, rx) = watch::channel(Some(Arc::new(snap)));
    let dp = DataPlane::new(rx)
        .with_metrics(metrics.clone())
        .with_original_dst(injected)
        .start()
        .await
        .unwrap();
    (tx, dp, metrics)
}

fn unknown_count(m: &Metrics) -> u64 {
    let text = m.render();
    let key = "proxy_connections_refused_total{reason=\"unknown_destination\"} ";
    let line = text.lines().find(|l| l.starts_with(key)).unwrap();
    line[key.len()..].parse().unwrap()
}

#[tokio::test]
async fn the_outbound_listener_maps_original_destinations() {
    let ca = TestCa::new("Consul CA 1");
    let cache = instance(&ca, "127.0.0.1", "cache", "cache-1").await;
    let impostor = instance(&ca, "127.0.0.1", "web", "impostor").await;
    // `pay` allows direct dials: its registered instance and another port on the same IP.
    let pay = instance(&ca, "127.0.0.2", "pay", "pay-1").await;
    let direct = instance(&ca, "127.0.0.2", "pay", "direct!").await;
    let up = upstream(
        "cache",
        &["240.0.0.1"],
        vec![target(
            "cache",
            vec![ep("127.0.0.1", cache.port(), "n1/cache-1", false)],
        )],
    );
    let imp = upstream(
        "api",
        &["240.0.0.2"],
        vec![target(
            "api",
            vec![ep("127.0.0.1", impostor.port(), "n2/imp", false)],
        )],
    );
    let pay = upstream(
        "pay",
        &["240.0.0.3"],
        vec![target(
            "pay",
            vec![ep("127.0.0.2", pay.port(), "n3/pay-1", true)],
        )],
    );
    let app = echo_app().await;
    let mut snap = transparent_snapshot(&ca, app, vec![up, imp, pay], Knobs::default());
    snap.mesh.mesh_destinations_only = true;
    let (_tx, dp, metrics) = start(snap).await;
    let l = dp.transparent_addr().expect("transparent listener bound");
    // Virtual IP, any port: mTLS to a cache instance.
    let vip = dial_as(l, Some("240.0.0.1:6379".parse().unwrap())).await;
    assert_eq!(exchange(vip).await.as_deref(), Ok("cache-1"));
    // The instance's own address.
    let by_addr = dial_as(l, Some(cache)).await;
    assert_eq!(exchange(by_addr).await.as_deref(), Ok("cache-1"));
    // Dialed directly: pay's IP, another port, still mTLS with pay's identity.
    let d = dial_as(l, Some(direct)).await;
    assert_eq!(exchange(d).await.as_deref(), Ok("direct!"));
    // An upstream whose instance proves another identity: closed.
    let bad = dial_as(l, Some("240.0.0.2:80".parse().unwrap())).await;
    assert!(exchange(bad).await.is_err());
    assert_eq!(unknown_count(&metrics), 0);
    // Unknown (the echo app is not in the mesh), the listener itself, no original destination.
    let unknown = dial_as(l, Some(app)).await;
    assert!(exchange(unknown).await.is_err());
    let own = dial_as(l, Some(l)).await;
    assert!(exchange(own).await.is_err());
    let none = dial_as(l, None).await;
    assert!(exchange(none).await.is_err());
    assert_eq!(unknown_count(&metrics), 3);
}

#[tokio::test]
async fn passthrough_dials_unknown_destinations_in_plain_tcp() {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    let outside = echo_app().await;
    // No mesh entry: Consul's default, `MeshDestinationsOnly = false`.
    let snap = transparent_snapshot(&ca, app, vec![], Knobs::default());
    let (_tx, dp, metrics) = start(snap).await;
    let l = dp.transparent_addr().unwrap();
    let s = dial_as(l, Some(outside)).await;
    assert_eq!(exchange(s).await.as_deref(), Ok("hello"));
    let own = dial_as(l, Some(l)).await;
    assert!(exchange(own).await.is_err(), "never a loop to itself");
    assert_eq!(unknown_count(&metrics), 1);
}

#[tokio::test]
async fn no_transparent_listener_outside_transparent_mode() {
    let ca = TestCa::new("Consul CA 1");
    let snap = snapshot(
        &ca,
        echo_app().await,
        vec![],
        DefaultPolicy::ALLOW,
        Knobs::default(),
        vec![],
    );
    let (_tx, dp, _) = start(snap).await;
    assert_eq!(dp.transparent_addr(), None);
}

/// Permissive mTLS: plaintext on the public listener whose original destination is the app's
/// port reaches the app; headed for the public port itself (how mesh clients dial) or in strict
/// mode, plaintext meets the TLS handshake and is closed.
#[tokio::test]
async fn permissive_mode_takes_plaintext_for_the_apps_port_only() {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    let mut snap = transparent_snapshot(&ca, app, vec![], Knobs::default());
    snap.transparent.as_mut().unwrap().permissive = true;
    let (tx, dp, _) = start(snap.clone()).await;
    let public = dp.inbound_addr();
    let to_app = dial_as(public, Some(app)).await;
    assert_eq!(exchange(to_app).await.as_deref(), Ok("hello"));
    // A TLS alert or a close, never the app's echo.
    let to_public = dial_as(public, Some(public)).await;
    assert_ne!(exchange(to_public).await.as_deref(), Ok("hello"));
    let unknown = dial_as(public, None).await;
    assert_ne!(exchange(unknown).await.as_deref(), Ok("hello"));
    snap.transparent.as_mut().unwrap().permissive = false;
    tx.send(Some(Arc::new(snap))).unwrap();
    let strict = dial_as(public, Some(app)).await;
    assert_ne!(exchange(strict).await.as_deref(), Ok("hello"), "strict");
}
