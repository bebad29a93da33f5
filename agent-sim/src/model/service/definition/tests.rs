//! Tests for the register body decoder.

use super::*;

fn decode(body: &str) -> Result<ServiceDefinition, RegisterError> {
    decode_register(body.as_bytes())
}

#[test]
fn accepts_any_case_and_snake_case_keys() {
    let def = decode(
        r#"{"name":"web","PORT":8080,"id":"web-1","enable_tag_override":true,
            "tagged_addresses":{"lan":{"address":"10.0.0.1","port":80}},
            "meta":{"Some_Key":"v"},"weights":{"passing":3,"WARNING":2},
            "check":{"ttl":"30s","check_id":"c1","deregister_critical_service_after":"1m"},
            "connect":{"sidecar_service":{"proxy":{"destination_service_name":"x",
              "local_service_port":9,"mesh_gateway":{"mode":"local"},
              "transparent_proxy":{"outbound_listener_port":15001,"dialed_directly":true},
              "upstreams":[{"destination_name":"db","local_bind_port":9191,"CONFIG":{"Keep_Me":1}}]}}}}"#,
    )
    .unwrap();
    assert_eq!(
        (def.name.as_str(), def.id.as_str(), def.port),
        ("web", "web-1", 8080)
    );
    assert!(def.enable_tag_override);
    assert_eq!(
        def.tagged_addresses["lan"],
        ServiceAddress {
            address: "10.0.0.1".into(),
            port: 80
        }
    );
    assert_eq!(
        def.meta.get("Some_Key").map(String::as_str),
        Some("v"),
        "meta keys kept verbatim"
    );
    assert_eq!(
        def.weights,
        Some(Weights {
            passing: 3,
            warning: 2
        })
    );
    let check = def.check.as_ref().unwrap();
    assert_eq!(check.ttl, crate::go::duration::GoDuration(30_000_000_000));
    assert_eq!(check.check_id, "c1");
    assert_eq!(check.deregister_critical_service_after.0, 60_000_000_000);
    let sc = def.sidecar_service().unwrap();
    let proxy = sc.proxy.as_ref().unwrap();
    assert_eq!(proxy.destination_service_name, "x");
    assert_eq!(proxy.local_service_port, 9);
    assert_eq!(proxy.mesh_gateway.mode, "local");
    assert_eq!(proxy.transparent_proxy.outbound_listener_port, 15001);
    assert!(proxy.transparent_proxy.dialed_directly);
    assert_eq!(proxy.upstreams[0].destination_name, "db");
    assert!(
        proxy.upstreams[0].config.contains_key("Keep_Me"),
        "opaque config keys kept"
    );
}

#[test]
fn absent_and_null_fields_are_zero() {
    let def =
        decode(r#"{"Name":"web","Tags":null,"Port":null,"Check":null,"Weights":null}"#).unwrap();
    assert_eq!(def.id, "", "ID is defaulted at expansion, not decode");
    assert!(def.tags.is_empty() && def.port == 0 && def.check.is_none() && def.weights.is_none());
    let empty_check = decode(r#"{"Name":"web","Check":{}}"#).unwrap();
    assert!(
        empty_check.check.is_none(),
        "an all-zero Check is skipped, as Consul does"
    );
    let partial = decode(r#"{"Name":"web","Weights":{"Warning":0}}"#).unwrap();
    assert_eq!(
        partial.weights,
        Some(Weights {
            passing: 0,
            warning: 0
        }),
        "Go zero-fills"
    );
}

#[test]
fn connect_object_is_lenient_like_consul() {
    let def = decode(r#"{"Name":"web","Connect":{"Native":true,"Bogus":1}}"#).unwrap();
    assert!(def.connect.unwrap().native);
}

#[test]
fn bad_bodies_get_consuls_texts() {
    let cases = [
        ("", "Request decode failed: EOF"),
        ("   ", "Request decode failed: EOF"),
        ("{", "Request decode failed: unexpected EOF"),
        (
            r#"{"Name":"web","Foo":1}"#,
            r#"Request decode failed: json: unknown field "Foo""#,
        ),
        (
            r#"{"Name":"web","Namespace":"ns1"}"#,
            r#"Request decode failed: json: unknown field "Namespace""#,
        ),
        (
            r#"{"Name":"web","Proxy":{"Upstreams":[{"DestinationName":"db","Bogus":1}]}}"#,
            r#"Request decode failed: json: unknown field "Bogus""#,
        ),
        (
            r#"{"Name":"web","Check":{"TTL":"soon"}}"#,
            r#"Request decode failed: time: invalid duration "soon""#,
        ),
        (
            r#"{"Name":"web","Checks":[{"Interval":"1x","TCP":"a:1"}]}"#,
            r#"Request decode failed: time: invalid duration "1x""#,
        ),
        ("null", "Missing service name"),
        ("{}", "Missing service name"),
        (r#"{"ID":"web"}"#, "Missing service name"),
        (
            r#"{"Name":"web","Address":"0.0.0.0"}"#,
            "Invalid service address",
        ),
        (
            r#"{"Name":"web","Address":"::"}"#,
            "Invalid service address",
        ),
        (
            r#"{"Name":"web","Address":"[::]"}"#,
            "Invalid service address",
        ),
    ];
    for (body, want) in cases {
        assert_eq!(
            decode(body),
            Err(RegisterError::BadRequest(want.into())),
            "body {body:?}"
        );
    }
    let wrong_type = decode(r#"{"Name":"web","Port":"80"}"#).unwrap_err();
    assert!(
        wrong_type
            .to_string()
            .starts_with("Request decode failed: json: cannot unmarshal string"),
        "{wrong_type}"
    );
}
