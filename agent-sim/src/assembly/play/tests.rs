//! Tests of `play`: the setup lands in the sim as Consul would show it, and agent-side steps
//! change what the API serves.

use axum::Router;
use axum::body::Body;
use http::Request;
use http_body_util::BodyExt;
use scenarios::{FaultSpec, InstanceSpec, IntentionSpec, UpstreamSpec};
use tower::ServiceExt;

use super::*;
use crate::assembly::sim::AgentSim;
use crate::model::acl::DefaultPolicy;

const ROOT: &str = "root-token";

async fn get(app: &Router, path: &str) -> (u16, Value) {
    let req = Request::get(path)
        .header("X-Consul-Token", ROOT)
        .body(Body::empty())
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn setup() -> Setup {
    Setup {
        protocol: Some("http".into()),
        proxy_config: [("max_connection_lifetime_ms".to_owned(), json!(9000))].into(),
        upstreams: vec![
            UpstreamSpec {
                name: "cache".into(),
                initial: true,
                socket: false,
                socket_mode: None,
                prepared_query: false,
                implicit: false,
            },
            UpstreamSpec {
                name: "extra".into(),
                initial: false,
                socket: false,
                socket_mode: None,
                prepared_query: false,
                implicit: false,
            },
        ],
        instances: vec![InstanceSpec {
            id: "cache-1".into(),
            service: "cache".into(),
            identity: None,
            status: None,
            hostname: None,
            protocol: None,
            meta: Default::default(),
            tags: Vec::new(),
            answer: scenarios::Answer::default(),
            tls_version: None,
            cipher_suites: vec![],
        }],
        intentions: vec![IntentionSpec {
            source: "web".into(),
            destination: "db".into(),
            action: Some(Policy::Allow),
            permissions: None,
        }],
        ..Setup::default()
    }
}

fn ports() -> Ports {
    Ports {
        app: 9090,
        inbound: 21000,
        upstreams: [("cache".to_owned(), 9191), ("extra".to_owned(), 9192)].into(),
        instances: [("cache-1".to_owned(), 9300)].into(),
        ..Ports::default()
    }
}

fn player() -> (Router, Control, Play) {
    let (app, control) = AgentSim::builder()
        .acls(ROOT, DefaultPolicy::Deny)
        .build()
        .unwrap();
    let knobs = [("reauthorize_interval_ms".to_owned(), json!(300))].into();
    let play = Play::new(&setup(), ports(), knobs, Timeouts::default());
    (app, control, play)
}

#[tokio::test]
async fn setup_registers_db_sidecar_and_instances() {
    let (app, control, mut play) = player();
    play.apply_setup(&control).unwrap();

    let (status, svc) = get(&app, "/v1/agent/service/db-sidecar-proxy").await;
    assert_eq!(status, 200, "{svc}");
    assert_eq!(svc["Kind"], "connect-proxy");
    assert_eq!(svc["Port"], 21000);
    assert_eq!(svc["Proxy"]["DestinationServiceName"], "db");
    assert_eq!(svc["Proxy"]["LocalServicePort"], 9090);
    assert_eq!(svc["Proxy"]["Config"]["reauthorize_interval_ms"], 300);
    assert_eq!(svc["Proxy"]["Config"]["max_connection_lifetime_ms"], 9000);
    assert_eq!(
        svc["Proxy"]["Config"]["protocol"], "http",
        "central config merged"
    );
    let ups = svc["Proxy"]["Upstreams"].as_array().unwrap();
    assert_eq!(ups.len(), 1, "only initial upstreams: {ups:?}");
    assert_eq!(ups[0]["DestinationName"], "cache");
    assert_eq!(ups[0]["LocalBindPort"], 9191);

    let (_, health) = get(&app, "/v1/health/connect/cache?passing=1").await;
    let entries = health.as_array().unwrap();
    assert_eq!(entries.len(), 1, "{health}");
    assert_eq!(entries[0]["Service"]["ID"], "cache-1");
    assert_eq!(entries[0]["Service"]["Port"], 9300);
    assert_eq!(entries[0]["Node"]["Node"], "node-cache-1");

    let (_, defaults) = get(&app, "/v1/config/service-defaults/db").await;
    assert_eq!(defaults["Protocol"], "http");
    let (_, check) = get(
        &app,
        "/v1/connect/intentions/check?source=web&destination=db",
    )
    .await;
    assert_eq!(check["Allowed"], true);
}

#[tokio::test]
async fn steps_change_the_agent() {
    let (app, control, mut play) = player();
    play.apply_setup(&control).unwrap();

    let flip = Step::Intention(IntentionSpec {
        source: "web".into(),
        destination: "db".into(),
        action: Some(Policy::Deny),
        permissions: None,
    });
    let label = play.apply_step(&control, &flip).await.unwrap();
    assert_eq!(label.as_deref(), Some("intention web → db: deny"));
    let (_, check) = get(
        &app,
        "/v1/connect/intentions/check?source=web&destination=db",
    )
    .await;
    assert_eq!(check["Allowed"], false);

    let health = Step::SetHealth {
        instance: "cache-1".into(),
        status: "critical".into(),
    };
    play.apply_step(&control, &health).await.unwrap();
    let (_, entries) = get(&app, "/v1/health/connect/cache?passing=1").await;
    assert_eq!(entries, json!([]));

    let add = Step::AddUpstream {
        name: "extra".into(),
    };
    play.apply_step(&control, &add).await.unwrap();
    let (_, svc) = get(&app, "/v1/agent/service/db-sidecar-proxy").await;
    let names: Vec<&Value> = svc["Proxy"]["Upstreams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| &u["DestinationName"])
        .collect();
    assert_eq!(names, [&json!("cache"), &json!("extra")]);

    let before = roots(&control);
    play.apply_step(
        &control,
        &Step::RotateCa {
            cross_sign: true,
            key_type: None,
            key_bits: None,
        },
    )
    .await
    .unwrap();
    let after = roots(&control);
    assert_ne!(before.active_pem, after.active_pem);
    assert_eq!(after.pems.len(), 2);
    assert!(after.pems.contains(&before.active_pem));
    assert!(after.trust_domain.ends_with(".consul"));
}

#[tokio::test]
async fn faults_are_held_until_cleared() {
    let (_app, control, mut play) = player();
    let down = Step::Fault {
        fault: FaultSpec::AgentDown,
        for_: None,
    };
    assert_eq!(
        play.apply_step(&control, &down).await.unwrap().as_deref(),
        Some("fault agent-down")
    );
    assert_eq!(control.faults().len(), 1);
    play.apply_step(&control, &Step::ClearFaults).await.unwrap();
    assert!(control.faults().is_empty());
}

#[tokio::test]
async fn bad_references_are_errors_not_panics() {
    let (_app, control, mut play) = player();
    let err = play
        .apply_step(
            &control,
            &Step::SetHealth {
                instance: "nope".into(),
                status: "passing".into(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "unknown_instance");
    let err = play
        .apply_step(&control, &Step::AddUpstream { name: "x".into() })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "unknown_upstream");
    let err = play
        .apply_step(
            &control,
            &Step::RestartAgent {
                down_for: Some("soon".into()),
                default_intention_policy: None,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "bad_duration");
    let harness_side = Step::Mark { name: "m".into() };
    assert_eq!(
        play.apply_step(&control, &harness_side).await.unwrap(),
        None
    );
}

#[test]
fn registration_bodies_snapshot() {
    let (_app, _control, play) = player();
    let bodies = json!({
        "register": play.registration().unwrap(),
        "instance": instance_registration(
            &InstanceSpec {
                id: "cache-2".into(),
                service: "cache".into(),
                identity: Some("web".into()),
                status: Some("critical".into()),
                hostname: Some("localhost".into()),
                protocol: None,
                meta: Default::default(),
                tags: Vec::new(),
                answer: scenarios::Answer::default(),
                tls_version: None,
                cipher_suites: vec![],
            },
            "127.0.0.1",
            9301,
        ),
    });
    insta::assert_json_snapshot!(bodies);
}

#[test]
fn transparent_and_socket_registration_snapshot() {
    let mut s = setup();
    s.transparent = Some(scenarios::TransparentSpec {
        outbound_port: None,
        dialed_directly: true,
        exclude: Vec::new(),
    });
    s.app_socket = true;
    s.upstreams[0].socket = true;
    s.upstreams[0].socket_mode = Some("0600".into());
    let mut p = ports();
    p.service_address = Some("198.18.0.1".into());
    p.instance_address = Some("198.18.0.2".into());
    p.app_socket = Some("/tmp/x/app.sock".into());
    p.upstream_sockets
        .insert("cache".into(), "/tmp/x/cache.sock".into());
    let play = Play::new(&s, p, BTreeMap::new(), Timeouts::default());
    let spec = &s.instances[0];
    insta::assert_json_snapshot!(json!({
        "register": play.registration().unwrap(),
        "instance": instance_registration(spec, "198.18.0.2", 9300),
    }));
}

#[test]
fn app_socket_without_a_path_is_an_error() {
    let mut s = setup();
    s.app_socket = true;
    let play = Play::new(&s, ports(), BTreeMap::new(), Timeouts::default());
    assert_eq!(play.registration().unwrap_err().kind(), "no_port");
}

#[tokio::test]
async fn an_implicit_upstream_is_an_intention_not_a_registration_entry() {
    let mut s = setup();
    s.transparent = Some(scenarios::TransparentSpec::default());
    s.upstreams[0].implicit = true;
    let (app, control) = AgentSim::builder()
        .acls(ROOT, DefaultPolicy::Deny)
        .build()
        .unwrap();
    let mut play = Play::new(&s, ports(), BTreeMap::new(), Timeouts::default());
    assert!(play.registered_upstreams().is_empty());
    assert_eq!(play.implicit_upstreams(), ["cache"]);
    play.apply_setup(&control).unwrap();

    let (_, svc) = get(&app, "/v1/agent/service/db-sidecar-proxy").await;
    assert_eq!(svc["Proxy"]["Mode"], "transparent");
    assert!(svc["Proxy"]["Upstreams"].is_null(), "{svc}");
    let (_, check) = get(
        &app,
        "/v1/connect/intentions/check?source=db&destination=cache",
    )
    .await;
    assert_eq!(check["Allowed"], true, "db -> cache written");
}
