//! The whole proxy from a canned agent whose CA is a Vault-like chain: an RSA-4096 root, a P-384
//! intermediate listed in `IntermediateCerts`, an RSA-2048 leaf whose `CertPEM` carries the
//! intermediate and whose key is PKCS#1. A client trusting only the root verifies the proxy; a
//! P-384 client presenting only its leaf is accepted through `IntermediateCerts`.

use std::time::Duration;

use axum::Router;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::agent::{AgentClient, Timing};
use crate::proxy::Proxy;
use crate::testutil::pki::{Ca, IssuedLeaf, Key};
use crate::testutil::{TD, echo_app, probe, svc_uri};
use crate::tls::{self, ExpectedServer, KeyKind, TrustRoots};

/// Serves `db-sidecar-proxy` on `port` in front of `app`, with `leaf` and `root` + `int`.
async fn agent(port: u16, app: u16, leaf: &IssuedLeaf, root: &Ca, int: &Ca) -> String {
    let service = json!({"Kind":"connect-proxy","ID":"db-sidecar-proxy","Service":"db-sidecar-proxy",
        "Port":port,"Address":"127.0.0.1","Datacenter":"dc1",
        "Proxy":{"DestinationServiceName":"db","DestinationServiceID":"db","LocalServicePort":app}});
    let leaf = json!({"SerialNumber":"01","CertPEM":leaf.cert_pem,"PrivateKeyPEM":leaf.key_pem,
        "Service":"db","ServiceURI":svc_uri(TD,"db"),"ValidAfter":"","ValidBefore":""});
    let roots = json!({"ActiveRootID":"r1","TrustDomain":TD,"Roots":[{"ID":"r1","RootCert":root.pem(),
        "IntermediateCerts":[int.pem()],"Active":true}]});
    let this = json!({"DebugConfig":{"DefaultIntentionPolicy":"allow","ACLsEnabled":false}});
    let app = Router::new().fallback(move |uri: Uri| {
        let body = match uri.path() {
            "/v1/agent/service/db-sidecar-proxy" => service.clone(),
            "/v1/agent/connect/ca/leaf/db" => leaf.clone(),
            "/v1/agent/connect/ca/roots" => roots.clone(),
            "/v1/connect/intentions/match" => json!({"db": []}),
            "/v1/agent/self" => this.clone(),
            _ => json!(null),
        };
        let blocking = uri
            .query()
            .is_some_and(|q| q.contains("index=") || q.contains("hash="));
        async move {
            // Nothing ever changes: a blocking read waits a little, like an agent would.
            if blocking {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            let mut r: Response = body.to_string().into_response();
            for (k, v) in [("X-Consul-Index", "5"), ("X-Consul-ContentHash", "h1")] {
                r.headers_mut().insert(k, v.parse().unwrap());
            }
            r
        }
    });
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await });
    addr.to_string()
}

#[tokio::test]
async fn the_proxy_serves_and_accepts_an_rsa_intermediate_chain() {
    let root = Ca::root("Vault root", Key::Rsa4096);
    let int = root.intermediate("Vault intermediate", Key::P384);
    let served = int.leaf("db", Key::Rsa2048, &[&int]);
    assert!(
        served
            .key_pem
            .starts_with("-----BEGIN RSA PRIVATE KEY-----")
    );
    let app = echo_app().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = agent(port, app.port(), &served, &root, &int).await;
    let timing = Timing {
        wait: Duration::from_secs(2),
        backoff_base: Duration::from_millis(20),
        backoff_max: Duration::from_millis(100),
        rate_per_second: 20.0,
        policy_refresh: Duration::from_secs(60),
    };
    let running = Proxy::new(AgentClient::new(&addr, None).unwrap(), "db-sidecar-proxy")
        .timing(timing)
        .start()
        .await
        .unwrap();
    let snap = running.snapshots().borrow().clone().unwrap();
    assert_eq!(snap.leaf.key_kind, KeyKind::Rsa(2048));
    assert_eq!(snap.leaf.chain_len(), 2);
    assert_eq!(snap.roots.intermediates.len(), 1);

    // The client knows the root only, and presents its P-384 leaf without the intermediate.
    let client = int.leaf("web", Key::P384, &[]).leaf();
    let root_only = TrustRoots::from_ders(vec![root.der()], TD).unwrap();
    let expected = ExpectedServer {
        namespace: "default".into(),
        datacenter: "dc1".into(),
        service: "db".into(),
    };
    let cfg = tls::outbound(&client, &root_only, expected).unwrap();
    let echoed = probe(running.inbound_addr(), cfg, b"chain").await;
    assert_eq!(echoed.as_deref(), Ok(&b"chain"[..]));
    running.shutdown().await;
}
