//! `apply_config` / `config_json`: rotation versus TTL-only changes, Consul's no-op rule, the
//! simulator's `RotateRoot`, imported keys, and errors with Consul's texts (state untouched).

use serde_json::{Value, json};
use time::macros::datetime;

use super::support::*;
use crate::model::ca::{Ca, CaError, ConfigOutcome};

const T1: time::OffsetDateTime = datetime!(2025-05-22 10:00:00 UTC);

fn put(ca: &mut Ca, body: &Value, index: u64) -> Result<ConfigOutcome, CaError> {
    ca.apply_config(body, T1, index, &mut rng())
}

fn roots_len(ca: &Ca) -> usize {
    ca.roots_json()["Roots"].as_array().unwrap().len()
}

const UNCHANGED: ConfigOutcome = ConfigOutcome {
    rotated: false,
    changed: false,
};
const TTL_ONLY: ConfigOutcome = ConfigOutcome {
    rotated: false,
    changed: true,
};
const ROTATED: ConfigOutcome = ConfigOutcome {
    rotated: true,
    changed: true,
};

#[test]
fn ttl_only_change_keeps_the_root() {
    let mut ca = new_ca();
    let body = json!({"Provider": "consul", "Config": {"LeafCertTTL": "1s"}});
    assert_eq!(put(&mut ca, &body, 30), Ok(TTL_ONLY));
    assert_eq!(ca.leaf_ttl(), std::time::Duration::from_secs(1));
    assert_eq!((roots_len(&ca), ca.roots_index()), (1, 8));
    let cfg = ca.config_json();
    assert_eq!(
        cfg["Config"],
        json!({"LeafCertTTL": "1s"}),
        "the stored map is what was sent"
    );
    assert_eq!(
        (cfg["CreateIndex"].as_u64(), cfg["ModifyIndex"].as_u64()),
        (Some(8), Some(30))
    );
    let leaf = ca.issue_leaf("web", "dc1", T1, 31).unwrap();
    assert_eq!(
        leaf.valid_before - leaf.valid_after,
        time::Duration::seconds(1)
    );

    assert_eq!(
        put(&mut ca, &body, 32),
        Ok(UNCHANGED),
        "identical config is a no-op"
    );
    assert_eq!(ca.config_json()["ModifyIndex"], 30);
}

#[test]
fn rotate_root_key_rotates_every_time_and_is_not_stored() {
    let mut ca = new_ca();
    let body = json!({"Provider": "consul", "Config": {"LeafCertTTL": "72h", "RotateRoot": true}});
    let old_skid = ca.active_signing_key_id();
    assert_eq!(put(&mut ca, &body, 30), Ok(ROTATED));
    assert_ne!(ca.active_signing_key_id(), old_skid);
    assert_eq!(ca.roots_index(), 30);
    let roots = ca.roots_json();
    let active = roots["Roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["Active"] == true)
        .unwrap();
    assert_eq!(
        active["IntermediateCerts"].as_array().map(Vec::len),
        Some(1),
        "cross-signed"
    );
    assert_eq!(ca.config_json()["Config"], json!({"LeafCertTTL": "72h"}));
    assert_eq!(put(&mut ca, &body, 31), Ok(ROTATED));
    assert_eq!(roots_len(&ca), 3);
}

#[test]
fn force_without_cross_signing_skips_the_cross_signed_cert() {
    let mut ca = new_ca();
    let body = json!({"Provider": "consul", "Config": {"RotateRoot": "true"}, "ForceWithoutCrossSigning": true});
    assert_eq!(put(&mut ca, &body, 30), Ok(ROTATED));
    let roots = ca.roots_json();
    let active = roots["Roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["Active"] == true)
        .unwrap();
    assert_eq!(active["IntermediateCerts"], Value::Null);
    assert_eq!(ca.config_json()["ForceWithoutCrossSigning"], true);
}

#[test]
fn disable_cross_signing_blocks_rotation_unless_forced() {
    let mut ca = new_ca();
    let off = json!({"Provider": "consul", "Config": {"DisableCrossSigning": true}});
    assert_eq!(put(&mut ca, &off, 30), Ok(TTL_ONLY));
    let rotate =
        json!({"Provider": "consul", "Config": {"DisableCrossSigning": true, "RotateRoot": true}});
    let err = put(&mut ca, &rotate, 31).unwrap_err();
    assert_eq!(err, CaError::CrossSigningUnsupported);
    assert!(
        err.to_string()
            .starts_with("The current CA Provider does not support cross-signing.")
    );
    let forced = json!({"Provider": "consul", "Config": {"RotateRoot": true}, "ForceWithoutCrossSigning": true});
    assert_eq!(put(&mut ca, &forced, 32), Ok(ROTATED));
}

#[test]
fn a_private_key_rotates_onto_that_key_and_reads_hidden() {
    let mut ca = new_ca();
    let key = crate::model::ca::keys::generate().unwrap();
    let pem = crate::model::ca::keys::private_key_pem(&key).unwrap();
    let body = json!({"Provider": "consul", "Config": {"PrivateKey": pem}});
    assert_eq!(put(&mut ca, &body, 30), Ok(ROTATED));
    let roots = ca.roots_json();
    let active = roots["Roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["Active"] == true)
        .unwrap();
    let der = single_der(active["RootCert"].as_str().unwrap());
    let spki = parse(&der).public_key().raw.to_vec();
    assert_eq!(spki, rcgen::PublicKeyData::subject_public_key_info(&key));
    assert_eq!(ca.config_json()["Config"], json!({"PrivateKey": "hidden"}));

    assert_eq!(put(&mut ca, &body, 31), Ok(UNCHANGED));
    let dropped = json!({"Provider": "consul", "Config": {}});
    assert_eq!(
        put(&mut ca, &dropped, 32),
        Ok(ROTATED),
        "dropping the key changes identity"
    );
    assert_eq!(roots_len(&ca), 3);
}

/// Asserts `body` fails with `text` and leaves the CA untouched.
#[track_caller]
fn rejects(body: &Value, text: &str) -> CaError {
    let mut ca = new_ca();
    let (roots, cfg) = (ca.roots_json(), ca.config_json());
    let err = put(&mut ca, body, 30).unwrap_err();
    assert_eq!(err.to_string(), text);
    assert_eq!(
        (ca.roots_json(), ca.config_json()),
        (roots, cfg),
        "state changed on error"
    );
    assert_eq!(
        ca.issue_leaf("web", "dc1", T1, 31).unwrap().serial_number,
        "02"
    );
    err
}

#[test]
fn bad_providers() {
    let err = rejects(
        &json!({"Provider": "foo", "Config": {}}),
        r#"could not initialize provider: unknown CA provider "foo""#,
    );
    assert_eq!(err.http_status(), 500);
    rejects(
        &json!({"Config": {}}),
        r#"could not initialize provider: unknown CA provider """#,
    );
    let err = rejects(
        &json!({"Provider": "vault", "Config": {}}),
        r#"could not initialize provider: the simulator only runs the "consul" CA provider, not "vault""#,
    );
    assert_eq!(err, CaError::UnsupportedProvider("vault".into()));
}

#[test]
fn bad_key_types() {
    let sim_only = "error configuring provider: the simulator supports EC 256/384 and RSA 2048/4096 CA keys, not";
    let err = rejects(
        &json!({"Provider": "consul", "Config": {"PrivateKeyBits": 521}}),
        &format!("{sim_only} PrivateKeyType \"ec\" with PrivateKeyBits 521"),
    );
    assert!(matches!(err, CaError::UnsupportedKey(_)));
    rejects(
        &json!({"Provider": "consul", "Config": {"PrivateKeyType": "rsa", "PrivateKeyBits": 1024}}),
        "error configuring provider: RSA key length must be 2048 or 4096 bits",
    );
    rejects(
        &json!({"Provider": "consul", "Config": {"PrivateKeyBits": 300}}),
        "error configuring provider: EC key length must be one of (224, 256, 384, 521) bits",
    );
    rejects(
        &json!({"Provider": "consul", "Config": {"PrivateKeyType": "dsa"}}),
        "error configuring provider: private key type must be either 'ec' or 'rsa'",
    );
    let rsa_pem = crate::model::ca::encoding::pem_encode("RSA PRIVATE KEY", &[0x30, 0x00]);
    let err = put(
        &mut new_ca(),
        &json!({"Provider": "consul", "Config": {"PrivateKey": rsa_pem}}),
        30,
    );
    assert!(matches!(err, Err(CaError::InvalidConfig(_))), "{err:?}");
}

#[test]
fn bad_ttls() {
    rejects(
        &json!({"Provider": "consul", "Config": {"LeafCertTTL": "abc"}}),
        "error configuring provider: error decoding config: 1 error(s) decoding:\n\n* error decoding 'LeafCertTTL': time: invalid duration \"abc\"",
    );
    rejects(
        &json!({"Provider": "consul", "Config": {"LeafCertTTL": "x", "RootCertTTL": "10"}}),
        "error configuring provider: error decoding config: 2 error(s) decoding:\n\n* error decoding 'LeafCertTTL': time: invalid duration \"x\"\n* error decoding 'RootCertTTL': time: invalid duration \"10\"",
    );
    rejects(
        &json!({"Provider": "consul", "Config": {"LeafCertTTL": "500ms"}}),
        "error configuring provider: leaf cert TTL must be greater or equal than 1s",
    );
    rejects(
        &json!({"Provider": "consul", "Config": {"LeafCertTTL": "8761h"}}),
        "error configuring provider: leaf cert TTL must be less than 8760h0m0s",
    );
    rejects(
        &json!({"Provider": "consul", "Config": {"LeafCertTTL": "4000h"}}),
        "error configuring provider: Intermediate Cert TTL must be greater or equal than 3 * LeafCertTTL (>=12000h0m0s).",
    );
    rejects(
        &json!({"Provider": "consul", "Config": {"IntermediateCertTTL": "2h"}}),
        "error configuring provider: Intermediate Cert TTL must be greater or equal than 3h",
    );
    rejects(
        &json!({"Provider": "consul", "Config": {"RootCertTTL": "0s"}}),
        "error configuring provider: root cert TTL must be at least 1s",
    );
}

#[test]
fn other_rejections() {
    rejects(
        &json!({"Provider": "consul", "Config": {}, "State": {"ID": "x"}}),
        "CA Provider State is read-only",
    );
    rejects(
        &json!({"Provider": "consul", "Config": {"RootCert": "x"}}),
        "error configuring provider: must provide a private key when providing a root cert",
    );
    let pem = crate::model::ca::keys::private_key_pem(&crate::model::ca::keys::generate().unwrap())
        .unwrap();
    rejects(
        &json!({"Provider": "consul", "Config": {"RootCert": "x", "PrivateKey": pem}}),
        "no PEM-encoded data found",
    );
    rejects(
        &json!({"Provider": "consul", "Config": {"RootCert": pem.clone(), "PrivateKey": pem}}),
        "first PEM-block should be CERTIFICATE type",
    );
    rejects(
        &json!({"Provider": "consul", "Config": {"PrivateKey": "x"}}),
        "error generating CA root certificate: error generating CA: no PEM-encoded data found",
    );
    let cert = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    rejects(
        &json!({"Provider": "consul", "Config": {"PrivateKey": cert}}),
        "error generating CA root certificate: error generating CA: unknown PEM block type for signing key: CERTIFICATE",
    );
    let err = rejects(
        &json!({"Provider": "consul", "Config": "x"}),
        "Request decode failed: json: cannot unmarshal string into Go struct field CAConfiguration.Config of type map[string]interface {}",
    );
    assert_eq!(err.http_status(), 400);
    rejects(
        &json!({"Provider": "consul", "Config": {"RotateRoot": "maybe"}}),
        "error configuring provider: error decoding config: 1 error(s) decoding:\n\n* cannot parse 'RotateRoot' as bool: strconv.ParseBool: parsing \"maybe\": invalid syntax",
    );
}

/// A fresh agent reports exactly `RuntimeConfig.ConnectCAConfiguration`'s three TTLs (strings);
/// a non-default key kind shows up as an operator's `ca_config` would put it (string + int),
/// and putting the reported config back is Consul's no-op.
#[test]
fn bootstrap_config_has_consuls_keys_only() {
    let mut ca = new_ca();
    let config = ca.config_json()["Config"].clone();
    let keys: Vec<&str> = config
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["IntermediateCertTTL", "LeafCertTTL", "RootCertTTL"]);
    assert_eq!(config["LeafCertTTL"], "72h");
    assert_eq!(config["IntermediateCertTTL"], "8760h");
    assert_eq!(config["RootCertTTL"], "87600h");
    assert_eq!(ca.config_json()["State"], Value::Null);
    let same = json!({"Provider": "consul", "Config": config});
    assert_eq!(put(&mut ca, &same, 30).unwrap(), UNCHANGED);

    let cfg = crate::model::ca::CaConfig {
        cluster_id: CLUSTER.into(),
        key_kind: crate::model::ca::KeyKind::Ec384,
        ..crate::model::ca::CaConfig::default()
    };
    let mut ca = Ca::new(cfg, T0, 8, &mut rng()).unwrap();
    let config = ca.config_json()["Config"].clone();
    assert_eq!(config["PrivateKeyType"], "ec");
    assert_eq!(config["PrivateKeyBits"], 384);
    assert_eq!(config.as_object().unwrap().len(), 5);
    let same = json!({"Provider": "consul", "Config": config});
    assert_eq!(put(&mut ca, &same, 30).unwrap(), UNCHANGED);
}

/// `CSRMaxPerSecond`: burst 1, a token may be waited for up to 500 ms, otherwise
/// `Rate limit reached, try again later` (429); absent or 0 means unlimited.
#[test]
fn csr_max_per_second_limits_signing() {
    let mut ca = new_ca();
    for _ in 0..100 {
        assert!(ca.take_csr_token(T1).is_ok(), "no limit by default");
    }
    let body = json!({"Provider": "consul", "Config": {"CSRMaxPerSecond": 1}});
    put(&mut ca, &body, 30).unwrap();
    assert!(ca.take_csr_token(T1).is_ok());
    let err = ca.take_csr_token(T1).unwrap_err();
    assert_eq!(err.to_string(), "Rate limit reached, try again later");
    assert_eq!(err.http_status(), 429);
    let later = T1 + std::time::Duration::from_millis(600);
    assert!(ca.take_csr_token(later).is_ok(), "within the 500 ms wait");
    assert!(ca.take_csr_token(later).is_err());
    let much_later = T1 + std::time::Duration::from_secs(5);
    assert!(ca.take_csr_token(much_later).is_ok());
}
