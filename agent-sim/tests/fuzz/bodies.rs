//! Request bodies for every endpoint that reads one: invalid JSON, deep nesting, invalid UTF-8,
//! oversized bodies, and valid templates (service registration, checks, catalog, config entries,
//! intentions, CA configuration, authorize, discovery chain) with one field given a random
//! value of the wrong type.

use axum::http::Method;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Value, json};

use super::support::Req;

/// (method, URI, a valid body) for every endpoint that decodes a body.
pub(crate) fn templates() -> Vec<(Method, &'static str, Value)> {
    vec![
        (
            Method::PUT,
            "/v1/agent/service/register",
            json!({
                "ID": "api-1", "Name": "api", "Tags": ["v1"], "Port": 9090, "Address": "127.0.0.1",
                "Meta": {"env": "fuzz"}, "EnableTagOverride": false,
                "Weights": {"Passing": 1, "Warning": 1},
                "Check": {"TTL": "30s", "DeregisterCriticalServiceAfter": "90m"},
                "Connect": {"SidecarService": {"Port": 21000, "Proxy": {
                    "Upstreams": [{"DestinationName": "db", "LocalBindPort": 9191,
                        "Config": {"protocol": "http"}}],
                    "Config": {"bind_address": "0.0.0.0"},
                    "Expose": {"Checks": true, "Paths": [{"Path": "/h", "LocalPathPort": 8080, "ListenerPort": 21500}]},
                    "TransparentProxy": {"OutboundListenerPort": 15001},
                    "Mode": "transparent"}}},
            }),
        ),
        (
            Method::PUT,
            "/v1/agent/service/register",
            json!({"Kind": "connect-proxy", "Name": "p", "Port": 20000,
                "Proxy": {"DestinationServiceName": "db", "LocalServicePort": 5432,
                    "Upstreams": [{"DestinationName": "web", "LocalBindPort": 1234}]}}),
        ),
        (
            Method::PUT,
            "/v1/agent/check/register",
            json!({"Name": "c", "ID": "c1", "ServiceID": "web", "TTL": "10s", "Notes": "n",
                "Status": "passing", "Interval": "10s", "HTTP": "http://127.0.0.1/h",
                "Header": {"X": ["y"]}, "Timeout": "1s"}),
        ),
        (
            Method::PUT,
            "/v1/agent/check/update/service:web",
            json!({"Status": "warning", "Output": "o"}),
        ),
        (
            Method::POST,
            "/v1/agent/connect/authorize",
            json!({"Target": "db", "ClientCertURI":
                "spiffe://11111111-2222-3333-4444-555555555555.consul/ns/default/dc/dc1/svc/web",
                "ClientCertSerial": "01"}),
        ),
        (
            Method::PUT,
            "/v1/catalog/register",
            json!({"Node": "n2", "Address": "10.0.0.2", "Datacenter": "dc1",
                "TaggedAddresses": {"lan": "10.0.0.2"}, "NodeMeta": {"k": "v"},
                "Service": {"ID": "db2", "Service": "db", "Port": 5433, "Tags": []},
                "Checks": [{"CheckID": "c", "Name": "c", "Status": "passing", "ServiceID": "db2"}]}),
        ),
        (
            Method::PUT,
            "/v1/catalog/deregister",
            json!({"Node": "n2", "ServiceID": "db2"}),
        ),
        (
            Method::PUT,
            "/v1/config",
            json!({"Kind": "service-defaults", "Name": "api", "Protocol": "http",
                "MaxInboundConnections": 10, "UpstreamConfig": {"Defaults": {"ConnectTimeoutMs": 500}},
                "MutualTLSMode": "strict", "Meta": {"a": "b"}}),
        ),
        (
            Method::PUT,
            "/v1/config",
            json!({"Kind": "service-router", "Name": "db", "Routes": [{"Match": {"HTTP":
                {"PathPrefix": "/x", "Header": [{"Name": "h", "Exact": "v"}]}},
                "Destination": {"Service": "db", "PrefixRewrite": "/", "RequestTimeout": "5s"}}]}),
        ),
        (
            Method::PUT,
            "/v1/config",
            json!({"Kind": "service-resolver", "Name": "db", "DefaultSubset": "v1",
                "Subsets": {"v1": {"Filter": "Service.Meta.version == v1"}},
                "Failover": {"*": {"Targets": [{"Service": "web"}]}}, "ConnectTimeout": "3s"}),
        ),
        (
            Method::PUT,
            "/v1/config",
            json!({"Kind": "service-intentions", "Name": "db", "Sources": [
                {"Name": "web", "Action": "allow"},
                {"Name": "*", "Permissions": [{"Action": "deny", "HTTP": {"PathPrefix": "/admin",
                    "Methods": ["GET"], "Header": [{"Name": "x", "Present": true}]}}]}]}),
        ),
        (
            Method::PUT,
            "/v1/config",
            json!({"Kind": "proxy-defaults", "Name": "global", "Config": {"protocol": "tcp"},
                "Mode": "direct", "TransparentProxy": {"OutboundListenerPort": 15001}}),
        ),
        (
            Method::PUT,
            "/v1/connect/intentions/exact?source=api&destination=db",
            json!({"Action": "deny", "Description": "d", "Meta": {"k": "v"}}),
        ),
        (
            Method::POST,
            "/v1/connect/intentions",
            json!({"SourceName": "api", "DestinationName": "web", "Action": "allow", "SourceType": "consul"}),
        ),
        (
            Method::PUT,
            "/v1/connect/ca/configuration",
            json!({"Provider": "consul", "Config": {"LeafCertTTL": "72h", "PrivateKeyType": "ec",
                "PrivateKeyBits": 256, "RotationPeriod": "2160h", "IntermediateCertTTL": "8760h"},
                "ForceWithoutCrossSigning": false}),
        ),
        (
            Method::POST,
            "/v1/discovery-chain/db",
            json!({"OverrideConnectTimeout": "1s", "OverrideProtocol": "http",
                "OverrideMeshGateway": {"Mode": "local"}}),
        ),
    ]
}

/// Any JSON value, with numbers at the edges of Go's and serde's ranges.
pub(crate) fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<String>().prop_map(Value::String),
        select(vec![
            "30s",
            "-1s",
            "999999999h",
            "tcp",
            "http",
            "allow",
            "deny",
            "consul",
            "rsa"
        ])
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[A-Za-z]{1,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Replaces the value at the `pick`-th position of a depth-first walk of `v` with `with`.
fn replace_nth(v: &mut Value, pick: &mut usize, with: &Value) -> bool {
    if *pick == 0 {
        *v = with.clone();
        return true;
    }
    *pick -= 1;
    match v {
        Value::Object(m) => m.values_mut().any(|c| replace_nth(c, pick, with)),
        Value::Array(a) => a.iter_mut().any(|c| replace_nth(c, pick, with)),
        _ => false,
    }
}

/// A body that is not what the endpoint wants.
pub(crate) fn bad_body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => prop::collection::vec(any::<u8>(), 0..256),
        1 => (1usize..100_000).prop_map(|n| "[".repeat(n).into_bytes()),
        1 => (1usize..50_000).prop_map(|n| "{\"a\":".repeat(n).into_bytes()),
        1 => (1usize..200).prop_map(|n| format!("{}1{}", "[".repeat(n), "]".repeat(n)).into_bytes()),
        1 => Just(b"{\"Name\":\"\xff\xfe\",\"Port\":1}".to_vec()),
        1 => Just(b"{\"Name\":\"\\ud800\",\"Port\":1}".to_vec()),
        1 => Just(b"{\"Name\":\"x\"} trailing".to_vec()),
        1 => Just(b"{\"Name\":\"x\",\"Name\":\"y\"}".to_vec()),
        1 => Just(b"null".to_vec()),
        1 => json_value().prop_map(|v| v.to_string().into_bytes()),
    ]
}

/// A request to a body-reading endpoint: a template with one value replaced, or a bad body.
pub(crate) fn body_request() -> impl Strategy<Value = Req> {
    let n = templates().len();
    (
        0..n,
        any::<usize>(),
        json_value(),
        prop::option::weighted(0.3, bad_body()),
    )
        .prop_map(move |(i, pick, with, bad)| {
            let (method, uri, mut body) = templates().swap_remove(i);
            let bytes = match bad {
                Some(b) => b,
                None => {
                    let size = count(&body);
                    let mut at = pick % size;
                    replace_nth(&mut body, &mut at, &with);
                    body.to_string().into_bytes()
                }
            };
            Req::new(method, uri).body(bytes)
        })
}

fn count(v: &Value) -> usize {
    1 + match v {
        Value::Object(m) => m.values().map(count).sum(),
        Value::Array(a) => a.iter().map(count).sum(),
        _ => 0,
    }
}
