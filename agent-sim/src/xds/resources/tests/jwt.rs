//! JWT in xDS as Consul renders it (`jwt_authn.go`, the JWT half of `rbac.go`,
//! `makeJWTProviderCluster`): the filter ahead of RBAC with `allow_missing_or_failed`, the
//! payload matchers on intention principals and permissions, the JWKS cluster with Consul's
//! cache-duration unit slip, the build refused for an unknown provider; each shape put before
//! `envoy --mode validate` in both TLS modes.

use envoy_types::pb::envoy::config::cluster::v3::{Cluster, cluster::ClusterDiscoveryType};
use envoy_types::pb::envoy::config::core::v3::{data_source, transport_socket};
use envoy_types::pb::envoy::config::rbac::v3::{permission, principal};
use envoy_types::pb::envoy::extensions::filters::http::jwt_authn::v3::{
    JwtAuthentication, jwt_provider::JwksSourceSpecifier, jwt_requirement::RequiresType,
    requirement_rule::RequirementType,
};
use envoy_types::pb::envoy::extensions::filters::http::rbac::v3::Rbac as HttpRbac;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, http_filter,
};
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CertificateValidationContext, UpstreamTlsContext, common_tls_context::ValidationContextType,
};
use serde_json::json;

use super::envoy::validate;
use super::{BuildError, build, decode, get, public, sim_from, typed};
use crate::assembly::sim::AgentSim;
use crate::state::config::IntentionDefault;
use crate::state::control::Control;
use crate::xds::resources::for_proxy;
use crate::xds::types::{self, TlsMode, XdsConfig};

/// A JWKS with one P-256 key (public part only).
const JWKS: &str = r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","alg":"ES256","use":"sig","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#;

/// The shared fixture with intentions defaulting to deny (under default allow, Consul drops
/// allow intentions from RBAC, and their JWT requirements with them).
fn sim() -> Control {
    sim_from(
        AgentSim::builder()
            .seed(7)
            .default_intention_policy(IntentionDefault::Deny),
    )
}

fn setup(c: &Control) {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(JWKS);
    for entry in [
        json!({"Kind": "proxy-defaults", "Name": "global", "Config": {"protocol": "http"}}),
        json!({"Kind": "jwt-provider", "Name": "okta", "Issuer": "https://okta",
            "Audiences": ["web"], "JSONWebKeySet": {"Local": {"JWKS": b64}},
            "Locations": [{"Header": {"Name": "x-jwt", "Forward": true}},
                          {"QueryParam": {"Name": "token"}}]}),
        json!({"Kind": "jwt-provider", "Name": "auth0", "Issuer": "https://auth0",
            "JSONWebKeySet": {"Remote": {"URI": "http://127.0.0.1:18443/jwks",
                "RequestTimeoutMs": 1500, "CacheDuration": "2s",
                "RetryPolicy": {"NumRetries": 2}}}}),
        json!({"Kind": "service-intentions", "Name": "web",
            "JWT": {"Providers": [{"Name": "okta", "VerifyClaims": [{"Path": ["team"], "Value": "a"}]}]},
            "Sources": [
                {"Name": "db", "Permissions": [{"Action": "allow", "HTTP": {"PathPrefix": "/admin"},
                    "JWT": {"Providers": [{"Name": "auth0",
                        "VerifyClaims": [{"Path": ["role", "name"], "Value": "admin"}]}]}}]},
                {"Name": "*", "Action": "allow"}]}),
    ] {
        c.upsert_config_entry(&entry).expect("entry");
    }
}

#[test]
fn jwt_filter_rbac_matchers_and_jwks_cluster() {
    let c = sim();
    setup(&c);
    let r = build(&c, TlsMode::Inline).resources;
    let l = public(&r);
    let hcm: HttpConnectionManager = decode(typed(&l.filter_chains[0].filters[0]));
    let names: Vec<&str> = hcm.http_filters.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "envoy.filters.http.jwt_authn",
            "envoy.filters.http.rbac",
            "envoy.filters.http.router"
        ]
    );
    let cfg = |i: usize| match &hcm.http_filters[i].config_type {
        Some(http_filter::ConfigType::TypedConfig(a)) => a.clone(),
        other => panic!("{other:?}"),
    };
    let jwt: JwtAuthentication = decode(&cfg(0));
    let okta = &jwt.providers["okta"];
    assert_eq!(okta.payload_in_metadata, "jwt_payload_okta");
    assert_eq!(okta.audiences, ["web"]);
    assert!(okta.forward, "the header location's Forward");
    assert_eq!(okta.from_params, ["token"]);
    assert_eq!(
        okta.clock_skew_seconds, 0,
        "Consul does not render ClockSkewSeconds"
    );
    let Some(JwksSourceSpecifier::RemoteJwks(remote)) =
        &jwt.providers["auth0"].jwks_source_specifier
    else {
        panic!("auth0 is remote")
    };
    assert_eq!(
        remote.cache_duration.as_ref().map(|d| d.seconds),
        Some(2_000_000_000),
        "Consul puts the nanoseconds into seconds"
    );
    assert_eq!(
        remote.http_uri.as_ref().map(|u| u.timeout.unwrap().seconds),
        Some(1)
    );
    assert_eq!(jwt.rules.len(), 1);
    let Some(RequirementType::Requires(req)) = &jwt.rules[0].requirement_type else {
        panic!("requires")
    };
    let Some(RequiresType::RequiresAll(all)) = &req.requires_type else {
        panic!("two providers are ANDed: {req:?}")
    };
    assert_eq!(all.requirements.len(), 2);
    for r in &all.requirements {
        let Some(RequiresType::RequiresAny(any)) = &r.requires_type else {
            panic!("provider OR allow_missing_or_failed")
        };
        assert!(matches!(
            any.requirements[1].requires_type,
            Some(RequiresType::AllowMissingOrFailed(_))
        ));
    }

    let rbac: HttpRbac = decode(&cfg(1));
    let rules = rbac.rules.expect("rules");
    let text = format!("{rules:?}");
    assert!(text.contains("jwt_payload_okta") && text.contains("jwt_payload_auth0"));
    // The intention-level requirement rides on the principal of `*`.
    let l4 = &rules.policies["consul-intentions-layer4"];
    let Some(principal::Identifier::AndIds(set)) = &l4.principals[0].identifier else {
        panic!("source AND jwt: {:?}", l4.principals)
    };
    assert!(format!("{:?}", set.ids[1]).contains("\"team\""));
    // The permission-level one on the permission of `db`.
    let l7 = rules
        .policies
        .iter()
        .find(|(k, _)| k.starts_with("consul-intentions-layer7"))
        .map(|(_, p)| p)
        .expect("l7 policy");
    assert!(matches!(
        l7.permissions[0].rule,
        Some(permission::Rule::AndRules(_))
    ));
    assert!(format!("{:?}", l7.permissions[0]).contains("\"role\""));

    let cluster: Cluster = get(&r, types::CLUSTER, "jwks_cluster_auth0");
    assert_eq!(
        cluster.cluster_discovery_type,
        Some(ClusterDiscoveryType::Type(0)),
        "no JWKSCluster: the zero type, STATIC"
    );
    assert!(r.get(types::CLUSTER, "jwks_cluster_okta").is_none());
}

/// The JWKS cluster's validation context for an `https` URI (`makeJWTCertValidationContext`).
fn jwks_validation(c: &Control, name: &str) -> CertificateValidationContext {
    let r = build(c, TlsMode::Inline).resources;
    let cluster: Cluster = get(&r, types::CLUSTER, &format!("jwks_cluster_{name}"));
    let Some(transport_socket::ConfigType::TypedConfig(any)) =
        cluster.transport_socket.and_then(|t| t.config_type)
    else {
        panic!("{name}: an https JWKS cluster has a TLS transport socket")
    };
    let tls: UpstreamTlsContext = decode(&any);
    match tls
        .common_tls_context
        .and_then(|c| c.validation_context_type)
    {
        Some(ValidationContextType::ValidationContext(vc)) => vc,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn an_https_jwks_cluster_trusts_what_tls_certificates_names() {
    let c = sim();
    setup(&c);
    let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    let remote = |cluster: serde_json::Value| json!({"URI": "https://idp.example:8443/jwks", "JWKSCluster": cluster});
    for (name, cluster) in [
        (
            "bytes",
            json!({"TLSCertificates": {"TrustedCA": {"InlineBytes": pem}}}),
        ),
        (
            "file",
            json!({"TLSCertificates": {"TrustedCA": {"Filename": "/etc/idp-ca.pem"}}}),
        ),
        (
            "plugin",
            json!({"TLSCertificates": {"CaCertificateProviderInstance": {
            "InstanceName": "idp", "CertificateName": "ca"}}}),
        ),
        ("none", json!({"DiscoveryType": "STRICT_DNS"})),
    ] {
        c.upsert_config_entry(&json!({"Kind": "jwt-provider", "Name": name,
            "JSONWebKeySet": {"Remote": remote(cluster)}}))
            .expect("entry");
    }
    let ca = |name| {
        jwks_validation(&c, name)
            .trusted_ca
            .and_then(|d| d.specifier)
    };
    assert_eq!(
        ca("bytes"),
        Some(data_source::Specifier::InlineBytes(pem.as_bytes().to_vec())),
        "InlineBytes is rendered as the entry's string gave it (Consul's HTTP API takes the string's bytes)"
    );
    assert_eq!(
        ca("file"),
        Some(data_source::Specifier::Filename("/etc/idp-ca.pem".into()))
    );
    let plugin = jwks_validation(&c, "plugin");
    assert_eq!(plugin.trusted_ca, None);
    let instance = plugin.ca_certificate_provider_instance.expect("instance");
    assert_eq!(
        (
            instance.instance_name.as_str(),
            instance.certificate_name.as_str()
        ),
        ("idp", "ca")
    );
    assert_eq!(
        jwks_validation(&c, "none"),
        CertificateValidationContext::default(),
        "no TLSCertificates: an empty validation context (Envoy verifies nothing)"
    );
}

#[test]
fn an_unknown_provider_fails_the_build() {
    let c = sim();
    c.upsert_config_entry(&json!({"Kind": "proxy-defaults", "Name": "global",
        "Config": {"protocol": "http"}}))
        .unwrap();
    // Consul refuses intentions naming a missing provider, but lets a named provider be
    // deleted afterwards.
    c.upsert_config_entry(
        &json!({"Kind": "jwt-provider", "Name": "nope", "Issuer": "i",
        "JSONWebKeySet": {"Local": {"JWKS": "e30="}}}),
    )
    .unwrap();
    c.upsert_config_entry(&json!({"Kind": "service-intentions", "Name": "web",
        "JWT": {"Providers": [{"Name": "nope"}]},
        "Sources": [{"Name": "*", "Action": "allow"}]}))
        .unwrap();
    c.delete_config_entry("jwt-provider", "nope").unwrap();
    let err = for_proxy(
        &c.store,
        "web-sidecar-proxy",
        &XdsConfig {
            tls_mode: TlsMode::Inline,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err,
        BuildError::Unavailable(
            "provider specified in intention does not exist. Provider name: nope".into()
        )
    );
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn envoy_accepts_jwt_filter_matchers_and_jwks_cluster() {
    let c = sim();
    setup(&c);
    for mode in [TlsMode::Inline, TlsMode::Sds] {
        let r = build(&c, mode).resources;
        validate(&format!("jwt ({})", mode.as_str()), &r).expect("envoy accepts");
    }
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn envoy_refuses_a_cache_duration_of_ten_seconds() {
    // Consul's unit slip: 10 s of nanoseconds become 10,000,000,000 s, past what Envoy takes.
    let c = sim();
    setup(&c);
    c.upsert_config_entry(&json!({"Kind": "jwt-provider", "Name": "auth0",
        "Issuer": "https://auth0",
        "JSONWebKeySet": {"Remote": {"URI": "http://127.0.0.1:18443/jwks",
            "RequestTimeoutMs": 1500, "CacheDuration": "10s"}}}))
        .expect("entry");
    let r = build(&c, TlsMode::Inline).resources;
    let err = validate("jwt cache 10s", &r).expect_err("envoy refuses");
    assert!(err.contains("Duration out-of-range"), "{err}");
}
