//! CLI tests: Go-style flags, precedence, sidecar lookup texts.

use super::*;
use crate::agent::types::AgentProxy;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    let argv = std::iter::once("proxy-under-test")
        .chain(args.iter().copied())
        .map(OsString::from);
    Cli::try_parse_from(normalize_args(argv))
}

#[test]
fn go_style_single_dash_flags_work() {
    let a = parse(&[
        "-proxy-id",
        "db-sidecar-proxy",
        "-http-addr=127.0.0.1:9",
        "-log-json",
    ])
    .unwrap();
    assert_eq!(a.proxy_id.as_deref(), Some("db-sidecar-proxy"));
    assert_eq!(a.http_addr.as_deref(), Some("127.0.0.1:9"));
    assert!(a.log_json);
    let c = parse(&["--proxy-id=x", "-log-json=false"]).unwrap();
    assert!(!c.log_json);
    assert!(parse(&["-bogus"]).is_err(), "unknown flags are errors");
    assert!(parse(&["-proxy-id"]).is_err(), "missing value is an error");
}

#[test]
fn single_and_double_dash_are_alike_and_an_unknown_flag_is_named_whole() {
    for bogus in ["-bogus", "--bogus", "-bogus=1"] {
        let e = parse(&[bogus]).unwrap_err().to_string();
        assert!(e.contains("'--bogus"), "{bogus}: {e}");
        assert!(!e.contains("'-b'"), "{bogus}: {e}");
    }
    let help = parse(&["-help"]).unwrap_err();
    assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
    assert_eq!(
        parse(&["-h"]).unwrap_err().kind(),
        clap::error::ErrorKind::DisplayHelp
    );
    assert!(parse(&["--proxy-id", "p", "-log-level", "debug"]).is_ok());
}

#[test]
fn token_and_address_precedence() {
    let dir = std::env::temp_dir().join(format!("put-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let flag_file = dir.join("flag");
    let env_file = dir.join("env");
    std::fs::write(&flag_file, " from-flag-file\n").unwrap();
    std::fs::write(&env_file, "from-env-file\n").unwrap();
    let env = Env::from_lookup(|k| match k {
        "CONSUL_HTTP_ADDR" => Some("10.0.0.1:8500".into()),
        "CONSUL_HTTP_TOKEN" => Some("from-env".into()),
        "CONSUL_HTTP_TOKEN_FILE" => Some(env_file.to_string_lossy().into_owned()),
        _ => None,
    });
    let flag_file = flag_file.to_string_lossy().into_owned();
    let s = |args: &[&str], env: &Env| parse(args).unwrap().settings(env).unwrap();
    assert_eq!(
        s(
            &["-proxy-id", "p", "-token-file", &flag_file, "-token", "t"],
            &env
        )
        .token
        .as_deref(),
        Some("from-flag-file")
    );
    assert_eq!(
        s(&["-proxy-id", "p", "-token", "t"], &env).token.as_deref(),
        Some("t")
    );
    assert_eq!(
        s(&["-proxy-id", "p"], &env).token.as_deref(),
        Some("from-env-file")
    );
    let only_token = Env {
        token_file: None,
        ..env.clone()
    };
    assert_eq!(
        s(&["-proxy-id", "p"], &only_token).token.as_deref(),
        Some("from-env")
    );
    assert_eq!(s(&["-proxy-id", "p"], &env).http_addr, "10.0.0.1:8500");
    assert_eq!(
        s(&["-proxy-id", "p", "-http-addr", "127.0.0.1:1"], &env).http_addr,
        "127.0.0.1:1"
    );
    assert_eq!(
        s(&["-proxy-id", "p"], &Env::default()).http_addr,
        "127.0.0.1:8500"
    );
    let err = parse(&["-proxy-id", "p", "-token-file", "/nonexistent/x"])
        .unwrap()
        .settings(&Env::default())
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("Error reading token file \"/nonexistent/x\""),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn target_must_be_exactly_one() {
    let none = parse(&[]).unwrap().settings(&Env::default()).unwrap_err();
    assert_eq!(
        none.to_string(),
        "One of -proxy-id or -sidecar-for must be specified"
    );
    let both = parse(&["-proxy-id", "a", "-sidecar-for", "b"])
        .unwrap()
        .settings(&Env::default());
    assert!(both.is_err());
    let env = Env {
        sidecar_for: Some("db".into()),
        ..Env::default()
    };
    assert_eq!(
        parse(&[]).unwrap().settings(&env).unwrap().target,
        Target::SidecarFor("db".into())
    );
}

fn svc(id: &str, kind: &str, dest_id: &str) -> AgentService {
    AgentService {
        id: id.into(),
        kind: kind.into(),
        proxy: (kind == "connect-proxy").then(|| AgentProxy {
            destination_service_id: dest_id.into(),
            ..AgentProxy::default()
        }),
        ..AgentService::default()
    }
}

#[test]
fn sidecar_lookup_texts() {
    let mut m = BTreeMap::new();
    m.insert("db".to_owned(), svc("db", "", ""));
    m.insert(
        "db-sidecar-proxy".to_owned(),
        svc("db-sidecar-proxy", "connect-proxy", "DB"),
    );
    m.insert(
        "web-sidecar-proxy".to_owned(),
        svc("web-sidecar-proxy", "connect-proxy", "web"),
    );
    assert_eq!(
        pick_sidecar(&m, "db").unwrap(),
        "db-sidecar-proxy",
        "case-insensitive"
    );
    assert_eq!(
        pick_sidecar(&m, "cache").unwrap_err().to_string(),
        "No sidecar proxy registered for cache"
    );
    m.insert("web-2".to_owned(), svc("web-2", "connect-proxy", "web"));
    assert_eq!(
        pick_sidecar(&m, "web").unwrap_err().to_string(),
        "More than one sidecar proxy registered for web.\n    Start proxy with -proxy-id and one of the following IDs: web-2, web-sidecar-proxy"
    );
}

#[test]
fn agent_tls_from_flags_over_env() {
    let env = Env::from_lookup(|k| match k {
        "CONSUL_HTTP_ADDR" => Some("127.0.0.1:8501".into()),
        "CONSUL_HTTP_SSL" => Some("true".into()),
        "CONSUL_CACERT" => Some("/env/ca.pem".into()),
        "CONSUL_CLIENT_CERT" => Some("/env/cert.pem".into()),
        "CONSUL_CLIENT_KEY" => Some("/env/key.pem".into()),
        "CONSUL_TLS_SERVER_NAME" => Some("server.dc1.consul".into()),
        _ => None,
    });
    let s = parse(&["-proxy-id", "p", "-ca-file", "/flag/ca.pem"])
        .unwrap()
        .settings(&env)
        .unwrap();
    assert_eq!(s.http_addr, "https://127.0.0.1:8501");
    assert_eq!(s.tls.ca_file.unwrap().to_str(), Some("/flag/ca.pem"));
    assert_eq!(s.tls.client_cert.unwrap().to_str(), Some("/env/cert.pem"));
    assert_eq!(s.tls.client_key.unwrap().to_str(), Some("/env/key.pem"));
    assert_eq!(s.tls.server_name.as_deref(), Some("server.dc1.consul"));
    assert!(!s.tls.skip_verify);
    let insecure = Env {
        http_ssl_verify: Some("false".into()),
        ..env.clone()
    };
    let s = parse(&["-proxy-id", "p"])
        .unwrap()
        .settings(&insecure)
        .unwrap();
    assert!(s.tls.skip_verify);
    let bad = Env {
        http_ssl: Some("yes".into()),
        ..env
    };
    let err = parse(&["-proxy-id", "p"])
        .unwrap()
        .settings(&bad)
        .unwrap_err();
    assert!(err.to_string().contains("CONSUL_HTTP_SSL"), "{err}");
}
