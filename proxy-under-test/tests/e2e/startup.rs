//! Start-up like `consul connect proxy`: listeners from the registration, `-sidecar-for`
//! resolution and `-token-file` through the CLI module, and clear errors for a missing
//! registration, a wrong kind and ports in use.

use std::ffi::OsString;
use std::net::SocketAddr;

use proxy_under_test::cli::{self, Cli, Env, Settings, Target};
use proxy_under_test::{AgentClient, Proxy, ProxyError};
use serde_json::json;

use super::support::*;

/// Parses Go-style arguments the way the binary does.
fn settings(args: &[&str], env: &Env) -> Settings {
    let argv = std::iter::once("proxy-under-test")
        .chain(args.iter().copied())
        .map(OsString::from);
    let cli: Cli = clap::Parser::try_parse_from(cli::normalize_args(argv)).unwrap();
    cli.settings(env).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listeners_come_from_the_registration() {
    let up = free_port();
    let w = World::new(
        sim_builder(),
        json!({"Upstreams": [{"DestinationName": "cache", "LocalBindPort": up}]}),
    )
    .await;
    w.allow("web");
    let proxy = w.proxy().await;
    assert_eq!(proxy.inbound_addr(), w.public());
    assert_eq!(
        proxy.upstream_addr("cache"),
        Some(SocketAddr::from(([127, 0, 0, 1], up)))
    );
    let snap = proxy.snapshots().borrow().clone().unwrap();
    assert_eq!(snap.service, "db");
    assert_eq!(
        snap.local_app, w.app,
        "LocalServiceAddress:LocalServicePort"
    );
    w.probe("web")
        .echo(w.public(), b"through the sidecar")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sidecar_for_resolves_the_single_sidecar() {
    let w = World::basic().await;
    w.allow("web");
    let addr = w.sim.http_addr();
    let s = settings(
        &[
            "-sidecar-for",
            "DB",
            "-http-addr",
            &addr,
            "-token",
            &w.token,
        ],
        &Env::default(),
    );
    assert_eq!(s.target, Target::SidecarFor("DB".into()));
    let client = AgentClient::new(&s.http_addr, s.token.clone()).unwrap();
    let services = client.services().await.unwrap();
    let id = cli::pick_sidecar(&services, "DB").unwrap();
    assert_eq!(
        id, "db-sidecar-proxy",
        "case-insensitive DestinationServiceID"
    );
    assert_eq!(
        cli::pick_sidecar(&services, "web").unwrap_err().to_string(),
        "No sidecar proxy registered for web"
    );
    let proxy = start(Proxy::new(client.clone(), id)).await;
    w.probe("web")
        .echo(proxy.inbound_addr(), b"found")
        .await
        .unwrap();

    // A second proxy for db: ambiguous, Consul's text lists the IDs.
    w.c()
        .register(
            &json!({"Kind": "connect-proxy", "ID": "db-proxy-2", "Name": "db-proxy-2",
            "Port": free_port(), "Proxy": {"DestinationServiceName": "db",
            "DestinationServiceID": "db", "LocalServicePort": w.app.port()}}),
        )
        .unwrap();
    let services = client.services().await.unwrap();
    assert_eq!(
        cli::pick_sidecar(&services, "db").unwrap_err().to_string(),
        "More than one sidecar proxy registered for db.\n    Start proxy with -proxy-id and one of \
         the following IDs: db-proxy-2, db-sidecar-proxy"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_file_works_like_the_environment() {
    let w = World::basic().await;
    w.allow("web");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, format!("{}\n", w.token)).unwrap();
    let addr = w.sim.http_addr();
    let env = Env {
        token: Some("not-the-token".into()),
        ..Env::default()
    };
    let s = settings(
        &[
            "-proxy-id=db-sidecar-proxy",
            "-token-file",
            path.to_str().unwrap(),
            "-http-addr",
            &addr,
        ],
        &env,
    );
    assert_eq!(
        s.token.as_deref(),
        Some(w.token.as_str()),
        "-token-file wins, trimmed"
    );
    let Target::ProxyId(id) = s.target else {
        panic!("expected -proxy-id");
    };
    let client = AgentClient::new(&s.http_addr, s.token).unwrap();
    let proxy = start(Proxy::new(client, id)).await;
    w.probe("web")
        .echo(proxy.inbound_addr(), b"file token")
        .await
        .unwrap();
    let log = w.c().request_log();
    assert!(!log.is_empty());
    assert!(
        log.iter()
            .all(|e| e.token.as_deref() == Some(w.token.as_str()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_errors_are_clear() {
    let up = free_port();
    let w = World::new(
        sim_builder(),
        json!({"Upstreams": [{"DestinationName": "cache", "LocalBindPort": up}]}),
    )
    .await;
    let err = Proxy::new(w.client(), "nope").start().await.unwrap_err();
    assert!(
        matches!(err, ProxyError::MissingRegistration { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("unknown service ID: nope"),
        "{err}"
    );

    let err = Proxy::new(w.client(), "db").start().await.unwrap_err();
    assert!(matches!(err, ProxyError::NotConnectProxy { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        r#"service "db" is not a connect-proxy (Kind "")"#
    );

    let taken = std::net::TcpListener::bind(w.public()).unwrap();
    let err = Proxy::new(w.client(), "db-sidecar-proxy")
        .start()
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "cannot bind the public listener on {}",
            w.public()
        )),
        "{err}"
    );
    drop(taken);

    let taken = std::net::TcpListener::bind(("127.0.0.1", up)).unwrap();
    let err = Proxy::new(w.client(), "db-sidecar-proxy")
        .start()
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "cannot bind the listener of upstream \"cache\" on 127.0.0.1:{up}"
        )),
        "{err}"
    );
    drop(taken);
    let _proxy = w.proxy().await;
}
