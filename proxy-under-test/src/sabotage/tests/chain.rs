//! Broken handling of real-world CAs against the reference: `p256-only` refuses RSA and P-384
//! leaves (keeping the previous one), `leaf-without-chain` serves a leaf a root-only client
//! cannot verify, `roots-only-verification` refuses peers whose chain needs an intermediate.

use std::sync::Arc;

use rustls::{ClientConfig, ServerConfig};

use crate::authz::DefaultPolicy;
use crate::knobs::Knobs;
use crate::sabotage::{Hooks, Sabotage, Sabotages};
use crate::snapshot::Snapshot;
use crate::testutil::pki::{Ca, Key, client_refused, handshake, server_refused};
use crate::testutil::{TD, TestCa, snapshot};
use crate::tls::{self, ExpectedServer, KeyKind, Leaf, TrustRoots};

fn expect(svc: &str) -> ExpectedServer {
    ExpectedServer {
        namespace: "default".into(),
        datacenter: "dc1".into(),
        service: svc.into(),
    }
}

/// A snapshot of `db` serving `leaf`, trusting `roots`, with `set`.
fn snap(leaf: Leaf, roots: TrustRoots, set: Sabotages) -> Snapshot {
    let mut s = snapshot(
        &TestCa::new("unused"),
        "127.0.0.1:1".parse().unwrap(),
        Vec::new(),
        DefaultPolicy::ALLOW,
        Knobs::default(),
        Vec::new(),
    );
    s.leaf = leaf;
    s.roots = roots;
    s.hooks = Hooks::new(set);
    s
}

/// The proxy's inbound config under `snap`'s sabotage.
fn inbound(snap: &Snapshot) -> Arc<ServerConfig> {
    let reference = tls::inbound(&snap.leaf, &snap.roots).unwrap();
    snap.hooks.inbound_tls(reference, snap).unwrap().config
}

/// The proxy's outbound config to `db` under `set`.
fn outbound(leaf: &Leaf, roots: &TrustRoots, set: Sabotages) -> Arc<ClientConfig> {
    let reference = tls::outbound(leaf, roots, expect("db")).unwrap();
    Hooks::new(set).outbound_tls(reference, roots, &expect("db"))
}

fn root_only(ca: &Ca) -> TrustRoots {
    TrustRoots::from_ders(vec![ca.der()], TD).unwrap()
}

#[test]
fn p256_only_refuses_every_other_key_type() {
    let root = Ca::root("root", Key::Rsa4096);
    let hooks = Hooks::new(Sabotage::P256Only.into());
    let reference = Hooks::new(Sabotages::NONE);
    for key in Key::ALL {
        let leaf = root.leaf("db", key, &[]).leaf();
        let kind = leaf.key_kind;
        assert!(reference.leaf(leaf.clone()).is_some(), "{key:?}");
        assert_eq!(
            hooks.leaf(leaf).is_some(),
            kind == KeyKind::EcP256,
            "{key:?} is {kind}"
        );
    }
}

#[tokio::test]
async fn leaf_without_chain_serves_a_leaf_a_root_only_client_cannot_verify() {
    let root = Ca::root("root", Key::P256);
    let int = root.intermediate("intermediate", Key::Rsa2048);
    let served = int.leaf("db", Key::Rsa2048, &[&int]).leaf();
    let client = int.leaf("web", Key::P384, &[&int]).leaf();
    let trust = root_only(&root);

    let reference = Hooks::new(Sabotages::NONE).leaf(served.clone()).unwrap();
    assert_eq!(reference.chain_len(), 2);
    let s = inbound(&snap(reference, trust.clone(), Sabotages::NONE));
    handshake(s, outbound(&client, &trust, Sabotages::NONE))
        .await
        .unwrap();

    let set = Sabotage::LeafWithoutChain.into();
    let broken = Hooks::new(set).leaf(served).unwrap();
    assert_eq!(broken.chain_len(), 1);
    let s = inbound(&snap(broken, trust.clone(), set));
    let err = handshake(s, outbound(&client, &trust, Sabotages::NONE))
        .await
        .unwrap_err();
    assert!(client_refused(&err), "{err}");
}

#[tokio::test]
async fn roots_only_verification_refuses_clients_that_need_an_intermediate() {
    let root = Ca::root("root", Key::Rsa4096);
    let int = root.intermediate("intermediate", Key::P384);
    let server = root.leaf("db", Key::P256, &[]).leaf();
    let trust = root_only(&root);
    let listed = root_only(&root).with_intermediates(vec![int.der()]);
    // A client presenting its intermediate, and one relying on the roots' IntermediateCerts.
    let presenting = int.leaf("web", Key::Rsa2048, &[&int]).leaf();
    let bare = int.leaf("web", Key::Rsa2048, &[]).leaf();
    for (client, roots) in [(&presenting, &trust), (&bare, &listed)] {
        let ok = inbound(&snap(server.clone(), roots.clone(), Sabotages::NONE));
        handshake(ok, outbound(client, &trust, Sabotages::NONE))
            .await
            .unwrap();
        let set = Sabotage::RootsOnlyVerification.into();
        let broken = inbound(&snap(server.clone(), roots.clone(), set));
        let err = handshake(broken, outbound(client, &trust, Sabotages::NONE))
            .await
            .unwrap_err();
        assert!(server_refused(&err), "{err}");
    }
    // A client issued by the root itself is still accepted.
    let direct = root.leaf("web", Key::P256, &[]).leaf();
    let set = Sabotage::RootsOnlyVerification.into();
    let broken = inbound(&snap(server.clone(), trust.clone(), set));
    handshake(broken, outbound(&direct, &trust, Sabotages::NONE))
        .await
        .unwrap();
}

#[tokio::test]
async fn roots_only_verification_refuses_upstreams_that_need_an_intermediate() {
    let root = Ca::root("root", Key::P256);
    let int = root.intermediate("intermediate", Key::Rsa2048);
    let upstream = int.leaf("db", Key::Rsa2048, &[&int]).leaf();
    let us = root.leaf("web", Key::P256, &[]).leaf();
    let trust = root_only(&root);
    let server = inbound(&snap(upstream, trust.clone(), Sabotages::NONE));
    handshake(server.clone(), outbound(&us, &trust, Sabotages::NONE))
        .await
        .unwrap();
    let set = Sabotage::RootsOnlyVerification.into();
    let err = handshake(server, outbound(&us, &trust, set))
        .await
        .unwrap_err();
    assert!(client_refused(&err), "{err}");
}

#[test]
fn require_ca_spiffe_san_refuses_chains_through_a_ca_without_one() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let with_san = Ca::root("root", Key::P256).der();
    let mut p = CertificateParams::default();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let bare = p
        .self_signed(&KeyPair::generate().unwrap())
        .unwrap()
        .der()
        .clone();
    let leaf = Ca::root("other", Key::P256)
        .leaf("web", Key::P256, &[])
        .chain[0]
        .clone();
    let set = Sabotage::RequireCaSpiffeSan.into();
    assert!(
        super::super::chain::ca_san_problem(&[leaf.clone(), bare.clone()], Sabotages::NONE)
            .is_none()
    );
    assert!(super::super::chain::ca_san_problem(&[leaf.clone(), bare], set).is_some());
    assert!(super::super::chain::ca_san_problem(&[leaf.clone(), with_san], set).is_none());
    assert!(super::super::chain::ca_san_problem(&[leaf], set).is_none());
}
