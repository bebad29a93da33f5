//! A table of bad inputs: each gets Consul's status and text, never a panic.

use axum::http::Method;

use super::support::{app, builder};

/// Method, URI, body.
type Call = (Method, String, Option<String>);

#[tokio::test]
async fn bad_inputs_get_consuls_answers() {
    let a = app(builder());
    let td = a.control.trust_domain();
    let authz = |body: String| {
        (
            Method::POST,
            "/v1/agent/connect/authorize".to_owned(),
            Some(body),
        )
    };
    let cases: Vec<(Call, u16, String)> = vec![
        (authz(String::new()), 400, "Request decode failed: EOF".into()),
        (authz("{".into()), 400, "Request decode failed: unexpected EOF".into()),
        (authz(r#"{"Target":"db","Bogus":1}"#.into()), 400, r#"Request decode failed: json: unknown field "Bogus""#.into()),
        (authz(r#"{"Target":"","ClientCertURI":"x"}"#.into()), 400, "Target service must be specified".into()),
        (authz(r#"{"Target":"db","ClientCertURI":"http://x"}"#.into()), 400, "ClientCertURI not a valid Connect identifier".into()),
        (
            authz(format!(r#"{{"Target":"db","ClientCertURI":"spiffe://{td}/agent/client/dc/dc1/id/n1"}}"#)),
            400,
            "ClientCertURI not a valid Service identifier".into(),
        ),
        ((Method::GET, "/v1/agent/connect/ca/roots?index=abc".into(), None), 400, "Invalid index".into()),
        ((Method::GET, "/v1/agent/connect/ca/roots?wait=10".into(), None), 400, "Invalid wait time".into()),
        ((Method::GET, "/v1/health/connect/db?stale&consistent".into(), None), 400, "Cannot specify ?stale with ?consistent, conflicting semantics.".into()),
        ((Method::GET, "/v1/health/connect/db?ns=x".into(), None), 400, "Invalid query parameter: \"ns\" - Namespaces are a Consul Enterprise feature".into()),
        ((Method::GET, "/v1/connect/intentions/match?name=db".into(), None), 500, "required query parameter 'by' not set".into()),
        ((Method::GET, "/v1/connect/intentions/match?by=x&name=db".into(), None), 500, "'by' parameter must be one of 'source' or 'destination'".into()),
        ((Method::GET, "/v1/connect/intentions/match?by=source".into(), None), 500, "required query parameter 'name' not set".into()),
        ((Method::GET, "/v1/connect/intentions/check?destination=db".into(), None), 500, "required query parameter 'source' not set".into()),
        ((Method::GET, "/v1/connect/intentions/exact?source=web&destination=db".into(), None), 404, "Intention not found".into()),
        ((Method::PUT, "/v1/agent/service/register".into(), Some(String::new())), 400, "Request decode failed: EOF".into()),
        ((Method::PUT, "/v1/agent/service/register".into(), Some(r#"{"Port":1}"#.into())), 400, "Missing service name".into()),
        ((Method::PUT, "/v1/agent/service/register".into(), Some(r#"{"Name":"x","Nope":1}"#.into())), 400, r#"Request decode failed: json: unknown field "Nope""#.into()),
        (
            (Method::PUT, "/v1/agent/service/register".into(), Some(r#"{"Name":"p","Kind":"connect-proxy","Proxy":{"DestinationServiceName":"db"}}"#.into())),
            400,
            "Validation failed: 1 error occurred:\n\t* Port or SocketPath must be set for a connect-proxy\n\n".into(),
        ),
        ((Method::PUT, "/v1/config".into(), Some(r#"{"Name":"x"}"#.into())), 400, "Request decoding failed: Payload does not contain a kind/Kind key at the top level".into()),
        ((Method::PUT, "/v1/config".into(), Some(r#"{"Kind":"foo","Name":"x"}"#.into())), 400, "Request decoding failed: invalid config entry kind: foo".into()),
        ((Method::GET, "/v1/config/service-defaults/none".into(), None), 404, "Config entry not found for \"service-defaults\" / \"none\"".into()),
        ((Method::POST, "/v1/discovery-chain/db".into(), Some(r#"{"OverrideMeshGateway":{"Mode":"sideways"}}"#.into())), 400, "Invalid OverrideMeshGateway.Mode parameter".into()),
        ((Method::GET, "/v1/discovery-chain/".into(), None), 400, "Missing chain name".into()),
        ((Method::GET, "/v1/health/connect/".into(), None), 400, "Missing service name".into()),
        ((Method::GET, "/v1/agent/service/none".into(), None), 404, "unknown service ID: none".into()),
        ((Method::GET, "/v1/agent/connect/ca/leaf/".into(), None), 500, "URI must be either service, agent, server, or kind".into()),
        ((Method::GET, "/v1/nope".into(), None), 404, "Invalid URL path: not a recognized HTTP API endpoint\n".into()),
        ((Method::POST, "/v1/agent/connect/ca/roots".into(), None), 405, "method POST not allowed".into()),
    ];
    for ((method, uri, body), status, text) in cases {
        let r = a.call(method.clone(), &uri, None, body.as_deref()).await;
        assert_eq!(
            (r.status, r.text.as_str()),
            (status, text.as_str()),
            "{method} {uri}"
        );
        if status >= 400 {
            assert_eq!(
                r.header("content-type"),
                Some("text/plain; charset=utf-8"),
                "{method} {uri}"
            );
        }
    }
    let r = a
        .call(Method::POST, "/v1/agent/connect/ca/roots", None, None)
        .await;
    assert_eq!(r.header("allow"), Some("OPTIONS,GET"));
    let r = a
        .call(Method::OPTIONS, "/v1/agent/connect/ca/roots", None, None)
        .await;
    assert_eq!((r.status, r.header("allow")), (200, Some("OPTIONS,GET")));
}

#[tokio::test]
async fn oversized_bodies_are_refused_cleanly() {
    let a = app(builder());
    let big = format!(
        r#"{{"Name":"x","Meta":{{"k":"{}"}}}}"#,
        "a".repeat(3 * 1024 * 1024)
    );
    let r = a
        .call(Method::PUT, "/v1/agent/service/register", None, Some(&big))
        .await;
    assert_eq!(r.status, 413);
    assert!(r.text.contains("length limit"), "{}", r.text);
}
