//! The `mesh` entry: read shape, decoding (snake_case aliases, no `Name`), Consul's validation
//! texts, and the `MutualTLSMode=permissive` gate it holds over service- and proxy-defaults.

use serde_json::{Value, json};

use super::*;

fn put(s: &mut ConfigEntries, body: &Value, index: u64) -> Result<bool, ConfigError> {
    decode_entry(body.to_string().as_bytes()).and_then(|e| s.upsert(e, None, index))
}

#[test]
fn read_shape_minimal_and_full() {
    let mut s = ConfigEntries::new();
    put(&mut s, &json!({"Kind": "mesh"}), 3).unwrap();
    let got = s.get(Kind::Mesh, "mesh").unwrap().to_json();
    assert_eq!(
        got,
        json!({"Kind": "mesh", "TransparentProxy": {"MeshDestinationsOnly": false},
               "CreateIndex": 3, "ModifyIndex": 3})
    );
    let full = json!({
        "kind": "mesh",
        "transparent_proxy": {"mesh_destinations_only": true},
        "allow_enabling_permissive_mutual_tls": true,
        "TLS": {"Incoming": {"tls_min_version": "TLSv1_3"},
                "Outgoing": {"TLSMinVersion": "TLSv1_2", "TLSMaxVersion": "TLSv1_2",
                             "cipher_suites": ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]}},
        "http": {"sanitize_x_forwarded_client_cert": true,
                 "incoming": {"request_normalization": {
                     "insecure_disable_path_normalization": true, "merge_slashes": true,
                     "path_with_escaped_slashes_action": "UNESCAPE_AND_FORWARD",
                     "headers_with_underscores_action": "DROP_HEADER"}}},
        "Meta": {"team": "sec"}
    });
    put(&mut s, &full, 4).unwrap();
    let got = s.get(Kind::Mesh, "mesh").unwrap().to_json();
    assert_eq!(
        got,
        json!({
            "Kind": "mesh",
            "TransparentProxy": {"MeshDestinationsOnly": true},
            "AllowEnablingPermissiveMutualTLS": true,
            "TLS": {"Incoming": {"TLSMinVersion": "TLSv1_3"},
                    "Outgoing": {"TLSMinVersion": "TLSv1_2", "TLSMaxVersion": "TLSv1_2",
                                 "CipherSuites": ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]}},
            "HTTP": {"SanitizeXForwardedClientCert": true,
                     "Incoming": {"RequestNormalization": {
                         "InsecureDisablePathNormalization": true, "MergeSlashes": true,
                         "PathWithEscapedSlashesAction": "UNESCAPE_AND_FORWARD",
                         "HeadersWithUnderscoresAction": "DROP_HEADER"}}},
            "Meta": {"team": "sec"},
            "CreateIndex": 3,
            "ModifyIndex": 4
        })
    );
    let keys: Vec<&String> = got.as_object().unwrap().keys().collect();
    assert_eq!(keys[0], "Kind", "Go's MarshalJSON puts Kind first");
    assert_eq!(s.list(Kind::Mesh).len(), 1);
    assert!(
        s.get(Kind::Mesh, "other").is_none(),
        "the entry lives under `mesh` only"
    );
}

#[test]
fn a_name_key_is_refused_like_any_unknown_key() {
    let err = decode_entry(br#"{"Kind":"mesh","Name":"mesh"}"#).unwrap_err();
    assert_eq!(
        err,
        ConfigError::Decode("1 error occurred:\n\t* invalid config key \"Name\"\n\n".into())
    );
}

#[test]
fn validation_texts_are_consuls() {
    let cases: &[(Value, &str)] = &[
        (
            json!({"TLS": {"Incoming": {"TLSMinVersion": "tls13"}}}),
            "error in incoming TLS configuration: no matching TLS version found for tls13, please specify one of [TLS_AUTO, TLSv1_0, TLSv1_1, TLSv1_2, TLSv1_3]",
        ),
        (
            json!({"TLS": {"Outgoing": {"TLSMinVersion": "TLSv1_3", "TLSMaxVersion": "TLSv1_2"}}}),
            "error in outgoing TLS configuration: configuring max version TLSv1_2 less than the configured min version TLSv1_3 is invalid",
        ),
        (
            json!({"TLS": {"Incoming": {"TLSMinVersion": "TLSv1_3",
                   "CipherSuites": ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]}}}),
            "error in incoming TLS configuration: configuring CipherSuites is only applicable to connections negotiated with TLS 1.2 or earlier, TLSMinVersion is set to TLSv1_3",
        ),
        (
            json!({"TLS": {"Incoming": {"CipherSuites": ["TLS_AES_128_GCM_SHA256", "X", "TLS_RSA_WITH_AES_128_CBC_SHA"]}}}),
            "error in incoming TLS configuration: no matching Envoy TLS cipher suite found for TLS_AES_128_GCM_SHA256,X",
        ),
        (
            json!({"HTTP": {"Incoming": {"RequestNormalization": {"PathWithEscapedSlashesAction": "reject"}}}}),
            "error in HTTP incoming request normalization configuration: no matching PathWithEscapedSlashesAction value found for reject, please specify one of [IMPLEMENTATION_SPECIFIC_DEFAULT, KEEP_UNCHANGED, REJECT_REQUEST, UNESCAPE_AND_REDIRECT, UNESCAPE_AND_FORWARD]",
        ),
        (
            json!({"HTTP": {"Incoming": {"RequestNormalization": {"HeadersWithUnderscoresAction": "DROP"}}}}),
            "error in HTTP incoming request normalization configuration: no matching HeadersWithUnderscoresAction value found for DROP, please specify one of [ALLOW, REJECT_REQUEST, DROP_HEADER]",
        ),
    ];
    for (fields, want) in cases {
        let mut body = fields.clone();
        body["Kind"] = json!("mesh");
        let mut s = ConfigEntries::new();
        let err = put(&mut s, &body, 1).unwrap_err();
        assert_eq!(err, ConfigError::Invalid((*want).into()), "{body}");
    }
    // A max below the min only compares concrete versions.
    let mut s = ConfigEntries::new();
    let auto = json!({"Kind": "mesh", "TLS": {"Incoming": {"TLSMinVersion": "TLSv1_3", "TLSMaxVersion": "TLS_AUTO"}}});
    assert_eq!(put(&mut s, &auto, 1), Ok(true));
}

#[test]
fn permissive_needs_the_mesh_entry_to_allow_it() {
    const DENIED: &str = "cannot set MutualTLSMode=permissive because AllowEnablingPermissiveMutualTLS=false in the mesh config entry";
    let sd = |mode: &str| json!({"Kind": "service-defaults", "Name": "db", "MutualTLSMode": mode});
    let pd = json!({"Kind": "proxy-defaults", "Name": "global", "MutualTLSMode": "permissive"});
    let mut s = ConfigEntries::new();
    assert_eq!(put(&mut s, &sd("strict"), 1), Ok(true));
    assert_eq!(
        put(&mut s, &sd("permissive"), 2),
        Err(ConfigError::Invalid(DENIED.into()))
    );
    assert_eq!(
        put(&mut s, &pd, 2),
        Err(ConfigError::Invalid(DENIED.into()))
    );
    put(&mut s, &json!({"Kind": "mesh"}), 3).unwrap();
    assert_eq!(
        put(&mut s, &sd("permissive"), 4),
        Err(ConfigError::Invalid(DENIED.into()))
    );

    let allow = json!({"Kind": "mesh", "AllowEnablingPermissiveMutualTLS": true});
    put(&mut s, &allow, 5).unwrap();
    assert_eq!(put(&mut s, &sd("permissive"), 6), Ok(true));
    assert_eq!(put(&mut s, &pd, 7), Ok(true));
    assert_eq!(
        s.central_config_for("db").mutual_tls_mode.as_deref(),
        Some("permissive")
    );

    // Withdrawing the permission keeps what is already permissive, refuses new changes to it.
    put(&mut s, &json!({"Kind": "mesh"}), 8).unwrap();
    let mut keep = sd("permissive");
    keep["Protocol"] = json!("http");
    assert_eq!(put(&mut s, &keep, 9), Ok(true));
    assert_eq!(put(&mut s, &sd(""), 10), Ok(true));
    assert_eq!(
        put(&mut s, &sd("permissive"), 11),
        Err(ConfigError::Invalid(DENIED.into()))
    );
    assert_eq!(
        s.central_config_for("web").mutual_tls_mode.as_deref(),
        Some("permissive"),
        "proxy-defaults still permissive for services without their own setting"
    );
}
