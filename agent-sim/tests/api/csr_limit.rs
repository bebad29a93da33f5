//! `CSRMaxPerSecond` on the wire: a new leaf beyond the rate is Consul's 429
//! `Rate limit reached, try again later`; cached leaves are still served.

use super::support::{app, builder};

#[tokio::test]
async fn leaf_signing_is_rate_limited_cached_reads_are_not() {
    let a = app(builder());
    let r = a
        .put(
            "/v1/connect/ca/configuration",
            r#"{"Provider":"consul","Config":{"LeafCertTTL":"72h","IntermediateCertTTL":"8760h","RootCertTTL":"87600h","CSRMaxPerSecond":0.01}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = a.get("/v1/agent/connect/ca/leaf/web").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = a.get("/v1/agent/connect/ca/leaf/api").await;
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.text, "Rate limit reached, try again later");
    let r = a.get("/v1/agent/connect/ca/leaf/web").await;
    assert_eq!(
        r.status, 200,
        "the cached leaf needs no signing: {}",
        r.text
    );
}
