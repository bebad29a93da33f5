//! Compile errors (500, with the server's `failed to compile discovery chain: ` wrapping) and
//! override decoding errors (400), as tables. Texts follow Consul's compile.go and endpoint.

use agent_sim::chain::{ChainError, ChainRequest, compile, decode_overrides};
use serde_json::{Value, json};

use crate::{TD, entries, protocol, request};

fn redirect(from: &str, to: &str) -> Value {
    json!({"Kind": "service-resolver", "Name": from, "Redirect": {"Service": to}})
}

fn compile_err(list: &[Value], req: &ChainRequest) -> ChainError {
    compile(&entries(list), req).unwrap_err()
}

#[test]
fn inconsistent_protocols() {
    let prefix =
        "failed to compile discovery chain: discovery chain \"main\" uses inconsistent protocols; ";
    let cases: Vec<(&str, Vec<Value>, &str)> = vec![
        (
            "redirect crosses protocols",
            vec![
                protocol("main", "grpc"),
                protocol("other", "tcp"),
                redirect("main", "other"),
            ],
            r#"service "other" has "tcp" which is not "grpc""#,
        ),
        (
            "failover crosses protocols",
            vec![
                protocol("main", "grpc"),
                protocol("other", "tcp"),
                json!({"Kind": "service-resolver", "Name": "main", "Failover": {"*": {"Service": "other"}}}),
            ],
            r#"service "other" has "tcp" which is not "grpc""#,
        ),
        (
            "split to another protocol",
            vec![
                protocol("main", "http"),
                protocol("other", "grpc"),
                json!({"Kind": "service-splitter", "Name": "main", "Splits": [
                    {"Weight": 50}, {"Weight": 50, "Service": "other"}]}),
            ],
            r#"service "other" has "grpc" which is not "http""#,
        ),
        (
            "route to another protocol",
            vec![
                protocol("main", "http"),
                protocol("admin", "http2"),
                json!({"Kind": "service-router", "Name": "main", "Routes": [
                    {"Match": {"HTTP": {"PathPrefix": "/admin"}}, "Destination": {"Service": "admin"}}]}),
            ],
            r#"service "admin" has "http2" which is not "http""#,
        ),
        (
            "proxy-defaults protocol against service-defaults",
            vec![
                json!({"Kind": "proxy-defaults", "Name": "global", "Config": {"protocol": "grpc"}}),
                protocol("main", "HTTP"),
                redirect("main", "other"),
            ],
            r#"service "other" has "grpc" which is not "http""#,
        ),
        (
            "default tcp against http",
            vec![protocol("main", "http"), redirect("main", "other")],
            r#"service "other" has "tcp" which is not "http""#,
        ),
    ];
    for (name, list, tail) in cases {
        let err = compile_err(&list, &request("main", TD));
        assert_eq!(
            err,
            ChainError::Internal(format!("{prefix}{tail}")),
            "{name}"
        );
        assert_eq!(err.status(), 500, "{name}");
    }
}

#[test]
fn protocols_compare_lowercased() {
    let list = [
        json!({"Kind": "proxy-defaults", "Name": "global", "Config": {"protocol": "HTTP"}}),
        protocol("main", "http"),
        redirect("main", "other"),
    ];
    let resp = compile(&entries(&list), &request("main", TD)).unwrap();
    assert_eq!(resp.chain.protocol, "http");
}

#[test]
fn graph_errors() {
    let prefix = "failed to compile discovery chain: ";
    let cases: Vec<(Vec<Value>, &str)> = vec![
        (
            vec![
                protocol("main", "tcp"),
                json!({"Kind": "service-splitter", "Name": "main", "Splits": [{"Weight": 100}]}),
            ],
            r#"discovery chain "main" uses a protocol "tcp" that does not permit advanced routing or splitting behavior"#,
        ),
        (
            vec![json!({"Kind": "service-router", "Name": "main", "Routes": []})],
            r#"discovery chain "main" uses a protocol "tcp" that does not permit advanced routing or splitting behavior"#,
        ),
        (
            vec![redirect("main", "other"), redirect("other", "main")],
            "detected circular resolver redirect: [main.default.default.dc1 -> other.default.default.dc1 -> main.default.default.dc1]",
        ),
        (
            vec![
                json!({"Kind": "proxy-defaults", "Name": "global", "Config": {"protocol": "http"}}),
                json!({"Kind": "service-splitter", "Name": "main", "Splits": [{"Weight": 100, "Service": "other"}]}),
                json!({"Kind": "service-splitter", "Name": "other", "Splits": [{"Weight": 100, "Service": "main"}]}),
            ],
            "detected circular reference: [splitter:main.default.default -> splitter:other.default.default -> splitter:main.default.default]",
        ),
        (
            vec![
                json!({"Kind": "service-resolver", "Name": "other", "ConnectTimeout": "33s"}),
                json!({"Kind": "service-resolver", "Name": "main",
                       "Redirect": {"Service": "other", "ServiceSubset": "v1"}}),
            ],
            r#"service "other" does not have a subset named "v1""#,
        ),
        (
            vec![
                json!({"Kind": "service-defaults", "Name": "main", "ExternalSNI": "main.example.mesh"}),
                json!({"Kind": "service-resolver", "Name": "main", "Failover": {"*": {"Service": "backup"}}}),
            ],
            r#"service "main" has an external SNI set; cannot define failover for external services"#,
        ),
        (
            vec![
                json!({"Kind": "service-defaults", "Name": "main", "ExternalSNI": "main.example.mesh"}),
                json!({"Kind": "service-resolver", "Name": "main", "Redirect": {"Datacenter": "dc2"}}),
            ],
            r#"service "main" has an external SNI set; cannot define redirects for external services"#,
        ),
    ];
    for (list, tail) in cases {
        let err = compile_err(&list, &request("main", TD));
        assert_eq!(err, ChainError::Internal(format!("{prefix}{tail}")));
    }
}

#[test]
fn non_l7_override_skips_routing_instead_of_failing() {
    let list = [
        protocol("main", "grpc"),
        json!({"Kind": "service-router", "Name": "main"}),
    ];
    let mut req = request("main", TD);
    req.override_protocol = Some("tcp".to_owned());
    let chain = compile(&entries(&list), &req).unwrap().chain;
    assert_eq!(chain.protocol, "tcp");
    assert!(chain.default);
    assert_eq!(chain.start_node, "resolver:main.default.default.dc1");
    assert_eq!(chain.customization_hash.len(), 8);
}

#[test]
fn request_errors() {
    let err = compile(&entries(&[]), &request("", TD)).unwrap_err();
    assert_eq!(err, ChainError::BadRequest("Missing chain name".to_owned()));
    assert_eq!(err.status(), 400);
    let bad_entry = [json!({"Kind": "service-resolver", "Name": "main", "ConnectTimeout": "soon"})];
    assert_eq!(compile_err(&bad_entry, &request("main", TD)).status(), 500);
}

#[test]
fn override_decoding_errors() {
    let cases: &[(&str, &str)] = &[
        ("", "Request decoding failed: EOF"),
        (
            "{\"OverrideProtocol\":",
            "Request decoding failed: unexpected EOF",
        ),
        (
            "true",
            "Request decoding failed: json: cannot unmarshal bool into Go value of type map[string]interface {}",
        ),
        (
            r#"{"override_connect_timeout":"5 seconds"}"#,
            "Request decoding failed: 1 error(s) decoding:\n\n* error decoding 'OverrideConnectTimeout': time: unknown unit \" seconds\" in duration \"5 seconds\"",
        ),
        (
            r#"{"OverrideMeshGateway":{"Mode":"gateway"}}"#,
            "Invalid OverrideMeshGateway.Mode parameter",
        ),
    ];
    for (body, want) in cases {
        let err = decode_overrides(body.as_bytes()).unwrap_err();
        assert_eq!(err, ChainError::BadRequest((*want).to_owned()), "{body:?}");
    }
}
