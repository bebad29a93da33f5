//! Table tests of `PUT /v1/config` failures: HTTP status class and exact body text, for decode
//! errors (400) and validation/graph errors (500).

use serde_json::{Value, json};

use super::*;

/// What the HTTP layer would answer.
fn status(e: &ConfigError) -> u16 {
    match e {
        ConfigError::Decode(_) => 400,
        ConfigError::Invalid(_) => 500,
        ConfigError::NotFound { .. } => 404,
    }
}

/// Applies `setup` (must all succeed), then `body`; returns (status, body text) of the failure.
fn attempt(setup: &[Value], body: &[u8]) -> (u16, String) {
    let mut s = ConfigEntries::new();
    for (i, b) in setup.iter().enumerate() {
        let e = decode_entry(b.to_string().as_bytes()).unwrap();
        assert_eq!(s.upsert(e, None, i as u64 + 1), Ok(true), "setup {b}");
    }
    let err = decode_entry(body)
        .and_then(|e| s.upsert(e, None, 100))
        .unwrap_err();
    (status(&err), err.to_string())
}

#[test]
fn decode_errors_are_400() {
    let cases: &[(&str, &str)] = &[
        (
            "{}",
            "Payload does not contain a kind/Kind key at the top level",
        ),
        (
            r#"{"KIND":"service-defaults"}"#,
            "Payload does not contain a kind/Kind key at the top level",
        ),
        (r#"{"Kind":"foo"}"#, "invalid config entry kind: foo"),
        (
            r#"{"Kind":"Service-Defaults"}"#,
            "invalid config entry kind: Service-Defaults",
        ),
        (r#"{"kind":5}"#, "Kind value in payload is not a string"),
        ("", "EOF"),
        (
            "[1]",
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            r#"{"Kind":"service-defaults","Name":"web","Foo":1}"#,
            "1 error occurred:\n\t* invalid config key \"Foo\"\n\n",
        ),
        (
            r#"{"Kind":"service-defaults","Name":"web","Namespace":"ns1","Partition":"p"}"#,
            "2 errors occurred:\n\t* invalid config key \"Namespace\", namespaces are a consul enterprise feature\n\t* invalid config key \"Partition\"\n\n",
        ),
        (
            r#"{"Kind":"service-intentions","Name":"db","Sources":[{"Name":"web","Action":"allow","Bogus":1}]}"#,
            "1 error occurred:\n\t* invalid config key \"Sources[0].Bogus\"\n\n",
        ),
        (
            r#"{"Kind":"service-defaults","Name":"web","MeshGateway":"local"}"#,
            "1 error(s) decoding:\n\n* 'MeshGateway' expected a map, got 'string'",
        ),
        (
            r#"{"Kind":"service-resolver","Name":"db","ConnectTimeout":"abc"}"#,
            "1 error(s) decoding:\n\n* error decoding 'ConnectTimeout': time: invalid duration \"abc\"",
        ),
        (
            r#"{"Kind":"service-splitter","Name":"web","Splits":[{"Weight":"lots"}]}"#,
            "1 error(s) decoding:\n\n* cannot parse 'Splits[0].Weight' as float: strconv.ParseFloat: parsing \"lots\": invalid syntax",
        ),
    ];
    for (body, want) in cases {
        assert_eq!(
            attempt(&[], body.as_bytes()),
            (400, format!("Request decoding failed: {want}")),
            "{body}"
        );
    }
}

fn http_db() -> Value {
    json!({"Kind": "service-defaults", "Name": "db", "Protocol": "http"})
}

fn l7(perm: &Value) -> Value {
    json!({"Kind": "service-intentions", "Name": "db", "Sources": [{"Name": "api", "Permissions": [perm]}]})
}

#[test]
fn validation_errors_are_500_with_consul_texts() {
    let many_meta: serde_json::Map<String, Value> =
        (0..65).map(|i| (format!("k{i}"), json!("v"))).collect();
    let cases: Vec<(Vec<Value>, Value, &str)> = vec![
        (
            vec![],
            json!({"Kind": "proxy-defaults", "Name": "x"}),
            r#"invalid name ("x"), only "global" is supported"#,
        ),
        (
            vec![],
            json!({"Kind": "service-intentions", "Name": "db"}),
            "At least one source is required",
        ),
        (
            vec![],
            json!({"Kind": "service-intentions", "Name": "db", "Sources": [{"Name": "web"}]}),
            "Sources[0].Action must be set to 'allow' or 'deny'",
        ),
        (
            vec![],
            json!({"Kind": "service-intentions", "Name": "db", "Sources": [{"Name": "web", "Action": "permit"}]}),
            "Sources[0].Action must be set to 'allow' or 'deny'",
        ),
        (
            vec![],
            json!({"Kind": "service-intentions", "Name": "*", "Sources": [{"Name": "web", "Permissions": [{"Action": "allow", "HTTP": {"PathExact": "/"}}]}]}),
            "Sources[0].Permissions cannot be specified on intentions with wildcarded destinations",
        ),
        (
            vec![],
            json!({"Kind": "service-intentions", "Name": "db", "Sources": [{"Name": "web", "Action": "allow", "Permissions": [{"Action": "allow", "HTTP": {"PathExact": "/"}}]}]}),
            "Sources[0].Action must be omitted if Permissions are specified",
        ),
        (
            vec![],
            json!({"Kind": "service-intentions", "Name": "db", "Sources": [{"Name": "web", "Action": "allow"}, {"Name": "web", "Action": "deny"}]}),
            r#"Sources[1] defines "web" more than once"#,
        ),
        (
            vec![],
            json!({"Kind": "service-intentions", "Name": "db", "Sources": [{"Name": "we*", "Action": "allow"}]}),
            "Sources[0].Name: wildcard character '*' cannot be used with partial values",
        ),
        (
            vec![],
            json!({"Kind": "service-intentions", "Name": "d*", "Sources": [{"Name": "web", "Action": "allow"}]}),
            "Name: wildcard character '*' cannot be used with partial values",
        ),
        (
            vec![],
            json!({"Kind": "service-intentions", "Name": "db", "Sources": [{"Name": "web", "Action": "allow", "SamenessGroup": "sg"}]}),
            "Sources[0].SamenessGroup: Sameness groups are a Consul Enterprise feature. ",
        ),
        (
            vec![],
            l7(&json!({"Action": "allow", "HTTP": {"PathPrefix": "/"}})),
            r#"service "db" has protocol "tcp", which is incompatible with L7 intentions permissions"#,
        ),
        (
            vec![http_db()],
            l7(&json!({"Action": "allow", "HTTP": {}})),
            "Sources[0].Permissions[0].HTTP should not be empty",
        ),
        (
            vec![http_db()],
            l7(&json!({"Action": "allow"})),
            "Sources[0].Permissions[0].HTTP is required",
        ),
        (
            vec![http_db()],
            l7(&json!({"Action": "maybe", "HTTP": {"PathExact": "/"}})),
            "Sources[0].Permissions[0].Action must be set to 'allow' or 'deny'",
        ),
        (
            vec![http_db()],
            l7(&json!({"Action": "allow", "HTTP": {"PathExact": "/a", "PathPrefix": "/b"}})),
            "Sources[0].Permissions[0].HTTP should only contain at most one of PathExact, PathPrefix, or PathRegex",
        ),
        (
            vec![http_db()],
            l7(&json!({"Action": "allow", "HTTP": {"PathPrefix": "admin"}})),
            r#"Sources[0].Permissions[0].HTTP.PathPrefix doesn't start with '/': "admin""#,
        ),
        (
            vec![http_db()],
            l7(
                &json!({"Action": "allow", "HTTP": {"Header": [{"Name": "x", "Exact": "a", "Prefix": "b"}]}}),
            ),
            "Sources[0].Permissions[0].HTTP.Header[0] should only contain one of Present, Exact, Prefix, Suffix, Contains, or Regex",
        ),
        (
            vec![http_db()],
            l7(&json!({"Action": "allow", "HTTP": {"Header": [{"Exact": "a"}]}})),
            "Sources[0].Permissions[0].HTTP.Header[0] missing required Name field",
        ),
        (
            vec![http_db()],
            l7(&json!({"Action": "allow", "HTTP": {"Methods": ["FETCH"]}})),
            r#"Sources[0].Permissions[0].HTTP.Methods contains an invalid method "FETCH""#,
        ),
        (
            vec![http_db()],
            l7(&json!({"Action": "allow", "HTTP": {"Methods": ["get", "GET"]}})),
            r#"Sources[0].Permissions[0].HTTP.Methods contains "GET" more than once"#,
        ),
        (
            vec![],
            json!({"Kind": "service-defaults", "Name": "*"}),
            "service-defaults name must be the name of a service, and not a wildcard",
        ),
        (
            vec![],
            json!({"Kind": "service-defaults", "Name": "web", "BalanceInboundConnections": "rr"}),
            "1 error occurred:\n\t* invalid value for balance_inbound_connections: rr\n\n",
        ),
        (
            vec![],
            json!({"Kind": "service-defaults", "Name": "web", "MutualTLSMode": "loose"}),
            r#"Invalid MutualTLSMode "loose". Must be one of "", "strict", or "permissive"."#,
        ),
        (
            vec![],
            json!({"Kind": "service-defaults", "Name": "web", "Meta": many_meta}),
            "1 error occurred:\n\t* Meta exceeds maximum element count 64\n\n",
        ),
        (
            vec![],
            json!({"Kind": "proxy-defaults", "AccessLogs": {"Enabled": true, "Type": "stdin"}}),
            "invalid access log type: stdin",
        ),
        (
            vec![],
            json!({"Kind": "proxy-defaults", "FailoverPolicy": {"Mode": "bad"}}),
            "Failover-policy mode must be one of '', 'sequential', or 'order-by-locality'",
        ),
        (
            vec![],
            json!({"Kind": "service-splitter", "Name": "web", "Splits": [{"Weight": 90}]}),
            "the sum of all split weights must be 100, not 90.000000",
        ),
        (
            vec![],
            json!({"Kind": "service-splitter", "Name": "web"}),
            "no splits configured",
        ),
        (
            vec![],
            json!({"Kind": "service-splitter", "Name": "web", "Splits": [{"Weight": 50}, {"Weight": 50, "Service": "web"}]}),
            r#"split destination occurs more than once: service="web", subset="", namespace="", partition="""#,
        ),
        (
            vec![],
            json!({"Kind": "service-splitter", "Name": "web", "Splits": [{"Weight": 100}]}),
            r#"discovery chain "web" uses a protocol "tcp" that does not permit advanced routing or splitting behavior"#,
        ),
        (
            vec![],
            json!({"Kind": "service-router", "Name": "web"}),
            r#"discovery chain "web" uses a protocol "tcp" that does not permit advanced routing or splitting behavior"#,
        ),
        (
            vec![json!({"Kind": "service-defaults", "Name": "web", "Protocol": "http"})],
            json!({"Kind": "service-router", "Name": "web", "Routes": [{"Destination": {"Service": "api"}}]}),
            r#"discovery chain "web" uses inconsistent protocols; service "api" has "tcp" which is not "http""#,
        ),
        (
            vec![json!({"Kind": "service-defaults", "Name": "web", "Protocol": "http"})],
            json!({"Kind": "service-splitter", "Name": "web", "Splits": [{"Weight": 100, "ServiceSubset": "v9"}]}),
            r#"service "web" does not have a subset named "v9""#,
        ),
        (
            vec![json!({"Kind": "service-resolver", "Name": "a", "Redirect": {"Service": "b"}})],
            json!({"Kind": "service-resolver", "Name": "b", "Redirect": {"Service": "a"}}),
            "detected circular resolver redirect: [a.default.default.dc1 -> b.default.default.dc1 -> a.default.default.dc1]",
        ),
        (
            vec![],
            json!({"Kind": "service-router", "Name": "web", "Routes": [{"Destination": {"PrefixRewrite": "/x"}}]}),
            "Route[0] cannot make use of PrefixRewrite without configuring either PathExact or PathPrefix",
        ),
        (
            vec![],
            json!({"Kind": "service-router", "Name": "web", "Routes": [{"Destination": {"RetryOn": ["always"]}}]}),
            r#"Route[0] contains an invalid retry condition: "always""#,
        ),
        (
            vec![],
            json!({"Kind": "service-resolver", "Name": "db", "DefaultSubset": "v3"}),
            r#"DefaultSubset "v3" is not a valid subset"#,
        ),
        (
            vec![],
            json!({"Kind": "service-resolver", "Name": "db", "Subsets": {"V1": {}}}),
            "Subset \"V1\" is invalid: must be 63 characters or less and begin or end with lower case alphanumeric characters, and contain lower case alphanumeric characters or '-' in between",
        ),
        (
            vec![],
            json!({"Kind": "service-resolver", "Name": "db", "Subsets": {"v1": {"Filter": "Service.Meta.version =="}}}),
            r#"Filter for subset "v1" is not a valid expression: 1:24 (23): no match found, expected: "-", "0", "\"", "`", [ \t\r\n], [1-9] or [a-zA-Z]"#,
        ),
        (
            vec![],
            json!({"Kind": "service-resolver", "Name": "db", "Redirect": {"Namespace": "ns"}}),
            "Redirect: Setting Namespace requires Consul Enterprise",
        ),
        (
            vec![],
            json!({"Kind": "service-resolver", "Name": "db", "Redirect": {"Service": "x"}, "Failover": {"*": {"Service": "y"}}}),
            "Redirect and Failover cannot both be set",
        ),
        (
            vec![],
            json!({"Kind": "service-resolver", "Name": "db", "Failover": {"v1": {"Service": "y"}}}),
            r#"Bad Failover["v1"]: not a valid subset subset"#,
        ),
        (
            vec![],
            json!({"Kind": "service-resolver", "Name": "db", "LoadBalancer": {"Policy": "weird"}}),
            r#"Bad LoadBalancer policy: "weird" is not supported"#,
        ),
        (
            vec![],
            json!({"Kind": "service-resolver", "Name": "db", "PrioritizeByLocality": {"Mode": "failover"}}),
            "Prioritize-by-locality requires Consul Enterprise ",
        ),
    ];
    for (setup, body, want) in cases {
        assert_eq!(
            attempt(&setup, body.to_string().as_bytes()),
            (500, want.to_owned()),
            "{body}"
        );
    }
}

#[test]
fn l7_intentions_follow_the_destination_protocol() {
    let mut s = ConfigEntries::new();
    let put = |s: &mut ConfigEntries, v: &Value, i| {
        s.upsert(decode_entry(v.to_string().as_bytes()).unwrap(), None, i)
    };
    put(
        &mut s,
        &json!({"Kind": "proxy-defaults", "Config": {"protocol": "grpc"}}),
        1,
    )
    .unwrap();
    put(
        &mut s,
        &l7(&json!({"Action": "allow", "HTTP": {"PathPrefix": "/"}})),
        2,
    )
    .unwrap();
    // Turning db into tcp now breaks the existing L7 intention.
    assert_eq!(
        put(&mut s, &json!({"Kind": "service-defaults", "Name": "db", "Protocol": "tcp"}), 3),
        Err(ConfigError::Invalid(
            r#"service "db" has protocol "tcp", which is incompatible with L7 intentions permissions"#.into()
        ))
    );
    // So does dropping the protocol from proxy-defaults.
    assert_eq!(
        put(&mut s, &json!({"Kind": "proxy-defaults", "Config": {}}), 3).map_err(|e| status(&e)),
        Err(500)
    );
    assert_eq!(s.max_index(), 2, "rejected writes change nothing");
}

#[test]
fn split_weights_are_normalized_and_written_like_go() {
    let mut s = ConfigEntries::new();
    let body = json!({"Kind": "service-splitter", "Name": "web",
                      "Splits": [{"Weight": 33.3333}, {"Weight": 33.3334, "Service": "a"}, {"Weight": "33.34", "Service": "b"}]});
    s.upsert(
        decode_entry(
            json!({"Kind": "proxy-defaults", "Config": {"protocol": "http"}})
                .to_string()
                .as_bytes(),
        )
        .unwrap(),
        None,
        1,
    )
    .unwrap();
    s.upsert(decode_entry(body.to_string().as_bytes()).unwrap(), None, 2)
        .unwrap();
    let out =
        serde_json::to_string(&s.get(Kind::ServiceSplitter, "web").unwrap().to_json()).unwrap();
    assert!(out.contains(r#""Splits":[{"Weight":33.33},{"Weight":33.33,"Service":"a"},{"Weight":33.34,"Service":"b"}]"#), "{out}");
}

#[test]
fn not_found_text() {
    let e = ConfigError::NotFound {
        kind: "service-defaults".into(),
        name: "web".into(),
    };
    assert_eq!(
        e.to_string(),
        r#"Config entry not found for "service-defaults" / "web""#
    );
    assert_eq!(status(&e), 404);
}
