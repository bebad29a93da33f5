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
