//! The agent over TLS end to end: HTTPS with and without a client certificate, the switch to an
//! untrusted server certificate (new handshakes fail against the agent CA, open connections are
//! cut), and gRPC over TLS with ALPN h2.

use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::ServerCert;
use crate::AgentSim;
use crate::model::agent_tls::CertPair;

const NAME: &str = "server.dc1.consul";

fn client(ca_pem: &str, cert: Option<&CertPair>, alpn: Option<&str>) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
        .unwrap();
    let b = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut cfg = match cert {
        Some(p) => b
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(p.cert_pem.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(p.key_pem.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => b.with_no_client_auth(),
    };
    cfg.alpn_protocols = alpn.map(|a| a.as_bytes().to_vec()).into_iter().collect();
    Arc::new(cfg)
}

/// `GET /v1/status/leader` over TLS; the status line, or the error.
async fn get(addr: std::net::SocketAddr, cfg: Arc<ClientConfig>) -> Result<String, String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let name = ServerName::try_from(NAME).unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(cfg)
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    tls.write_all(b"GET /v1/status/leader HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .map_err(|e| e.to_string())?;
    let mut out = String::new();
    tls.read_to_string(&mut out)
        .await
        .map_err(|e| e.to_string())?;
    Ok(out.lines().next().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn https_with_verify_incoming_and_the_untrusted_switch() {
    let sim = AgentSim::builder()
        .agent_tls(true, NAME)
        .run_checks(false)
        .start()
        .await
        .unwrap();
    assert!(sim.url().starts_with("https://"));
    let tls = sim.control().agent_tls().unwrap();
    let m = tls.material().clone();
    let good = client(&m.ca_pem, Some(&m.client), None);
    assert_eq!(
        get(sim.addr(), good.clone()).await.unwrap(),
        "HTTP/1.1 200 OK"
    );
    // verify_incoming: no client certificate, no answer.
    let anonymous = client(&m.ca_pem, None, None);
    assert!(get(sim.addr(), anonymous).await.is_err());
    // Plain HTTP gets nothing either.
    let mut tcp = TcpStream::connect(sim.addr()).await.unwrap();
    tcp.write_all(b"GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let _ = tcp.read_to_end(&mut buf).await;
    assert!(!String::from_utf8_lossy(&buf).contains("200 OK"));

    // An open TLS connection, then the switch: it is cut, and new handshakes fail.
    let tcp = TcpStream::connect(sim.addr()).await.unwrap();
    let mut open = tokio_rustls::TlsConnector::from(good.clone())
        .connect(ServerName::try_from(NAME).unwrap(), tcp)
        .await
        .unwrap();
    tls.present(ServerCert::Untrusted);
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), open.read(&mut byte))
        .await
        .expect("the open connection is cut");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    let err = get(sim.addr(), good.clone()).await.unwrap_err();
    assert!(
        err.contains("UnknownIssuer") || err.contains("invalid peer certificate"),
        "{err}"
    );
    // Trusting the untrusted CA would work: the switch really presents its certificate.
    let impostor = client(&m.untrusted_ca_pem, Some(&m.client), None);
    assert_eq!(get(sim.addr(), impostor).await.unwrap(), "HTTP/1.1 200 OK");
    tls.present(ServerCert::Agent);
    assert_eq!(get(sim.addr(), good).await.unwrap(), "HTTP/1.1 200 OK");
}

#[tokio::test]
async fn grpc_over_tls_negotiates_h2_without_a_client_certificate() {
    let sim = AgentSim::builder()
        .agent_tls(true, NAME)
        .grpc_bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .run_checks(false)
        .start()
        .await
        .unwrap();
    let m = sim.control().agent_tls().unwrap().material().clone();
    let tcp = TcpStream::connect(sim.grpc_addr().unwrap()).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(client(&m.ca_pem, None, Some("h2")))
        .connect(ServerName::try_from(NAME).unwrap(), tcp)
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
}
