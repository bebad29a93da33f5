//! Rotation with and without cross-signing (checked with webpki the way proxies verify), the
//! shared serial counter, roots-table indexes, and pruning after 2 × leaf TTL.

use serde_json::Value;
use time::macros::datetime;

use super::support::*;

const T1: time::OffsetDateTime = datetime!(2025-05-22 10:00:00 UTC);

fn root_by_active(roots: &Value, active: bool) -> &Value {
    roots["Roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["Active"] == active)
        .unwrap()
}

#[test]
fn cross_signed_rotation_switches_active_and_chains_to_the_old_root() {
    let mut ca = new_ca();
    let old_leaf = ca.issue_leaf("web", "dc1", T0, 9).unwrap();
    let before = ca.roots_json();
    let old_pem = before["Roots"][0]["RootCert"].as_str().unwrap().to_owned();

    ca.rotate(true, T1, 20, &mut rng()).unwrap();
    let roots = ca.roots_json();
    assert_eq!(roots["Roots"].as_array().unwrap().len(), 2);
    let old = root_by_active(&roots, false);
    let new = root_by_active(&roots, true);
    assert_eq!(old["ID"], before["ActiveRootID"]);
    assert_eq!(roots["ActiveRootID"], new["ID"]);
    assert_ne!(new["ID"], old["ID"]);
    assert_eq!(
        ca.active_signing_key_id(),
        new["SigningKeyID"].as_str().unwrap()
    );
    assert_eq!(ca.roots_index(), 20);
    assert_eq!(
        (old["CreateIndex"].as_u64(), old["ModifyIndex"].as_u64()),
        (Some(8), Some(20))
    );
    assert_eq!(
        (new["CreateIndex"].as_u64(), new["ModifyIndex"].as_u64()),
        (Some(20), Some(20))
    );
    assert_eq!(new["SerialNumber"], 3, "root 1, leaf 2, new root 3");

    // The cross-signed copy: new subject, key and SKID; old issuer and AKID; 7 days from T1-1m.
    let xc_pems = new["IntermediateCerts"].as_array().unwrap();
    assert_eq!(xc_pems.len(), 1);
    let xc_der = single_der(xc_pems[0].as_str().unwrap());
    let xc = parse(&xc_der);
    let new_der = single_der(new["RootCert"].as_str().unwrap());
    let new_cert = parse(&new_der);
    let old_der = single_der(&old_pem);
    let old_cert = parse(&old_der);
    assert_eq!(xc.subject(), new_cert.subject());
    assert_eq!(xc.issuer(), old_cert.subject());
    assert_eq!(xc.public_key().raw, new_cert.public_key().raw);
    assert_eq!(skid(&xc), skid(&new_cert));
    assert_eq!(akid(&xc), skid(&old_cert));
    assert_eq!(uris(&xc), [format!("spiffe://{TD}")]);
    assert!(xc.is_ca());
    assert_eq!(xc.raw_serial_as_string(), "04");
    let start = datetime!(2025-05-22 09:59:00 UTC);
    assert_eq!(xc.validity().not_before.to_datetime(), start);
    assert_eq!(
        xc.validity().not_after.to_datetime(),
        start + time::Duration::days(7)
    );

    // A new leaf: signed by the new root, CertPEM = leaf + cross-signed cert.
    let leaf = ca.issue_leaf("web", "dc1", T1, 21).unwrap();
    assert_eq!(leaf.serial_number, "05");
    assert_eq!(leaf.authority_key_id, new["SigningKeyID"].as_str().unwrap());
    let chain = ders(&leaf.cert_pem);
    assert_eq!(chain.len(), 2);
    assert_eq!(chain[1], xc_der);
    assert!(leaf.cert_pem.ends_with(xc_pems[0].as_str().unwrap()));

    // Proxies that only know the old root accept it through the cross-signed cert ...
    assert!(verify_client(&leaf.cert_pem, &[&old_pem], T1).is_ok());
    // ... but not without it.
    let leaf_only = chain_to_pem(&chain[..1]);
    assert!(is_unknown_issuer(&verify_client(
        &leaf_only,
        &[&old_pem],
        T1
    )));
    // Proxies with the new roots accept it directly; old leaves stay valid while listed.
    let new_pem = new["RootCert"].as_str().unwrap();
    assert!(verify_client(&leaf_only, &[new_pem], T1).is_ok());
    let all: Vec<String> = ca.root_certs_pem();
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    assert!(verify_client(&old_leaf.cert_pem, &all, T1).is_ok());
    // The cross-signed cert lives 7 days: after that only the new root helps.
    let later = T1 + time::Duration::days(8);
    ca.set_leaf_ttl(hours(400));
    let late_leaf = ca.issue_leaf("web", "dc1", T1, 22).unwrap();
    assert!(verify_client(&late_leaf.cert_pem, &[&old_pem], later).is_err());
}

fn chain_to_pem(ders: &[rustls_pki_types::CertificateDer<'_>]) -> String {
    ders.iter()
        .map(|d| crate::model::ca::encoding::pem_encode("CERTIFICATE", d.as_ref()))
        .collect()
}

#[test]
fn rotation_without_cross_signing_has_null_intermediates() {
    let mut ca = new_ca();
    let old_pem = ca.root_certs_pem()[0].clone();
    ca.rotate(false, T1, 20, &mut rng()).unwrap();
    let roots = ca.roots_json();
    let new = root_by_active(&roots, true);
    assert_eq!(new["IntermediateCerts"], Value::Null);
    assert_eq!(new["SerialNumber"], 2);
    let leaf = ca.issue_leaf("web", "dc1", T1, 21).unwrap();
    assert_eq!(
        leaf.serial_number, "03",
        "no serial spent on a cross-signed cert"
    );
    assert_eq!(ders(&leaf.cert_pem).len(), 1);
    let r = verify_client(&leaf.cert_pem, &[&old_pem], T1);
    assert!(is_unknown_issuer(&r), "{r:?}");
    assert!(verify_client(&leaf.cert_pem, &[new["RootCert"].as_str().unwrap()], T1).is_ok());
}

#[test]
fn a_new_root_never_reuses_a_listed_subject() {
    // `new_ca` and this rotation draw from identically seeded rngs.
    let mut ca = new_ca();
    ca.rotate(true, T1, 20, &mut rng()).unwrap();
    let subjects: Vec<String> = ca
        .root_certs_pem()
        .iter()
        .map(|pem| parse(&single_der(pem)).subject().to_string())
        .collect();
    assert_eq!(subjects.len(), 2);
    assert_ne!(subjects[0], subjects[1]);
}

#[test]
fn roots_are_listed_in_id_order() {
    let mut ca = new_ca();
    for i in 0..3 {
        ca.rotate(i % 2 == 0, T1, 20 + i, &mut rng()).unwrap();
    }
    let roots = ca.roots_json();
    let ids: Vec<&str> = roots["Roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ID"].as_str().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted);
    assert_eq!(ids.len(), 4);
    let active: Vec<&Value> = roots["Roots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["Active"] == true)
        .collect();
    assert_eq!(active.len(), 1, "exactly one active root");
}

#[test]
fn pruning_waits_more_than_twice_the_leaf_ttl() {
    let mut ca = new_ca();
    ca.rotate(true, T1, 20, &mut rng()).unwrap();
    let limit = T1 + hours(144);
    assert!(!ca.prune(limit, 30), "exactly 2 x 72h: still listed");
    assert_eq!(ca.roots_index(), 20);
    assert_eq!(ca.roots_json()["Roots"].as_array().unwrap().len(), 2);

    assert!(ca.prune(limit + time::Duration::seconds(1), 31));
    let roots = ca.roots_json();
    let list = roots["Roots"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["Active"], true);
    assert_eq!(list[0]["ModifyIndex"], 31);
    assert_eq!(list[0]["CreateIndex"], 20);
    assert_eq!(ca.roots_index(), 31);
    assert!(
        !ca.prune(limit + hours(1000), 32),
        "the active root is never pruned"
    );
    assert_eq!(ca.roots_index(), 31);
}

#[test]
fn pruning_follows_the_current_leaf_ttl() {
    let mut ca = new_ca();
    ca.set_leaf_ttl(std::time::Duration::from_secs(1));
    ca.rotate(false, T1, 20, &mut rng()).unwrap();
    assert!(!ca.prune(T1 + time::Duration::seconds(2), 21));
    assert!(ca.prune(T1 + time::Duration::seconds(3), 22));
}
