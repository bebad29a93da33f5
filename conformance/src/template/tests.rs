//! Tests of template splitting and substitution.

use super::*;

fn vars() -> Vars {
    [
        ("proxy_id", "db-sidecar-proxy"),
        ("service", "db"),
        ("agent_addr", "127.0.0.1:8500"),
        ("token", "s3cr3t"),
        ("token_file", "/tmp/my dir/token"),
        ("exe", "/opt/conformance bin/conformance"),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_owned()))
    .collect()
}

#[test]
fn splits_like_a_shell() {
    let cases: &[(&str, &[&str])] = &[
        ("a b  c", &["a", "b", "c"]),
        ("  a\tb\n", &["a", "b"]),
        (r#"a 'b c' "d e""#, &["a", "b c", "d e"]),
        (r#"a"b"'c'd"#, &["abcd"]),
        (r#""say \"hi\" \$x \n""#, &[r#"say "hi" $x \n"#]),
        (r"a\ b c", &["a b", "c"]),
        ("''", &[""]),
        ("x '' y", &["x", "", "y"]),
        ("", &[]),
    ];
    for (input, want) in cases {
        assert_eq!(split(input).unwrap(), *want, "input {input:?}");
    }
}

#[test]
fn split_errors() {
    assert_eq!(split("a 'b").unwrap_err(), "unterminated single quote");
    assert_eq!(split("a \"b").unwrap_err(), "unterminated double quote");
    assert_eq!(split("a \\").unwrap_err(), "trailing backslash");
}

#[test]
fn substitutes_each_word_without_resplitting() {
    let argv = render(
        "{exe} reference-proxy -proxy-id {proxy_id} -token-file {token_file} -http-addr=http://{agent_addr}",
        &vars(),
    )
    .unwrap();
    assert_eq!(
        argv,
        [
            "/opt/conformance bin/conformance",
            "reference-proxy",
            "-proxy-id",
            "db-sidecar-proxy",
            "-token-file",
            "/tmp/my dir/token",
            "-http-addr=http://127.0.0.1:8500",
        ]
    );
}

#[test]
fn literal_braces_and_quoted_placeholders() {
    let argv = render(r#"p --json '{{"a":1}}' "--svc={service}""#, &vars()).unwrap();
    assert_eq!(argv, ["p", "--json", r#"{"a":1}"#, "--svc=db"]);
}

#[test]
fn template_errors_name_the_problem() {
    let err = render("p {nope}", &vars()).unwrap_err();
    assert_eq!(err.kind(), "template_invalid");
    assert!(
        err.to_string().contains("unknown placeholder {nope}"),
        "{err}"
    );
    assert!(err.to_string().contains("{proxy_id}"), "{err}");
    let err = render("p {proxy_id", &vars()).unwrap_err();
    assert!(err.to_string().contains("unclosed placeholder"), "{err}");
    let err = render("p }", &vars()).unwrap_err();
    assert!(err.to_string().contains("stray '}'"), "{err}");
    let err = render("   ", &vars()).unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
    assert!(check("my-proxy -proxy-id {proxy_id}").is_ok());
    assert!(check("my-proxy {agent}").is_err());
}

#[test]
fn xds_placeholders_render() {
    let mut v = vars();
    v.insert("grpc_addr", "127.0.0.1:8502".into());
    v.insert("bootstrap", "/tmp/s 1/bootstrap.json".into());
    v.insert("admin_port", "19000".into());
    let argv = render(
        "envoy -c {bootstrap} --admin {{port}}={admin_port} --xds {grpc_addr}",
        &v,
    )
    .unwrap();
    assert_eq!(
        argv,
        [
            "envoy",
            "-c",
            "/tmp/s 1/bootstrap.json",
            "--admin",
            "{port}=19000",
            "--xds",
            "127.0.0.1:8502"
        ]
    );
}

#[test]
fn xds_placeholders_are_found() {
    assert_eq!(
        xds_placeholders_used("envoy -c {bootstrap} -x a{admin_port}b {proxy_id} {bootstrap}")
            .unwrap(),
        ["bootstrap", "admin_port"]
    );
    assert!(
        xds_placeholders_used("p -proxy-id {proxy_id} '{{bootstrap}}'")
            .unwrap()
            .is_empty()
    );
    assert!(xds_placeholders_used("p {nope}").is_err());
}
