//! Resolution: IP literals, names through the system resolver, failures naming the host; and in
//! the data plane, a host that does not resolve is a failed attempt and the next endpoint is
//! tried, a host name (`localhost`) is dialed like an IP.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use super::*;
use crate::authz::DefaultPolicy;
use crate::dataplane::DataPlane;
use crate::knobs::Knobs;
use crate::snapshot::{Endpoint, Target, Upstream};
use crate::testutil::*;
use crate::tls;

#[test]
fn ip_literals_are_recognised() {
    assert_eq!(ip_literal("10.0.0.5"), Some("10.0.0.5".parse().unwrap()));
    assert_eq!(ip_literal("::1"), Some("::1".parse().unwrap()));
    assert_eq!(ip_literal("[::1]"), Some("::1".parse().unwrap()));
    assert_eq!(ip_literal("localhost"), None);
    assert_eq!(ip_literal("cache.service.internal"), None);
    assert_eq!(ip_literal("10.0.0.5:80"), None);
    assert_eq!(ip_literal(""), None);
}

#[tokio::test]
async fn literals_skip_dns_and_names_resolve() {
    assert_eq!(
        resolve("127.0.0.1", 7000).await.unwrap(),
        ["127.0.0.1:7000".parse::<SocketAddr>().unwrap()]
    );
    assert_eq!(
        resolve("[::1]", 7000).await.unwrap(),
        ["[::1]:7000".parse::<SocketAddr>().unwrap()]
    );
    let local = resolve("localhost", 7000).await.unwrap();
    assert!(!local.is_empty());
    assert!(
        local
            .iter()
            .all(|a| a.ip().is_loopback() && a.port() == 7000),
        "{local:?}"
    );
}

#[tokio::test]
async fn unknown_names_fail_with_the_host_in_the_error() {
    // `.invalid` never resolves (RFC 2606).
    let err = resolve("no-such-host.invalid", 7000).await.unwrap_err();
    assert!(
        err.to_string().contains("\"no-such-host.invalid\""),
        "{err}"
    );
}

/// An mTLS `cache` instance on 127.0.0.1 that sends `name` (4 bytes) to each client.
async fn named_instance(ca: &TestCa, name: &'static [u8; 4]) -> u16 {
    let cfg = tls::inbound(&ca.service_leaf("cache").leaf(), &ca.roots())
        .unwrap()
        .config;
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            let acceptor = TlsAcceptor::from(cfg.clone());
            tokio::spawn(async move {
                if let Ok(mut s) = acceptor.accept(tcp).await {
                    let _ = s.write_all(name).await;
                    let _ = s.shutdown().await;
                }
            });
        }
    });
    port
}

fn endpoint(host: &str, port: u16) -> Endpoint {
    Endpoint {
        host: host.into(),
        port,
        datacenter: "dc1".into(),
        label: format!("n1/{host}"),
        dialed_directly: false,
    }
}

/// What 4 connections through the `cache` listener read (`""` = closed), with `endpoints`.
async fn reads(ca: &TestCa, endpoints: Vec<Endpoint>) -> BTreeSet<String> {
    let up = Upstream {
        name: "cache".into(),
        bind: "127.0.0.1:0".parse().unwrap(),
        connect_timeout: Duration::from_secs(2),
        protocol: crate::knobs::Protocol::Tcp,
        virtual_ips: Vec::new(),
        l7: None,
        targets: vec![Target {
            id: "cache.default.default.dc1".into(),
            service: "cache".into(),
            namespace: "default".into(),
            datacenter: "dc1".into(),
            endpoints,
        }],
    };
    let app = echo_app().await;
    let snap = snapshot(
        ca,
        app,
        vec![],
        DefaultPolicy::ALLOW,
        Knobs::default(),
        vec![up],
    );
    let (_tx, rx) = watch::channel(Some(Arc::new(snap)));
    let dp = DataPlane::new(rx).start().await.unwrap();
    let local = dp.upstream_addr("cache").unwrap();
    let mut out = BTreeSet::new();
    for _ in 0..4 {
        let mut s = TcpStream::connect(local).await.unwrap();
        let mut got = String::new();
        let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut got));
        assert!(read.await.is_ok(), "connection neither answered nor closed");
        out.insert(got);
    }
    out
}

#[tokio::test]
async fn an_unresolvable_host_is_a_failed_attempt_and_the_next_endpoint_is_tried() {
    let ca = TestCa::new("Consul CA 1");
    let dns = named_instance(&ca, b"dns!").await;
    let bad = endpoint("no-such-host.invalid", dns);
    let only_bad = reads(&ca, vec![bad.clone()]).await;
    assert_eq!(
        only_bad,
        BTreeSet::from([String::new()]),
        "closed without an endpoint"
    );
    let got = reads(&ca, vec![bad, endpoint("localhost", dns)]).await;
    assert_eq!(
        got,
        BTreeSet::from(["dns!".to_owned()]),
        "every connection reached localhost"
    );
}
