//! Broken outbound TLS against the reference: the client certificate the proxy presents and the
//! upstream identity it checks.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use rustls::server::WebPkiClientVerifier;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::authz::DefaultPolicy;
use crate::dataplane::DataPlane;
use crate::knobs::Knobs;
use crate::sabotage::{Hooks, Sabotage, Sabotages};
use crate::snapshot::{Endpoint, Target, Upstream};
use crate::testutil::*;
use crate::tls::provider;

/// An upstream instance presenting `leaf`, trusting `ca`, a client certificate optional; it
/// answers `cert` or `anon` (4 bytes) depending on whether the client presented one.
async fn upstream_instance(ca: &TestCa, leaf: &TestLeaf) -> SocketAddr {
    let verifier = WebPkiClientVerifier::builder_with_provider(ca.roots().store, provider())
        .allow_unauthenticated()
        .build()
        .unwrap();
    let cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(leaf.chain.clone(), leaf.key.clone_key())
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(cfg));
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut s) = acceptor.accept(tcp).await else {
                    return;
                };
                let presented = s.get_ref().1.peer_certificates().is_some();
                let _ = s.write_all(if presented { b"cert" } else { b"anon" }).await;
                let _ = s.shutdown().await;
            });
        }
    });
    addr
}

/// What a local app reads through `db`'s `cache` upstream listener, under `set`, when the only
/// `cache` instance is `instance`; `None` if the proxy closed the connection.
async fn through_upstream(set: Sabotages, ca: &TestCa, instance: SocketAddr) -> Option<String> {
    let upstream = Upstream {
        name: "cache".into(),
        bind: "127.0.0.1:0".parse().unwrap(),
        connect_timeout: Duration::from_secs(2),
        protocol: crate::knobs::Protocol::Tcp,
        targets: vec![Target {
            id: "cache.default.default.dc1".into(),
            service: "cache".into(),
            namespace: "default".into(),
            datacenter: "dc1".into(),
            endpoints: vec![Endpoint {
                host: instance.ip().to_string(),
                port: instance.port(),
                datacenter: "dc1".into(),
                label: "node1/cache-1".into(),
                dialed_directly: false,
            }],
        }],
        virtual_ips: vec![],
    };
    let app = echo_app().await;
    let knobs = Knobs::default();
    let mut snap = snapshot(ca, app, vec![], DefaultPolicy::ALLOW, knobs, vec![upstream]);
    snap.hooks = Hooks::new(set);
    let (_tx, rx) = watch::channel(Some(Arc::new(snap)));
    let dp = DataPlane::new(rx).start().await.unwrap();
    let local = dp.upstream_addr("cache").unwrap();
    let read = async {
        let mut s = TcpStream::connect(local).await.ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).await.ok()?;
        (!out.is_empty()).then_some(out)
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .ok()
        .flatten()
}

#[tokio::test]
async fn no_client_cert_presents_nothing_upstream() {
    let ca = TestCa::new("Consul CA 1");
    let cache = upstream_instance(&ca, &ca.service_leaf("cache")).await;
    let good = through_upstream(Sabotages::NONE, &ca, cache).await;
    let bad = through_upstream(Sabotage::NoClientCert.into(), &ca, cache).await;
    assert_eq!(good.as_deref(), Some("cert"));
    assert_eq!(bad.as_deref(), Some("anon"));
}

#[tokio::test]
async fn skip_upstream_identity_reaches_an_impostor_but_checks_the_chain() {
    let ca = TestCa::new("Consul CA 1");
    let s: Sabotages = Sabotage::SkipUpstreamIdentity.into();
    let impostor = upstream_instance(&ca, &ca.service_leaf("web")).await;
    assert_eq!(through_upstream(Sabotages::NONE, &ca, impostor).await, None);
    assert_eq!(
        through_upstream(s, &ca, impostor).await.as_deref(),
        Some("cert")
    );
    let other = TestCa::new("Other cluster CA");
    let foreign = upstream_instance(&ca, &other.service_leaf("cache")).await;
    assert_eq!(through_upstream(s, &ca, foreign).await, None, "untrusted");
}
