//! Key kinds (EC P-256/P-384, RSA 2048/4096) for roots and leaves, rotation between kinds with
//! cross-signing, and an operator-imported root (`PrivateKey` + `RootCert`) with Consul's checks.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, KeyPair, SanType,
};
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::support::{T0, TD, ders, key_matches, new_ca, parse, rng, single_der, verify_client};
use crate::model::ca::keys::{self, KeyKind};
use crate::model::ca::{Ca, CaError};

#[allow(clippy::needless_pass_by_value)]
fn put(ca: &mut Ca, config: Value, index: u64) -> Result<bool, CaError> {
    let body = json!({"Provider": "consul", "Config": config});
    ca.apply_config(&body, T0, index, &mut rng())
        .map(|o| o.rotated)
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

fn all_roots(ca: &Ca) -> Vec<String> {
    ca.root_certs_pem()
}

/// Rotates a default CA to `kind` through the configuration endpoint and checks roots JSON,
/// leaves, and that the cross-signed cert chains a new leaf to the old root. Leaf keys stay EC
/// P-256 whatever the CA's kind (Consul's agent generates them); the new root signs them.
fn rotate_to_kind(key_type: &str, bits: u32, signature_oid_prefix: &str) {
    let mut ca = new_ca();
    let old_root = active(&ca)["RootCert"].as_str().unwrap().to_owned();
    let rotated = put(
        &mut ca,
        json!({"PrivateKeyType": key_type, "PrivateKeyBits": bits}),
        20,
    )
    .unwrap();
    assert!(rotated, "a new key type is a new root");
    let root = active(&ca);
    assert_eq!(root["PrivateKeyType"], key_type);
    assert_eq!(root["PrivateKeyBits"], bits);
    let config = ca.config_json();
    assert_eq!(config["Config"]["PrivateKeyType"], key_type);
    assert_eq!(config["Config"]["PrivateKeyBits"], bits);

    let leaf = ca.issue_leaf("web", "", T0, 21).unwrap();
    assert!(
        leaf.private_key_pem
            .starts_with("-----BEGIN EC PRIVATE KEY-----\n"),
        "{}",
        leaf.private_key_pem
    );
    assert!(key_matches(&leaf.cert_pem, &leaf.private_key_pem));
    let roots = all_roots(&ca);
    let trusted: Vec<&str> = roots.iter().map(String::as_str).collect();
    verify_client(&leaf.cert_pem, &trusted, T0).unwrap();
    // Leaf + cross-signed new root verifies under the OLD root alone.
    assert_eq!(
        ders(&leaf.cert_pem).len(),
        2,
        "leaf then the cross-signed root"
    );
    verify_client(&leaf.cert_pem, &[&old_root], T0).unwrap();
    // The leaf's public key is EC P-256; its signature is the new root's kind.
    let der = ders(&leaf.cert_pem).remove(0);
    let cert = parse(&der);
    let alg = cert.public_key().algorithm.algorithm.to_id_string();
    assert_eq!(alg, "1.2.840.10045.2.1", "an EC leaf key");
    match cert.public_key().parsed() {
        Ok(x509_parser::public_key::PublicKey::EC(point)) => assert_eq!(point.key_size(), 256),
        other => panic!("leaf key is not EC: {other:?}"),
    }
    let sig = cert.signature_algorithm.algorithm.to_id_string();
    assert!(
        sig.starts_with(signature_oid_prefix),
        "leaf signed with {sig}, want {signature_oid_prefix}*"
    );
}

#[test]
fn ec_to_rsa_2048_cross_signed() {
    // sha256WithRSAEncryption
    rotate_to_kind("rsa", 2048, "1.2.840.113549.1.1.11");
}

#[test]
fn ec_to_p384_cross_signed() {
    // ecdsa-with-SHA*
    rotate_to_kind("ec", 384, "1.2.840.10045.4.3.");
}

#[test]
fn rsa_4096_generates_and_signs() {
    let start = std::time::Instant::now();
    let key = keys::generate_kind(KeyKind::Rsa4096).unwrap();
    eprintln!("RSA-4096 key generated in {:?}", start.elapsed());
    assert_eq!(keys::kind_of(&key), KeyKind::Rsa4096);
    let pem = keys::private_key_pem(&key).unwrap();
    let back = keys::import_pem(&pem).unwrap();
    assert_eq!(keys::kind_of(&back), KeyKind::Rsa4096);
    assert_eq!(back.public_key_raw(), key.public_key_raw());
}

#[test]
fn key_pems_round_trip_for_every_kind() {
    for kind in [KeyKind::Ec256, KeyKind::Ec384, KeyKind::Rsa2048] {
        let key = keys::generate_kind(kind).unwrap();
        assert_eq!(keys::kind_of(&key), kind);
        let pem = keys::private_key_pem(&key).unwrap();
        let back = keys::import_pem(&pem).unwrap();
        assert_eq!(keys::kind_of(&back), kind, "{kind}");
        assert_eq!(back.public_key_raw(), key.public_key_raw(), "{kind}");
        // PKCS#8 is accepted too.
        let back = keys::import_pem(&key.serialize_pem()).unwrap();
        assert_eq!(keys::kind_of(&back), kind, "{kind} from PKCS#8");
    }
}

/// An operator's own root: self-signed CA over `key`, with the trust domain's URI SAN.
fn operator_root(key: &KeyPair, ca: bool) -> String {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "Operator Root CA");
    dn.push(DnType::OrganizationName, "Example Ops");
    params.distinguished_name = dn;
    params.subject_alt_names = vec![SanType::URI(format!("spiffe://{TD}").try_into().unwrap())];
    params.is_ca = if ca {
        IsCa::Ca(BasicConstraints::Unconstrained)
    } else {
        IsCa::ExplicitNoCa
    };
    params.not_before = T0 - time::Duration::days(1);
    params.not_after = T0 + time::Duration::days(3650);
    params.self_signed(key).unwrap().pem()
}

fn import_body(key: &KeyPair, root: &str) -> Value {
    json!({"PrivateKey": keys::private_key_pem(key).unwrap(), "RootCert": root})
}

#[test]
fn imported_root_is_adopted_then_rotated_to_rsa() {
    let mut ca = new_ca();
    let key = keys::generate_kind(KeyKind::Ec256).unwrap();
    let root_pem = operator_root(&key, true);
    assert!(put(&mut ca, import_body(&key, &root_pem), 20).unwrap());
    let root = active(&ca);
    assert_eq!(
        single_der(root["RootCert"].as_str().unwrap()),
        single_der(&root_pem),
        "the operator's certificate is served as is"
    );
    assert_eq!(ca.config_json()["Config"]["PrivateKey"], "hidden");
    let leaf = ca.issue_leaf("web", "", T0, 21).unwrap();
    verify_client(&leaf.cert_pem, &[&root_pem], T0).unwrap();
    // The same body again is Consul's no-op.
    assert!(!put(&mut ca, import_body(&key, &root_pem), 22).unwrap());

    // The operator then rotates to RSA: a generated RSA root, cross-signed by theirs.
    assert!(
        put(
            &mut ca,
            json!({"PrivateKeyType": "rsa", "PrivateKeyBits": 2048}),
            23
        )
        .unwrap()
    );
    assert_eq!(active(&ca)["PrivateKeyType"], "rsa");
    let leaf = ca.issue_leaf("web", "", T0, 24).unwrap();
    assert!(
        leaf.private_key_pem
            .starts_with("-----BEGIN EC PRIVATE KEY-----"),
        "leaf keys stay EC P-256 under an RSA CA, as Consul's agent generates them"
    );
    verify_client(&leaf.cert_pem, &[&root_pem], T0).unwrap();
}

#[test]
fn imported_rsa_root() {
    let mut ca = new_ca();
    let key = keys::generate_kind(KeyKind::Rsa2048).unwrap();
    let root_pem = operator_root(&key, true);
    let mut body = import_body(&key, &root_pem);
    body["PrivateKeyType"] = json!("rsa");
    body["PrivateKeyBits"] = json!(2048);
    assert!(put(&mut ca, body, 20).unwrap());
    assert_eq!(active(&ca)["PrivateKeyType"], "rsa");
    let leaf = ca.issue_leaf("api", "", T0, 21).unwrap();
    verify_client(&leaf.cert_pem, &[&root_pem], T0).unwrap();
}

#[test]
fn imported_root_checks() {
    let key = keys::generate().unwrap();
    let other = keys::generate().unwrap();
    let err = put(
        &mut new_ca(),
        import_body(&key, &operator_root(&other, true)),
        20,
    );
    assert_eq!(
        err.unwrap_err().to_string(),
        "error configuring provider: root cert's public key does not match the private key"
    );
    let err = put(
        &mut new_ca(),
        import_body(&key, &operator_root(&key, false)),
        20,
    );
    assert_eq!(
        err.unwrap_err().to_string(),
        "error configuring provider: root cert is not a CA certificate"
    );
    let garbage = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    let err = put(&mut new_ca(), import_body(&key, garbage), 20).unwrap_err();
    assert!(
        err.to_string().starts_with("x509: malformed certificate"),
        "{err}"
    );
    // Nothing changed on failure.
    let mut ca = new_ca();
    let before = ca.roots_json();
    let refused = put(&mut ca, import_body(&key, &operator_root(&other, true)), 20);
    assert!(
        refused.is_err(),
        "a root that is not the key's must be refused"
    );
    assert_eq!(ca.roots_json(), before);
}

#[test]
fn rotate_kind_control_follows_config() {
    let mut ca = new_ca();
    ca.rotate_kind(KeyKind::Ec384, true, T0, 30, &mut rng())
        .unwrap();
    assert_eq!(active(&ca)["PrivateKeyBits"], 384);
    assert_eq!(ca.config_json()["Config"]["PrivateKeyBits"], 384);
    let at: OffsetDateTime = T0;
    let leaf = ca.issue_leaf("web", "", at, 31).unwrap();
    assert!(key_matches(&leaf.cert_pem, &leaf.private_key_pem));
}
