//! TLS with real-world CAs: every key type Consul issues loads from its PEM form, the full
//! `CertPEM` chain is served, peers are verified through the intermediates they present and the
//! roots' `IntermediateCerts` (never trusted by themselves), and an EC → RSA cross-signed
//! rotation verifies. Handshakes are real rustls handshakes between the proxy's own configs;
//! `whole_proxy` runs the proxy from an agent whose CA is RSA with an intermediate.

mod whole_proxy;

use super::*;
use crate::testutil::TD;
use crate::testutil::pki::{Ca, Key, client_refused, handshake, server_refused};

fn expect(svc: &str) -> ExpectedServer {
    ExpectedServer {
        namespace: "default".into(),
        datacenter: "dc1".into(),
        service: svc.into(),
    }
}

fn roots(cas: &[&Ca]) -> TrustRoots {
    TrustRoots::from_ders(cas.iter().map(|c| c.der()).collect(), TD).unwrap()
}

/// The inbound config of `db` serving `server`, and the outbound config of `web` presenting
/// `client`, each with its own view of the roots.
fn pair(
    server: &Leaf,
    server_roots: &TrustRoots,
    client: &Leaf,
    client_roots: &TrustRoots,
) -> (Arc<ServerConfig>, Arc<ClientConfig>) {
    let s = inbound(server, server_roots).unwrap().config;
    let c = outbound(client, client_roots, expect("db")).unwrap();
    (s, c)
}

#[test]
fn every_consul_key_type_loads_from_its_pem_form() {
    let root = Ca::root("root", Key::P256);
    for (key, kind, header) in [
        (Key::P256, KeyKind::EcP256, "-----BEGIN PRIVATE KEY-----"),
        (Key::P384, KeyKind::EcP384, "-----BEGIN EC PRIVATE KEY-----"),
        (
            Key::Rsa2048,
            KeyKind::Rsa(2048),
            "-----BEGIN RSA PRIVATE KEY-----",
        ),
        (
            Key::Rsa4096,
            KeyKind::Rsa(4096),
            "-----BEGIN RSA PRIVATE KEY-----",
        ),
    ] {
        let issued = root.leaf("db", key, &[]);
        assert!(issued.key_pem.starts_with(header), "{key:?}");
        let leaf = Leaf::from_pem(&issued.cert_pem, &issued.key_pem).unwrap();
        assert_eq!(leaf.key_kind, kind, "{key:?}");
        assert_eq!(leaf.chain_len(), 1);
    }
    assert_eq!(KeyKind::Rsa(2048).to_string(), "rsa-2048");
    assert_eq!(KeyKind::EcP384.to_string(), "ec-p384");
}

#[test]
fn a_missing_key_is_a_pem_error() {
    let root = Ca::root("root", Key::P256);
    let issued = root.leaf("db", Key::Rsa2048, &[]);
    assert!(matches!(
        Leaf::from_pem(&issued.cert_pem, "not a key"),
        Err(TlsError::Pem(_))
    ));
}

#[tokio::test]
async fn every_key_type_serves_and_is_accepted_both_ways() {
    for root_key in Key::ALL {
        let root = Ca::root("root", root_key);
        let trust = roots(&[&root]);
        for key in Key::ALL {
            let server = root.leaf("db", key, &[]).leaf();
            let client = root.leaf("web", key, &[]).leaf();
            let (s, c) = pair(&server, &trust, &client, &trust);
            let seen = handshake(s, c).await;
            assert!(seen.is_ok(), "root {root_key:?} leaf {key:?}: {seen:?}");
        }
    }
}

#[tokio::test]
async fn rsa_and_p384_leaves_through_an_intermediate_serve_the_full_chain() {
    let root = Ca::root("root", Key::Rsa4096);
    let int = root.intermediate("intermediate", Key::P384);
    let server = int.leaf("db", Key::Rsa2048, &[&int]);
    let client = int.leaf("web", Key::P384, &[&int]);
    assert_eq!(server.leaf().chain_len(), 2);
    // Both sides trust the root only: the chains they present must carry the intermediate.
    let trust = roots(&[&root]);
    let (s, c) = pair(&server.leaf(), &trust, &client.leaf(), &trust);
    let seen = handshake(s, c).await.unwrap();
    assert_eq!(
        seen, server.chain,
        "served leaf then intermediate, in order"
    );
    // Three levels (root → intermediate → intermediate → leaf), RSA all the way.
    let int2 = int.intermediate("second", Key::Rsa2048);
    let deep = int2.leaf("db", Key::Rsa4096, &[&int2, &int]);
    let (s, c) = pair(&deep.leaf(), &trust, &client.leaf(), &trust);
    assert_eq!(handshake(s, c).await.unwrap(), deep.chain);
}

#[tokio::test]
async fn leaves_without_their_chain_verify_through_the_roots_intermediate_certs() {
    let root = Ca::root("root", Key::P256);
    let int = root.intermediate("intermediate", Key::Rsa2048);
    let server = int.leaf("db", Key::P384, &[]).leaf();
    let client = int.leaf("web", Key::Rsa2048, &[]).leaf();
    let bare = roots(&[&root]);
    let with_ints = roots(&[&root]).with_intermediate_pems([int.pem().as_str()]);
    assert_eq!(with_ints.intermediates.len(), 1);

    // Neither side can build a chain from the root alone.
    let (s, c) = pair(&server, &bare, &client, &with_ints);
    let err = handshake(s, c).await.unwrap_err();
    assert!(server_refused(&err), "the proxy refuses the client: {err}");
    let (s, c) = pair(&server, &with_ints, &client, &bare);
    let err = handshake(s, c).await.unwrap_err();
    assert!(client_refused(&err), "the client refuses the server: {err}");

    // With `IntermediateCerts`, both directions verify.
    let (s, c) = pair(&server, &with_ints, &client, &with_ints);
    handshake(s, c).await.unwrap();
}

#[tokio::test]
async fn intermediate_certs_are_never_trust_anchors() {
    let root = Ca::root("root", Key::P256);
    let int = root.intermediate("intermediate", Key::P256);
    let other = Ca::root("other", Key::P256);
    let server = other.leaf("db", Key::P256, &[]).leaf();
    let client = int.leaf("web", Key::P256, &[&int]).leaf();
    // The proxy trusts `other` only; the client's intermediate (listed as IntermediateCerts too)
    // leads to `root`, which is not trusted.
    let trust = roots(&[&other]).with_intermediates(vec![int.der()]);
    let (s, c) = pair(&server, &trust, &client, &roots(&[&other]));
    let err = handshake(s, c).await.unwrap_err();
    assert!(server_refused(&err), "{err}");
}

#[tokio::test]
async fn an_ec_to_rsa_cross_signed_rotation_verifies() {
    let old = Ca::root("old", Key::P256);
    let new = Ca::root("new", Key::Rsa4096);
    let cross = new.cross_signed_by(&old);
    // A client of the new RSA root, presenting the cross-signed intermediate, is accepted by a
    // proxy that still trusts only the old EC root.
    let mut client = new.leaf("web", Key::Rsa2048, &[]);
    client.chain.push(cross.clone());
    let client_leaf = Leaf::from_der(
        client.chain.clone(),
        PrivateKeyDer::from_pem_slice(client.key_pem.as_bytes()).unwrap(),
    )
    .unwrap();
    let server = old.leaf("db", Key::P256, &[]).leaf();
    let old_only = roots(&[&old]);
    let (s, c) = pair(&server, &old_only, &client_leaf, &roots(&[&old, &new]));
    handshake(s, c).await.unwrap();
    // Without the cross-signed certificate it is refused.
    let bare = new.leaf("web", Key::Rsa2048, &[]).leaf();
    let (s, c) = pair(&server, &old_only, &bare, &roots(&[&old, &new]));
    let err = handshake(s, c).await.unwrap_err();
    assert!(server_refused(&err), "{err}");
    // The cross-signed certificate as one of the roots' IntermediateCerts works as well.
    let listed = roots(&[&old]).with_intermediates(vec![cross]);
    let (s, c) = pair(&server, &listed, &bare, &roots(&[&old, &new]));
    handshake(s, c).await.unwrap();
}

#[tokio::test]
async fn spiffe_identity_is_still_checked_through_an_intermediate() {
    let root = Ca::root("root", Key::Rsa4096);
    let int = root.intermediate("intermediate", Key::Rsa2048);
    let trust = roots(&[&root]);
    let impostor = int.leaf("cache", Key::Rsa2048, &[&int]).leaf();
    let client = int.leaf("web", Key::P384, &[&int]).leaf();
    let (s, c) = pair(&impostor, &trust, &client, &trust);
    let err = handshake(s, c).await.unwrap_err();
    assert!(client_refused(&err), "{err}");
}

#[tokio::test]
async fn a_p384_ca_signing_with_sha256_as_consul_does_verifies() {
    let root = include_str!("testdata/p384-sha256-root.pem");
    let leaf = Leaf::from_pem(
        include_str!("testdata/p384-sha256-leaf.pem"),
        include_str!("testdata/p384-sha256-leaf.key.pem"),
    )
    .unwrap();
    assert_eq!(leaf.key_kind, KeyKind::EcP384);
    let trust = TrustRoots::from_pems([root], TD).unwrap();
    // Both sides present the same `db` leaf: the chain (ecdsa-with-SHA256 on P-384) and the
    // handshake signatures (P-384) verify either way.
    let (s, c) = pair(&leaf, &trust, &leaf, &trust);
    handshake(s, c).await.unwrap();
}

#[test]
fn aes128_gcm_comes_first_and_every_other_suite_stays() {
    use rustls::CipherSuite as C;
    let suites: Vec<C> = provider().cipher_suites.iter().map(|s| s.suite()).collect();
    assert_eq!(suites.first(), Some(&C::TLS13_AES_128_GCM_SHA256));
    let mut all: Vec<C> = rustls::crypto::ring::default_provider()
        .cipher_suites
        .iter()
        .map(|s| s.suite())
        .collect();
    assert!(all.contains(&C::TLS13_AES_256_GCM_SHA384));
    assert!(all.contains(&C::TLS13_CHACHA20_POLY1305_SHA256));
    let mut ours = suites.clone();
    all.sort_by_key(|s| format!("{s:?}"));
    ours.sort_by_key(|s| format!("{s:?}"));
    assert_eq!(ours, all, "reordered, none dropped");
    // TLS 1.2 suites: AES-128-GCM before the AES-256 ones too.
    let pos = |c: C| suites.iter().position(|s| *s == c).unwrap();
    assert!(
        pos(C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)
            < pos(C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384)
    );
}
