//! HTTP/2 and gRPC: `open` with `protocol = "http2"`/`"grpc"`, `http` checks with `streams`,
//! `grpc` checks, and instance protocols.

use super::{bad, expect_step, good};

const WEB: &str = "{ kind = \"service\", service = \"web\" }";

fn open(conn: &str, protocol: &str) -> String {
    format!(
        "\n[[steps]]\ndo = \"open\"\nconn = \"{conn}\"\nidentity = {WEB}\nprotocol = \"{protocol}\"\n"
    )
}

#[test]
fn grpc_checks_name_exactly_one_target_and_a_method_path() {
    let ok =
        format!("{{ kind = \"grpc\", identity = {WEB}, path = \"/pkg.Svc/Method\", code = 7 }}");
    good(&expect_step(&ok));
    let (f, m) = bad(&expect_step("{ kind = \"grpc\", path = \"/pkg.Svc/M\" }"));
    assert_eq!(f, "steps[0].check");
    assert!(m.contains("exactly one of `identity`"), "{m}");
    let (f, m) = bad(&expect_step(&format!(
        "{{ kind = \"grpc\", identity = {WEB}, path = \"/pkg.Svc\" }}"
    )));
    assert_eq!(f, "steps[0].check.path");
    assert!(m.contains("not a gRPC method path"), "{m}");
    let (f, _) = bad(&expect_step(&format!(
        "{{ kind = \"grpc\", identity = {WEB}, path = \"/a/b\", code = 17 }}"
    )));
    assert_eq!(f, "steps[0].check.code");
    let (f, m) = bad(&expect_step(&format!(
        "{{ kind = \"grpc\", identity = {WEB}, path = \"/a/b\", metadata = {{ X-Upper = \"v\" }} }}"
    )));
    assert_eq!(f, "steps[0].check.metadata.X-Upper");
    assert!(m.contains("metadata name"), "{m}");
    let (f, _) = bad(&expect_step(&format!(
        "{{ kind = \"grpc\", identity = {WEB}, path = \"/a/b\", typo = 1 }}"
    )));
    assert!(f.starts_with("steps[0].check"), "{f}");
    let (f, m) = bad(&expect_step(
        "{ kind = \"grpc\", upstream = \"nope\", path = \"/a/b\" }",
    ));
    assert_eq!(f, "steps[0].check.upstream");
    assert!(m.contains("nope"), "{m}");
}

#[test]
fn streams_need_an_http2_connection() {
    let mut body = open("mux", "http2");
    body.push_str(&expect_step(
        "{ kind = \"http\", conn = \"mux\", path = \"/\", status = 200, streams = 8 }",
    ));
    body.push_str(&expect_step(
        "{ kind = \"grpc\", conn = \"mux\", path = \"/a/b\", streams = 4 }",
    ));
    good(&body);

    let mut body = open("ka", "http");
    body.push_str(&expect_step(
        "{ kind = \"http\", conn = \"ka\", path = \"/\", status = 200, streams = 2 }",
    ));
    let (f, m) = bad(&body);
    assert_eq!(f, "steps[1].check.streams");
    assert!(m.contains("HTTP/1.1"), "{m}");

    let mut body = open("ka", "http");
    body.push_str(&expect_step(
        "{ kind = \"grpc\", conn = \"ka\", path = \"/a/b\" }",
    ));
    let (f, m) = bad(&body);
    assert_eq!(f, "steps[1].check.conn");
    assert!(m.contains("needs \"grpc\" or \"http2\""), "{m}");

    let (f, _) = bad(&expect_step(&format!(
        "{{ kind = \"http\", identity = {WEB}, path = \"/\", status = 200, streams = 2 }}"
    )));
    assert_eq!(f, "steps[0].check.streams");
    let mut body = open("mux", "grpc");
    body.push_str(&expect_step(
        "{ kind = \"http\", conn = \"mux\", path = \"/\", status = 200, streams = 0 }",
    ));
    let (f, m) = bad(&body);
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("steps[1].check.streams", "must be 1 to 100")
    );

    let (f, _) = bad(&open("x", "http3"));
    assert!(f.starts_with("steps[0]"), "{f}");
}

#[test]
fn instance_protocols() {
    good("[[setup.instances]]\nid = \"c1\"\nservice = \"cache\"\nprotocol = \"grpc\"\n");
    let (f, m) =
        bad("[[setup.instances]]\nid = \"c1\"\nservice = \"cache\"\nprotocol = \"http3\"\n");
    assert_eq!(f, "setup.instances[0].protocol");
    assert!(m.contains("http2"), "{m}");
}
