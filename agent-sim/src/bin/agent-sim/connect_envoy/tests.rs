//! Go-style flag parsing, Consul's environment defaults and precedence, and the small parsers.

use super::flags::{Env, parse};
use super::*;

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn single_and_double_dash_with_space_or_equals() {
    let f = parse(
        &args(&[
            "-bootstrap",
            "-proxy-id",
            "web-sidecar-proxy",
            "--grpc-addr=127.0.0.1:8502",
            "--token",
            "t1",
            "-admin-bind=127.0.0.1:19001",
        ]),
        &Env::default(),
    )
    .expect("parses");
    assert!(f.bootstrap);
    assert_eq!(f.proxy_id, "web-sidecar-proxy");
    assert_eq!(f.grpc_addr, "127.0.0.1:8502");
    assert_eq!(f.token, "t1");
    assert_eq!(f.admin_bind, "127.0.0.1:19001");
    assert!(f.envoy_args.is_empty());
}

#[test]
fn flags_end_at_double_dash_or_first_argument() {
    let f = parse(
        &args(&["-proxy-id", "p", "--", "--log-level", "debug"]),
        &Env::default(),
    )
    .expect("parses");
    assert_eq!(f.envoy_args, ["--log-level", "debug"]);
    let f = parse(
        &args(&["-bootstrap=false", "extra", "-token", "x"]),
        &Env::default(),
    )
    .expect("parses");
    assert!(!f.bootstrap);
    assert_eq!(f.envoy_args, ["extra", "-token", "x"]);
    assert_eq!(f.token, "");
}

#[test]
fn environment_gives_defaults_and_flags_win() {
    let env = Env {
        http_addr: Some("127.0.0.1:1".into()),
        token: Some("from-env".into()),
        token_file: Some("/env/file".into()),
        ..Env::default()
    };
    let f = parse(&args(&["-token", "from-flag"]), &env).expect("parses");
    assert_eq!(f.http_addr, "127.0.0.1:1");
    assert_eq!(f.token, "from-flag");
    assert_eq!(f.token_file, "/env/file");
    assert_eq!(f.admin_bind, "localhost:19000");
}

#[test]
fn bad_flags_are_errors() {
    let e = parse(&args(&["-nope"]), &Env::default()).expect_err("unknown");
    assert_eq!(e.to_string(), "flag provided but not defined: -nope");
    let e = parse(&args(&["-proxy-id"]), &Env::default()).expect_err("missing value");
    assert_eq!(e.to_string(), "flag needs an argument: -proxy-id");
    let e = parse(&args(&["-gateway", "mesh"]), &Env::default()).expect_err("unsupported");
    assert!(e.to_string().contains("-gateway is not supported"), "{e}");
    let e = parse(&args(&["-bootstrap=maybe"]), &Env::default()).expect_err("bad bool");
    assert!(e.to_string().contains("invalid boolean"), "{e}");
}

#[test]
fn token_file_wins_over_token_when_not_empty() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("token");
    std::fs::write(&file, "  from-file\n").expect("write");
    let mut f = parse(&args(&["-token", "from-flag"]), &Env::default()).expect("parses");
    f.token_file = file.display().to_string();
    assert_eq!(token(&f).expect("token"), "from-file");
    std::fs::write(&file, "\n").expect("write");
    assert_eq!(token(&f).expect("token"), "from-flag");
    f.token_file = dir.path().join("missing").display().to_string();
    let e = token(&f).expect_err("missing file");
    assert!(e.to_string().contains("Error loading token file"), "{e}");
}

#[test]
fn host_port_and_xds_port() {
    assert_eq!(
        split_host_port("127.0.0.1:8502"),
        Some(("127.0.0.1", "8502"))
    );
    assert_eq!(split_host_port("[::1]:19000"), Some(("::1", "19000")));
    assert_eq!(split_host_port("localhost"), None);
    assert_eq!(split_host_port("::1:80"), None);
    let self_ = serde_json::json!({"xDS": {"Port": 18502}});
    assert_eq!(xds_port(&self_), Some(18502));
    let self_ = serde_json::json!({"xDS": null, "DebugConfig": {"GRPCPort": 8503}});
    assert_eq!(xds_port(&self_), Some(8503));
    assert_eq!(xds_port(&serde_json::json!({"xDS": null})), None);
    assert_eq!(escape("web sidecar/1"), "web%20sidecar%2F1");
}

#[test]
fn the_bootstrap_file_has_no_name_left() {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let mut f = unlinked_bootstrap("{\"node\":{}}").unwrap();
    let meta = f.metadata().unwrap();
    assert_eq!(meta.nlink(), 0, "the bootstrap file still has a name");
    assert_eq!(meta.mode() & 0o777, 0o600);
    let mut text = String::new();
    f.read_to_string(&mut text).unwrap();
    assert_eq!(text, "{\"node\":{}}");
}
