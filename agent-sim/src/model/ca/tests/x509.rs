//! Certificate contents of roots and leaves against reference §12, read back with x509-parser,
//! plus leaf-endpoint details (serial text, PEM formats, times, errors).

use sha1::Digest as _;
use time::macros::datetime;
use x509_parser::extensions::ParsedExtension;

use super::support::*;
use crate::model::ca::{CaError, Leaf};

#[test]
fn root_matches_consul_generate_ca() {
    let ca = new_ca();
    let roots = ca.roots_json();
    let root = &roots["Roots"][0];
    let pem = root["RootCert"].as_str().unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----\n"));
    assert!(pem.ends_with("-----END CERTIFICATE-----\n"));
    let der = single_der(pem);
    let cert = parse(&der);

    let cn = cert
        .subject()
        .iter_common_name()
        .next()
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned();
    let (prefix, rest) = cn.split_at(4);
    assert_eq!(prefix, "pri-");
    assert_eq!(&rest[8..], ".consul.ca.7e567ac2.consul", "{cn}");
    assert!(
        rest[..8]
            .bytes()
            .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase()),
        "{cn}"
    );
    assert_eq!(cert.issuer(), cert.subject(), "self-signed");
    assert_eq!(uris(&cert), [format!("spiffe://{TD}")]);
    assert!(cert.is_ca());
    let ku = cert.key_usage().unwrap().unwrap().value;
    assert!(ku.key_cert_sign() && ku.crl_sign() && ku.digital_signature());
    assert!(!ku.key_encipherment() && !ku.key_agreement());

    let id = skid(&cert);
    assert_eq!(id.len(), 32, "Consul key ids are full SHA-256");
    assert_eq!(id, spki_sha256(&cert));
    assert_eq!(akid(&cert), id);
    assert_eq!(
        cert.validity().not_before.to_datetime(),
        T0,
        "no backdating"
    );
    assert_eq!(cert.validity().not_after.to_datetime(), T0 + hours(87600));
    assert_eq!(cert.raw_serial_as_string(), "01");

    assert_eq!(root["ID"], hex(&sha1::Sha1::digest(der.as_ref())));
    assert_eq!(root["ID"], roots["ActiveRootID"]);
    assert_eq!(root["SigningKeyID"], hex(&id));
    assert_eq!(ca.active_signing_key_id(), hex(&id));
    assert_eq!(root["SerialNumber"], 1);
    assert_eq!(root["NotBefore"], "2025-05-21T16:33:28Z");
    assert_eq!(root["NotAfter"], "2035-05-19T16:33:28Z");
}

fn first_leaf() -> (crate::model::ca::Ca, Leaf) {
    let mut ca = new_ca();
    let leaf = ca.issue_leaf("web", "dc1", T0, 42).unwrap();
    (ca, leaf)
}

#[test]
fn leaf_matches_consul_sign() {
    let (ca, leaf) = first_leaf();
    let der = single_der(&leaf.cert_pem);
    let cert = parse(&der);

    assert_eq!(cert.subject().iter().count(), 0, "empty subject");
    let san = cert
        .extensions()
        .iter()
        .find(|e| {
            matches!(
                e.parsed_extension(),
                ParsedExtension::SubjectAlternativeName(_)
            )
        })
        .unwrap();
    assert!(san.critical, "SAN is critical when the subject is empty");
    let uri = format!("spiffe://{TD}/ns/default/dc/dc1/svc/web");
    assert_eq!(uris(&cert), std::slice::from_ref(&uri));
    assert_eq!(leaf.service_uri, uri);

    let ku = cert.key_usage().unwrap().unwrap().value;
    assert!(ku.digital_signature() && ku.key_encipherment());
    assert!(ku.data_encipherment() && ku.key_agreement());
    assert!(!ku.key_cert_sign() && !ku.crl_sign());
    let eku = cert.extended_key_usage().unwrap().unwrap().value;
    assert!(eku.client_auth && eku.server_auth);
    let bc = cert
        .basic_constraints()
        .unwrap()
        .expect("BasicConstraints present");
    assert!(!bc.value.ca);

    assert_eq!(skid(&cert), spki_sha256(&cert));
    assert_eq!(hex(&akid(&cert)), ca.active_signing_key_id());
    assert_eq!(leaf.authority_key_id, ca.active_signing_key_id());

    let not_before = datetime!(2025-05-21 16:32:28 UTC);
    assert_eq!(cert.validity().not_before.to_datetime(), not_before);
    assert_eq!(
        cert.validity().not_after.to_datetime(),
        not_before + hours(72)
    );
    assert_eq!(
        (leaf.valid_after, leaf.valid_before),
        (not_before, not_before + hours(72))
    );
    assert_eq!(leaf.create_index, 42);
    assert_eq!(leaf.modify_index, 42);
    assert!(verify_client(&leaf.cert_pem, &[&ca.root_certs_pem()[0]], T0).is_ok());
}

#[test]
fn leaf_key_is_sec1_and_matches_the_cert() {
    let (_, leaf) = first_leaf();
    assert!(
        leaf.private_key_pem
            .starts_with("-----BEGIN EC PRIVATE KEY-----\n")
    );
    assert!(
        leaf.private_key_pem
            .ends_with("-----END EC PRIVATE KEY-----\n")
    );
    assert!(key_matches(&leaf.cert_pem, &leaf.private_key_pem));
}

#[test]
fn every_issuance_has_a_new_key_and_serial() {
    let (mut ca, first) = first_leaf();
    let second = ca.issue_leaf("web", "", T0, 43).unwrap();
    assert_ne!(first.private_key_pem, second.private_key_pem);
    assert_eq!(
        (first.serial_number.as_str(), second.serial_number.as_str()),
        ("02", "03")
    );
}

#[test]
fn serial_text_is_colon_hex_of_minimal_bytes() {
    let mut ca = new_ca();
    ca.next_serial = 8;
    let leaf = ca.issue_leaf("web", "dc1", T0, 9).unwrap();
    assert_eq!(leaf.serial_number, "08");
    ca.next_serial = 0x1a2b;
    let leaf = ca.issue_leaf("web", "dc1", T0, 10).unwrap();
    assert_eq!(leaf.serial_number, "1a:2b");
    let der = single_der(&leaf.cert_pem);
    assert_eq!(parse(&der).raw_serial_as_string(), "1a:2b");
}

#[test]
fn leaf_json_times_are_rfc3339_utc() {
    let (_, leaf) = first_leaf();
    let json = leaf.to_json();
    assert_eq!(json["ValidAfter"], "2025-05-21T16:32:28Z");
    assert_eq!(json["ValidBefore"], "2025-05-24T16:32:28Z");
    assert_eq!(json["SerialNumber"], "02");
}

#[test]
fn leaf_ttl_down_to_one_second() {
    let mut ca = new_ca();
    ca.set_leaf_ttl(std::time::Duration::from_secs(1));
    let leaf = ca.issue_leaf("web", "dc1", T0, 9).unwrap();
    assert_eq!(
        leaf.valid_before - leaf.valid_after,
        time::Duration::seconds(1)
    );
    ca.set_leaf_ttl(std::time::Duration::ZERO);
    assert_eq!(ca.leaf_ttl(), std::time::Duration::from_secs(1), "clamped");
}

#[test]
fn leaf_requests_fail_with_consul_texts() {
    let mut ca = new_ca();
    let err = ca.issue_leaf("web", "dc2", T0, 9).unwrap_err();
    assert_eq!(
        err.to_string(),
        "SPIFFE ID in CSR from a different datacenter: dc2, we are dc1"
    );
    let err = ca.issue_leaf("", "dc1", T0, 9).unwrap_err();
    assert_eq!(err, CaError::EmptyService);
    assert_eq!(
        err.to_string(),
        "URI must be either service, agent, server, or kind"
    );
    assert!(matches!(
        ca.issue_leaf("a/b", "dc1", T0, 9),
        Err(CaError::InvalidSpiffeId(_))
    ));
    assert_eq!(ca.next_serial, 2, "failed requests use no serial");
}

#[test]
fn bootstrap_validates_its_config() {
    use crate::model::ca::{Ca, CaConfig};
    let bad_id = CaConfig {
        cluster_id: "nope".into(),
        ..CaConfig::default()
    };
    assert!(matches!(
        Ca::new(bad_id, T0, 1, &mut rng()),
        Err(CaError::InvalidClusterId(_))
    ));
    let bad_ttl = CaConfig {
        leaf_ttl: std::time::Duration::ZERO,
        ..CaConfig::default()
    };
    assert!(matches!(
        Ca::new(bad_ttl, T0, 1, &mut rng()),
        Err(CaError::InvalidTtl(_))
    ));
    let bad_dc = CaConfig {
        datacenter: String::new(),
        ..CaConfig::default()
    };
    assert!(matches!(
        Ca::new(bad_dc, T0, 1, &mut rng()),
        Err(CaError::InvalidDatacenter(_))
    ));
    let upper = CaConfig {
        cluster_id: CLUSTER.to_uppercase(),
        ..CaConfig::default()
    };
    let ca = Ca::new(upper, T0, 1, &mut rng()).unwrap();
    assert_eq!(ca.trust_domain(), TD, "trust domain is lowercase");
    assert_eq!(ca.cluster_id(), CLUSTER);
}

#[test]
fn default_config_is_consuls() {
    let cfg = crate::model::ca::CaConfig::default();
    assert!(uuid::Uuid::parse_str(&cfg.cluster_id).is_ok());
    assert_eq!(cfg.datacenter, "dc1");
    assert_eq!(
        (cfg.leaf_ttl, cfg.root_ttl, cfg.intermediate_ttl),
        (hours(72), hours(87600), hours(8760))
    );
}
