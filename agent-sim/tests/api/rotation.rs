//! CA rotation through the real API (`PUT /v1/connect/ca/configuration`), as an operator does it.

use serde_json::json;

use super::support::{app, builder};

#[tokio::test]
async fn rotation_via_ca_configuration() {
    let a = app(builder());
    let before = a.get("/v1/agent/connect/ca/roots").await.json();
    let old_id = before["ActiveRootID"].clone();
    let body = json!({"Provider": "consul", "Config": {"LeafCertTTL": "72h", "RotateRoot": true}})
        .to_string();
    let r = a.put("/v1/connect/ca/configuration", &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let after = a.get("/v1/agent/connect/ca/roots").await.json();
    assert_ne!(after["ActiveRootID"], old_id);
    let roots = after["Roots"].as_array().unwrap();
    assert_eq!(roots.len(), 2);
    let active = roots.iter().find(|r| r["Active"] == true).unwrap();
    let old = roots.iter().find(|r| r["Active"] == false).unwrap();
    assert_eq!(old["ID"], old_id);
    assert_eq!(
        active["IntermediateCerts"].as_array().unwrap().len(),
        1,
        "cross-signed by the old root"
    );
    let leaf = a.get("/v1/agent/connect/ca/leaf/db").await.json();
    assert!(
        leaf["CertPEM"]
            .as_str()
            .unwrap()
            .contains(active["IntermediateCerts"][0].as_str().unwrap().trim_end())
    );

    let r = a
        .put(
            "/v1/connect/ca/configuration",
            &json!({"Provider": "vault", "Config": {}}).to_string(),
        )
        .await;
    assert_eq!(r.status, 500, "{}", r.text);
}

/// Whether `chain_pem` (leaf first) verifies as a client chain against `root_pem` alone.
fn chains_to(chain_pem: &str, root_pem: &str) -> bool {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, UnixTime};
    let ders = |pem: &str| -> Vec<CertificateDer<'static>> {
        CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let mut roots = rustls::RootCertStore::empty();
    for der in ders(root_pem) {
        roots.add(der).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
            .build()
            .unwrap();
    let chain = ders(chain_pem);
    let (leaf, rest) = chain.split_first().unwrap();
    verifier
        .verify_client_cert(leaf, rest, UnixTime::now())
        .is_ok()
}

/// What an operator does: install their own root (PrivateKey + RootCert), then rotate the
/// cluster to RSA, fetching roots and leaves through the public API after each step.
#[tokio::test]
async fn operator_imports_a_root_then_rotates_to_rsa() {
    let a = app(builder());
    let td = a.get("/v1/agent/connect/ca/roots").await.json()["TrustDomain"]
        .as_str()
        .unwrap()
        .to_owned();
    // The operator's own CA (an EC P-256 key in PKCS#8, as `openssl genpkey` writes it).
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "Operator Root CA");
    params.subject_alt_names = vec![rcgen::SanType::URI(
        format!("spiffe://{td}").try_into().unwrap(),
    )];
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let root_pem = params.self_signed(&key).unwrap().pem();
    let body = json!({"Provider": "consul", "Config": {
        "PrivateKey": key.serialize_pem(), "RootCert": root_pem,
    }});
    let r = a
        .put("/v1/connect/ca/configuration", &body.to_string())
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let roots = a.get("/v1/agent/connect/ca/roots").await.json();
    let active = roots["Roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["Active"] == true)
        .unwrap()
        .clone();
    assert_eq!(active["RootCert"].as_str().unwrap().trim(), root_pem.trim());
    assert_eq!(active["PrivateKeyType"], "ec");
    let config = a.get("/v1/connect/ca/configuration").await.json();
    assert_eq!(config["Config"]["PrivateKey"], "hidden");
    let leaf = a.get("/v1/agent/connect/ca/leaf/web").await.json();
    assert!(chains_to(leaf["CertPEM"].as_str().unwrap(), &root_pem));

    // Rotate to RSA-2048: a generated root, cross-signed by the operator's.
    let body = json!({"Provider": "consul", "Config": {
        "PrivateKeyType": "rsa", "PrivateKeyBits": 2048,
    }});
    let r = a
        .put("/v1/connect/ca/configuration", &body.to_string())
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let roots = a.get("/v1/agent/connect/ca/roots").await.json();
    let active = roots["Roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["Active"] == true)
        .unwrap()
        .clone();
    assert_eq!(active["PrivateKeyType"], "rsa");
    assert_eq!(active["PrivateKeyBits"], 2048);
    assert_eq!(active["IntermediateCerts"].as_array().unwrap().len(), 1);
    let leaf = a.get("/v1/agent/connect/ca/leaf/web").await.json();
    let key_pem = leaf["PrivateKeyPEM"].as_str().unwrap();
    // Consul's agent generates EC P-256 leaf keys whatever the CA's key type; the RSA root
    // signs them.
    assert!(
        key_pem.starts_with("-----BEGIN EC PRIVATE KEY-----"),
        "{key_pem}"
    );
    let chain = leaf["CertPEM"].as_str().unwrap();
    assert!(chains_to(chain, active["RootCert"].as_str().unwrap()));
    assert!(
        chains_to(chain, &root_pem),
        "old clients still trust the new leaves"
    );

    // A key that does not match the certificate is refused with a 500 and nothing changes.
    let other = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let body = json!({"Provider": "consul", "Config": {
        "PrivateKey": other.serialize_pem(), "RootCert": root_pem,
    }});
    let r = a
        .put("/v1/connect/ca/configuration", &body.to_string())
        .await;
    assert_eq!(r.status, 500, "{}", r.text);
    assert_eq!(
        r.text.trim(),
        "error configuring provider: root cert's public key does not match the private key"
    );
}
