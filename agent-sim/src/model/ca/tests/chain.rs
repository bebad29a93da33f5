//! Chain mode: leaves signed by an intermediate listed in the root's `IntermediateCerts`,
//! rotation of the intermediate alone and of the root, and forged client identities chaining
//! the same way.

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::Value;

use super::support::{
    CLUSTER, T0, akid, ders, hex, is_unknown_issuer, parse, rng, skid, verify_client,
};
use crate::model::ca::{Ca, CaConfig, Forgery, KeyKind};

fn chain_ca(kind: KeyKind) -> Ca {
    let cfg = CaConfig {
        cluster_id: CLUSTER.into(),
        key_kind: kind,
        intermediate: true,
        ..CaConfig::default()
    };
    Ca::new(cfg, T0, 8, &mut rng()).unwrap()
}

fn active(ca: &Ca) -> Value {
    let roots = ca.roots_json();
    let id = roots["ActiveRootID"].clone();
    roots["Roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ID"] == id)
        .cloned()
        .unwrap()
}

fn intermediates(root: &Value) -> Vec<String> {
    root["IntermediateCerts"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

fn trusted(ca: &Ca) -> Vec<String> {
    ca.root_certs_pem()
}

fn check_verifies(ca: &Ca, chain: &str) {
    let roots = trusted(ca);
    let refs: Vec<&str> = roots.iter().map(String::as_str).collect();
    verify_client(chain, &refs, T0).unwrap();
}

#[test]
fn leaves_chain_through_the_intermediate() {
    let mut ca = chain_ca(KeyKind::Ec256);
    assert!(ca.intermediate_mode());
    let root = active(&ca);
    let ints = intermediates(&root);
    assert_eq!(ints.len(), 1, "IntermediateCerts lists the intermediate");
    let int_der = ders(&ints[0]).remove(0);
    let int = parse(&int_der);
    assert!(int.is_ca());
    assert_eq!(
        root["SigningKeyID"],
        hex(&skid(&int)),
        "SigningKeyID = leaf signer's"
    );

    let leaf = ca.issue_leaf("web", "", T0, 9).unwrap();
    let chain = ders(&leaf.cert_pem);
    assert_eq!(chain.len(), 2, "leaf then the intermediate");
    assert_eq!(chain[1], int_der);
    assert_eq!(akid(&parse(&chain[0])), skid(&int));
    assert_eq!(leaf.authority_key_id, hex(&skid(&int)));
    check_verifies(&ca, &leaf.cert_pem);
    // Without the intermediate the leaf does not chain to any root.
    let leaf_only = ders(&leaf.cert_pem)
        .into_iter()
        .take(1)
        .map(|d| crate::model::ca::encoding::pem_encode("CERTIFICATE", d.as_ref()))
        .collect::<String>();
    let roots = trusted(&ca);
    let refs: Vec<&str> = roots.iter().map(String::as_str).collect();
    assert!(is_unknown_issuer(&verify_client(&leaf_only, &refs, T0)));
}

#[test]
fn intermediate_rotates_alone() {
    let mut ca = chain_ca(KeyKind::Rsa2048);
    let before = active(&ca);
    let old_leaf = ca.issue_leaf("web", "", T0, 9).unwrap();
    ca.rotate_intermediate(T0, 10, &mut StdRng::seed_from_u64(99))
        .unwrap();
    let after = active(&ca);
    assert_eq!(after["ID"], before["ID"], "the root stays");
    assert_ne!(after["SigningKeyID"], before["SigningKeyID"]);
    assert_eq!(intermediates(&after).len(), 2, "the new one is appended");
    assert_eq!(ca.roots_index(), 10);
    assert_ne!(
        old_leaf.authority_key_id,
        ca.active_signing_key_id(),
        "old leaves are due for re-issue"
    );
    let new_leaf = ca.issue_leaf("web", "", T0, 11).unwrap();
    assert_eq!(
        ders(&new_leaf.cert_pem).len(),
        3,
        "leaf + both intermediates"
    );
    check_verifies(&ca, &new_leaf.cert_pem);
    check_verifies(&ca, &old_leaf.cert_pem);
}

#[test]
fn root_rotation_in_chain_mode_cross_signs_and_reattaches() {
    let mut ca = chain_ca(KeyKind::Ec256);
    let old_root = active(&ca)["RootCert"].as_str().unwrap().to_owned();
    ca.rotate_kind(
        KeyKind::Rsa2048,
        true,
        T0,
        12,
        &mut StdRng::seed_from_u64(5),
    )
    .unwrap();
    let root = active(&ca);
    assert_eq!(root["PrivateKeyType"], "rsa");
    assert_eq!(
        intermediates(&root).len(),
        2,
        "cross-signed root, then the intermediate"
    );
    let leaf = ca.issue_leaf("web", "", T0, 13).unwrap();
    check_verifies(&ca, &leaf.cert_pem);
    verify_client(&leaf.cert_pem, &[&old_root], T0).unwrap();
}

#[test]
fn forged_and_issued_identities_chain_the_same_way() {
    let mut ca = chain_ca(KeyKind::Ec384);
    let id = ca.issue_identity("web", "", T0, 9).unwrap();
    assert_eq!(ders(&id.cert_chain_pem).len(), 2);
    check_verifies(&ca, &id.cert_chain_pem);
    let forged = ca
        .forge(
            &Forgery::CommonNameMismatch {
                common_name: "db".into(),
                service: "web".into(),
            },
            T0,
        )
        .unwrap();
    assert_eq!(ders(&forged.cert_chain_pem).len(), 2);
    check_verifies(&ca, &forged.cert_chain_pem);
    let expired = ca
        .forge(
            &Forgery::Expired {
                service: "web".into(),
            },
            T0,
        )
        .unwrap();
    assert_eq!(ders(&expired.cert_chain_pem).len(), 2);
}
