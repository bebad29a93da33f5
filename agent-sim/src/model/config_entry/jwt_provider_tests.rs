//! The `jwt-provider` entry: read shape after `Normalize` (clock skew 30 s, durations as
//! nanoseconds), snake_case aliases, and Consul's validation texts.

use serde_json::{Value, json};

use super::super::{ConfigEntries, ConfigError, Kind, decode_entry};

fn put(s: &mut ConfigEntries, body: &Value) -> Result<bool, ConfigError> {
    decode_entry(body.to_string().as_bytes()).and_then(|e| s.upsert(e, None, 5))
}

fn invalid(body: &Value) -> String {
    match put(&mut ConfigEntries::new(), body) {
        Err(ConfigError::Invalid(t)) => t,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn read_shape_after_normalize() {
    let mut s = ConfigEntries::new();
    put(
        &mut s,
        &json!({"kind": "jwt-provider", "name": "okta", "issuer": "https://okta",
            "json_web_key_set": {"remote": {"uri": "http://127.0.0.1:9/jwks",
                "request_timeout_ms": 1500, "cache_duration": "2s", "fetch_asynchronously": true}},
            "locations": [{"header": {"name": "Authorization", "value_prefix": "Bearer "}},
                          {"query_param": {"name": "token"}}],
            "forwarding": {"header_name": "x-jwt"}}),
    )
    .unwrap();
    let got = s.get(Kind::JwtProvider, "okta").unwrap().to_json();
    assert_eq!(
        got,
        json!({"Kind": "jwt-provider", "Name": "okta",
            "JSONWebKeySet": {"Remote": {"URI": "http://127.0.0.1:9/jwks",
                "RequestTimeoutMs": 1500, "CacheDuration": 2_000_000_000_i64,
                "FetchAsynchronously": true}},
            "Issuer": "https://okta",
            "Locations": [{"Header": {"Name": "Authorization", "ValuePrefix": "Bearer "}},
                          {"QueryParam": {"Name": "token"}}],
            "Forwarding": {"HeaderName": "x-jwt", "PadForwardPayloadHeader": false},
            "ClockSkewSeconds": 30, "CreateIndex": 5, "ModifyIndex": 5})
    );
}

#[test]
fn validation_texts() {
    let local = |jwks: &str| json!({"Local": {"JWKS": jwks}});
    let cases = [
        (json!({"Kind": "jwt-provider"}), "Name is required"),
        (
            json!({"Kind": "jwt-provider", "Name": "a"}),
            "JSONWebKeySet is required",
        ),
        (
            json!({"Kind": "jwt-provider", "Name": "a", "JSONWebKeySet": {}}),
            "must specify exactly one of Local or Remote JSON Web key set",
        ),
        (
            json!({"Kind": "jwt-provider", "Name": "a", "JSONWebKeySet": {"Local": {}}}),
            "must specify exactly one of String or filename for local keyset",
        ),
        (
            json!({"Kind": "jwt-provider", "Name": "a", "JSONWebKeySet": local("%%")}),
            "JWKS must be valid base64 encoded string",
        ),
        (
            json!({"Kind": "jwt-provider", "Name": "a", "JSONWebKeySet": {"Remote": {}}}),
            "Remote JWKS URI is required",
        ),
        (
            json!({"Kind": "jwt-provider", "Name": "a",
                "JSONWebKeySet": {"Remote": {"URI": "example.com"}}}),
            "Remote JWKS URI is invalid: parse \"example.com\": invalid URI for request, uri: example.com",
        ),
        (
            json!({"Kind": "jwt-provider", "Name": "a",
                "JSONWebKeySet": {"Remote": {"URI": "https://x", "JWKSCluster": {"DiscoveryType": "X"}}}}),
            "unsupported jwks cluster discovery type: \"X\"",
        ),
        (
            json!({"Kind": "jwt-provider", "Name": "a", "JSONWebKeySet": local("e30="),
                "Locations": [{}]}),
            "1 error occurred:\n\t* must set exactly one of: JWT location header, query param or cookie\n\n",
        ),
        (
            json!({"Kind": "jwt-provider", "Name": "a", "JSONWebKeySet": local("e30="),
                "Forwarding": {}}),
            "Header name required for forwarding config",
        ),
    ];
    for (body, want) in cases {
        assert_eq!(invalid(&body), want, "{body}");
    }
}

#[test]
fn remote_host_port_defaults() {
    use super::remote_host_port;
    assert_eq!(
        remote_host_port("http://127.0.0.1:8080/jwks"),
        Some(("127.0.0.1".into(), "http".into(), 8080))
    );
    assert_eq!(
        remote_host_port("https://example.com/jwks"),
        Some(("example.com".into(), "https".into(), 443))
    );
}

/// Consul's HTTP API fills the `[]byte` `InlineBytes` from the JSON string's bytes as written
/// (mapstructure's weak typing, no base64 decoding), and a read answers them base64-encoded,
/// as Go's JSON writes `[]byte`: the PEM text goes in, its base64 comes out, and writing a read
/// back unchanged stores the base64 text, as in Consul.
#[test]
fn inline_bytes_are_taken_as_written_and_read_back_as_base64() {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    let entry = |inline: &str| {
        json!({"Kind": "jwt-provider", "Name": "idp",
            "JSONWebKeySet": {"Remote": {"URI": "https://idp.example/jwks",
                "JWKSCluster": {"TLSCertificates": {"TrustedCA": {"InlineBytes": inline}}}}}})
    };
    let ca = |got: &Value| {
        got["JSONWebKeySet"]["Remote"]["JWKSCluster"]["TLSCertificates"]["TrustedCA"]["InlineBytes"]
            .clone()
    };
    let mut s = ConfigEntries::new();
    for (written, read) in [
        (pem.to_owned(), b64(pem)),
        ("%%% not base64".into(), b64("%%% not base64")),
    ] {
        put(&mut s, &entry(&written)).expect("any string is accepted");
        let got = s.get(Kind::JwtProvider, "idp").unwrap().to_json();
        assert_eq!(ca(&got), json!(read), "{written:?}");
        put(&mut s, &got).unwrap();
        let again = s.get(Kind::JwtProvider, "idp").unwrap().to_json();
        assert_eq!(
            ca(&again),
            json!(b64(&read)),
            "a read written back is encoded again"
        );
    }
}
