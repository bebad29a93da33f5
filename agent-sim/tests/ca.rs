//! The CA's material in real TLS handshakes on loopback, through the public API only: a server
//! that requires client certificates signed by the roots (as a sidecar's public listener does)
//! accepts issued identities, rejects forgeries, and keeps accepting new-root identities via the
//! cross-signed certificate while it still trusts only the old root.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;

use agent_sim::ca::{Ca, CaConfig, ClientIdentity, Forgery};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};
use time::OffsetDateTime;

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}

fn key(pem: &str) -> PrivateKeyDer<'static> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).unwrap()
}

/// The client side does not judge the server here (SPIFFE leaves have no DNS name).
#[derive(Debug)]
struct AnyServer(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Serves one TLS connection presenting `server` and requiring a client chain that verifies
/// against `trusted`; echoes one byte. Returns whether the client's handshake and echo worked.
fn handshake(server: &ClientIdentity, trusted: &[String], client: &ClientIdentity) -> bool {
    let mut roots = RootCertStore::empty();
    for pem in trusted {
        for der in certs(pem) {
            roots.add(der).unwrap();
        }
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .unwrap();
    let server_cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs(&server.cert_chain_pem), key(&server.private_key_pem))
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let serve = thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        let conn = rustls::ServerConnection::new(Arc::new(server_cfg)).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        let mut byte = [0u8; 1];
        if tls.read_exact(&mut byte).is_ok() {
            let _ = tls.write_all(&byte);
            let _ = tls.flush();
        }
    });
    let client_cfg = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServer(provider())))
        .with_client_auth_cert(certs(&client.cert_chain_pem), key(&client.private_key_pem))
        .unwrap();
    let name = ServerName::try_from("db.sidecar").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(client_cfg), name).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, TcpStream::connect(addr).unwrap());
    let mut echo = [0u8; 1];
    let ok = tls
        .write_all(b"x")
        .and_then(|()| tls.read_exact(&mut echo))
        .is_ok()
        && echo == *b"x";
    serve.join().unwrap();
    ok
}

fn ca() -> (Ca, StdRng) {
    let mut rng = StdRng::seed_from_u64(11);
    let ca = Ca::new(CaConfig::default(), OffsetDateTime::now_utc(), 5, &mut rng).unwrap();
    (ca, rng)
}

#[test]
fn issued_identities_complete_mutual_tls() {
    let (mut ca, _) = ca();
    let now = OffsetDateTime::now_utc();
    let server = ca.issue_identity("db", "dc1", now, 6).unwrap();
    let client = ca.issue_identity("web", "dc1", now, 7).unwrap();
    assert!(handshake(&server, &ca.root_certs_pem(), &client));
}

#[test]
fn forged_identities_fail_the_handshake() {
    let (mut ca, _) = ca();
    let now = OffsetDateTime::now_utc();
    let server = ca.issue_identity("db", "dc1", now, 6).unwrap();
    for forgery in [
        Forgery::UntrustedCa {
            service: "web".into(),
        },
        Forgery::Expired {
            service: "web".into(),
        },
        Forgery::SelfSigned {
            service: "web".into(),
        },
    ] {
        let client = ca.forge(&forgery, now).unwrap();
        assert!(
            !handshake(&server, &ca.root_certs_pem(), &client),
            "{forgery:?} accepted"
        );
    }
    // These chain to the trusted root: TLS accepts them, authorization must catch them.
    let foreign = ca
        .forge(
            &Forgery::ForeignTrustDomain {
                service: "web".into(),
            },
            now,
        )
        .unwrap();
    assert!(handshake(&server, &ca.root_certs_pem(), &foreign));
}

#[test]
fn a_proxy_with_stale_roots_accepts_new_leaves_through_the_cross_signed_cert() {
    let (mut ca, mut rng) = ca();
    let now = OffsetDateTime::now_utc();
    let server = ca.issue_identity("db", "dc1", now, 6).unwrap();
    let stale_roots = ca.root_certs_pem();
    ca.rotate(true, now, 7, &mut rng).unwrap();
    let client = ca.issue_identity("web", "dc1", now, 8).unwrap();
    assert!(handshake(&server, &stale_roots, &client));

    let (mut plain, mut rng) = self::ca();
    let server = plain.issue_identity("db", "dc1", now, 6).unwrap();
    let stale_roots = plain.root_certs_pem();
    plain.rotate(false, now, 7, &mut rng).unwrap();
    let client = plain.issue_identity("web", "dc1", now, 8).unwrap();
    assert!(
        !handshake(&server, &stale_roots, &client),
        "no cross-signing, no trust"
    );
}
