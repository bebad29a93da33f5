//! The mesh entry as the agent serves it, turned into settings: Consul's defaults without one,
//! each field where it lands, unknown and `null` fields tolerated.

use serde_json::json;

use super::*;

fn entry(v: serde_json::Value) -> MeshEntry {
    serde_json::from_value(v).expect("decodes")
}

#[test]
fn no_entry_means_consuls_defaults() {
    let e = MeshEntry::default();
    assert_eq!(e.path_normalization(), PathNormalization::default());
    assert_eq!(e.settings(), MeshSettings::default());
    let minimal = entry(
        json!({"Kind": "mesh", "TransparentProxy": {"MeshDestinationsOnly": false},
                               "CreateIndex": 3, "ModifyIndex": 3, "Future": 1}),
    );
    assert_eq!(minimal.settings(), MeshSettings::default());
}

#[test]
fn every_field_lands() {
    let e = entry(json!({
        "Kind": "mesh",
        "TransparentProxy": {"MeshDestinationsOnly": true},
        "TLS": {"Incoming": {"TLSMinVersion": "TLSv1_3"},
                "Outgoing": {"TLSMinVersion": "TLSv1_1", "TLSMaxVersion": "TLSv1_2",
                             "CipherSuites": ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]}},
        "HTTP": {"SanitizeXForwardedClientCert": true, "Incoming": {"RequestNormalization": {
            "InsecureDisablePathNormalization": true, "MergeSlashes": true,
            "PathWithEscapedSlashesAction": "UNESCAPE_AND_REDIRECT",
            "HeadersWithUnderscoresAction": "DROP_HEADER"}}}
    }));
    assert_eq!(
        e.path_normalization(),
        PathNormalization {
            normalize_path: false,
            merge_slashes: true,
            escaped_slashes: EscapedSlashes::UnescapeAndRedirect,
        }
    );
    let s = e.settings();
    assert_eq!(s.underscores, Underscores::DropHeader);
    assert!(s.sanitize_xfcc && s.mesh_destinations_only);
    assert_eq!(s.tls_incoming.min, Some(TlsVersion::Tls13));
    assert_eq!(s.tls_incoming.max, None);
    assert_eq!(
        s.tls_outgoing.min, None,
        "a floor below 1.2 is no floor here"
    );
    assert_eq!(s.tls_outgoing.max, Some(TlsVersion::Tls12));
    assert_eq!(
        s.tls_outgoing.cipher_suites,
        ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]
    );
    let reject = entry(json!({"HTTP": {"Incoming": {"RequestNormalization": {
        "HeadersWithUnderscoresAction": "REJECT_REQUEST", "PathWithEscapedSlashesAction": "REJECT_REQUEST"}}}}));
    assert_eq!(reject.settings().underscores, Underscores::RejectRequest);
    assert_eq!(
        reject.path_normalization().escaped_slashes,
        EscapedSlashes::RejectRequest
    );
    assert!(reject.path_normalization().normalize_path);
}
