//! Wire snapshots: roots, leaf and configuration bodies, key order included. Times and the
//! cluster id are fixed by the fixture, so only key material and key-derived ids are redacted.

use serde_json::Value;
use time::macros::datetime;

use super::support::*;

#[test]
fn roots_body() {
    let ca = new_ca();
    insta::assert_json_snapshot!("roots", ca.roots_json(), {
        ".ActiveRootID" => "[sha1 id]",
        ".Roots[].ID" => "[sha1 id]",
        ".Roots[].SigningKeyID" => "[sha256 key id]",
        ".Roots[].RootCert" => "[pem]",
    });
}

#[test]
fn roots_body_after_cross_signed_rotation() {
    let mut ca = new_ca();
    ca.rotate(true, datetime!(2025-05-22 10:00:00 UTC), 20, &mut rng())
        .unwrap();
    let mut roots = ca.roots_json();
    // The body lists roots in (random) ID order; put them in creation order for a stable file.
    if let Some(list) = roots["Roots"].as_array_mut() {
        list.sort_by_key(|r| r["CreateIndex"].as_u64());
    }
    insta::assert_json_snapshot!("roots_rotated", roots, {
        ".ActiveRootID" => "[sha1 id]",
        ".Roots[].ID" => "[sha1 id]",
        ".Roots[].SigningKeyID" => "[sha256 key id]",
        ".Roots[].RootCert" => "[pem]",
        ".Roots[].IntermediateCerts[]" => "[pem]",
    });
}

#[test]
fn leaf_body() {
    let mut ca = new_ca();
    let leaf = ca.issue_leaf("web", "dc1", T0, 42).unwrap();
    insta::assert_json_snapshot!("leaf", leaf.to_json(), {
        ".CertPEM" => "[pem]",
        ".PrivateKeyPEM" => "[pem]",
    });
}

#[test]
fn configuration_body() {
    let ca = new_ca();
    insta::assert_json_snapshot!("configuration", ca.config_json());
}

#[test]
fn serialized_key_order_is_consuls() {
    // Snapshots show order too, but this pins the raw serialization the HTTP layer will send.
    let ca = new_ca();
    let body = serde_json::to_string(&ca.roots_json()).unwrap();
    let keys = ["\"ActiveRootID\"", "\"TrustDomain\"", "\"Roots\""];
    assert!(is_ordered(&body, &keys), "{body}");
    let root = serde_json::to_string(&ca.roots_json()["Roots"][0]).unwrap();
    let root_keys = [
        "ID",
        "Name",
        "SerialNumber",
        "SigningKeyID",
        "ExternalTrustDomain",
        "NotBefore",
        "NotAfter",
        "RootCert",
        "IntermediateCerts",
        "Active",
        "PrivateKeyType",
        "PrivateKeyBits",
        "CreateIndex",
        "ModifyIndex",
    ];
    let quoted: Vec<String> = root_keys.iter().map(|k| format!("\"{k}\":")).collect();
    let quoted: Vec<&str> = quoted.iter().map(String::as_str).collect();
    assert!(is_ordered(&root, &quoted), "{root}");
    let parsed: Value = serde_json::from_str(&root).unwrap();
    assert_eq!(
        parsed.as_object().unwrap().len(),
        root_keys.len(),
        "no extra keys"
    );
}

fn is_ordered(text: &str, keys: &[&str]) -> bool {
    let positions: Vec<Option<usize>> = keys.iter().map(|k| text.find(k)).collect();
    positions.iter().all(Option::is_some) && positions.windows(2).all(|w| w[0] < w[1])
}
