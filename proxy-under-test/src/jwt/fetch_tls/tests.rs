//! A remote JWKS over `https`, fetched through [`Keys`] from a TLS server whose certificate
//! carries no DNS name: verified against `TrustedCA` in each of its usable forms, refused when
//! signed by another CA, accepted unverified without `TLSCertificates` (Envoy's empty
//! validation context), and refused when the CA comes from a source this proxy lacks.

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::Trust;
use crate::jwt::keys::Keys;
use crate::jwt::provider::KeySet;
use crate::testutil::TestCa;

const JWKS: &str = r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","alg":"ES256",
"x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#;

/// Serves [`JWKS`] on every connection for the test's lifetime: over TLS with a leaf of `ca`,
/// or plain without one.
async fn jwks_server(ca: Option<&TestCa>) -> SocketAddr {
    let acceptor = ca.map(|ca| {
        let leaf = ca.service_leaf("jwks");
        let config = rustls::ServerConfig::builder_with_provider(crate::tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(leaf.chain.clone(), leaf.key.clone_key())
            .unwrap();
        TlsAcceptor::from(Arc::new(config))
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                match acceptor {
                    Some(a) => {
                        if let Ok(tls) = a.accept(tcp).await {
                            answer(tls).await;
                        }
                    }
                    None => answer(tcp).await,
                }
            });
        }
    });
    addr
}

async fn https_jwks(ca: &TestCa) -> SocketAddr {
    jwks_server(Some(ca)).await
}

/// Reads one request head and answers [`JWKS`].
async fn answer<S: AsyncRead + AsyncWrite + Unpin>(mut s: S) {
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        JWKS.len()
    );
    let _ = s.write_all(head.as_bytes()).await;
    let _ = s.write_all(JWKS.as_bytes()).await;
    let _ = s.shutdown().await;
}

fn key_set(addr: SocketAddr, cluster: Option<Value>) -> KeySet {
    key_set_at(&format!("https://{addr}/jwks"), cluster)
}

fn key_set_at(uri: &str, cluster: Option<Value>) -> KeySet {
    let mut remote = json!({"URI": uri, "RequestTimeoutMs": 10_000});
    if let Some(c) = cluster {
        remote["JWKSCluster"] = c;
    }
    serde_json::from_value(json!({ "Remote": remote })).unwrap()
}

fn trusted(ca: Value) -> Option<Value> {
    let mut cluster = json!({"DiscoveryType": "STATIC", "TLSCertificates": {}});
    cluster["TLSCertificates"]["TrustedCA"] = ca;
    Some(cluster)
}

/// How many keys a fetch through [`Keys`] got (`None`: the fetch failed).
async fn fetched(set: &KeySet) -> Option<usize> {
    Keys::new(Some(set), false)
        .get()
        .await
        .map(|d| d.keys.len())
}

#[tokio::test]
async fn trusted_ca_in_each_usable_form_verifies_the_server() {
    let ca = TestCa::new("jwks-ca");
    let addr = https_jwks(&ca).await;
    let pem = ca.root_pem();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ca.pem");
    std::fs::write(&file, &pem).unwrap();
    let bytes = base64::engine::general_purpose::STANDARD.encode(&pem);
    for (form, ca) in [
        ("InlineString", json!({ "InlineString": pem })),
        ("InlineBytes", json!({ "InlineBytes": bytes })),
        ("Filename", json!({ "Filename": file })),
    ] {
        assert_eq!(
            fetched(&key_set(addr, trusted(ca))).await,
            Some(1),
            "{form}"
        );
    }
}

#[tokio::test]
async fn a_server_of_another_ca_is_refused() {
    let server_ca = TestCa::new("jwks-ca");
    let other = TestCa::new("other-ca");
    let addr = https_jwks(&server_ca).await;
    let set = key_set(addr, trusted(json!({ "InlineString": other.root_pem() })));
    assert_eq!(fetched(&set).await, None);
}

#[tokio::test]
async fn without_tls_certificates_the_server_is_not_verified_as_in_envoy() {
    let addr = https_jwks(&TestCa::new("jwks-ca")).await;
    assert_eq!(fetched(&key_set(addr, None)).await, Some(1));
    let no_tls = Some(json!({"DiscoveryType": "STATIC", "ConnectTimeout": 5_000_000_000u64}));
    assert_eq!(fetched(&key_set(addr, no_tls)).await, Some(1));
}

#[tokio::test]
async fn a_ca_this_proxy_cannot_read_fails_the_fetch_and_says_what_to_use() {
    let addr = https_jwks(&TestCa::new("jwks-ca")).await;
    let env = trusted(json!({"EnvironmentVariable": "JWKS_CA"}));
    let plugin =
        Some(json!({"TLSCertificates": {"CaCertificateProviderInstance": {"InstanceName": "x"}}}));
    for cluster in [env, plugin] {
        let set = key_set(addr, cluster);
        assert_eq!(fetched(&set).await, None);
        let tls = set
            .remote
            .as_ref()
            .and_then(|r| r.cluster.as_ref())
            .and_then(|c| c.tls_certificates.as_ref());
        match Trust::for_uri(&format!("HTTPS://{addr}/jwks"), tls) {
            Trust::Unusable(why) => assert!(why.contains("InlineString"), "{why}"),
            other => panic!("expected unusable, got {other:?}"),
        }
    }
}

#[test]
fn malformed_trusted_ca_is_unusable_with_the_reason() {
    let cases = [
        (json!({"InlineBytes": "%%%"}), "base64"),
        (json!({"InlineString": "not a pem"}), "no certificate"),
        (
            json!({"Filename": "/nonexistent/ca.pem"}),
            "/nonexistent/ca.pem",
        ),
        (json!({}), "none of"),
    ];
    for (ca, expect) in cases {
        let tls = serde_json::from_value(json!({ "TrustedCA": ca })).unwrap();
        match Trust::of(Some(&tls)) {
            Trust::Unusable(why) => assert!(why.contains(expect), "{why}"),
            other => panic!("{ca}: expected unusable, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_http_uri_takes_no_tls_from_tls_certificates() {
    // Consul renders the transport socket for https only: an unusable TLSCertificates does not
    // stop a plain fetch, and an https server behind an http URI is not spoken to.
    let plain = jwks_server(None).await;
    let plugin = || {
        Some(json!({"TLSCertificates": {"CaCertificateProviderInstance": {"InstanceName": "x"}}}))
    };
    let set = key_set_at(&format!("http://{plain}/jwks"), plugin());
    assert_eq!(fetched(&set).await, Some(1));
    let tls_only = https_jwks(&TestCa::new("jwks-ca")).await;
    let set = key_set_at(&format!("http://{tls_only}/jwks"), None);
    assert_eq!(fetched(&set).await, None);
    assert!(matches!(
        Trust::for_uri("http://idp/jwks", None),
        Trust::Plain
    ));
}
