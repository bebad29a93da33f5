//! Agent client and control-plane tests against a canned HTTP agent (axum): wire parsing, error
//! texts, token on every request, index rules on the wire, fail closed before data, fail static
//! after, and the whole proxy started from an agent.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::*;
use crate::proxy::{Proxy, ProxyError};
use crate::testutil::*;

/// One recorded request.
#[derive(Debug, Clone)]
struct Req {
    path: String,
    query: BTreeMap<String, String>,
    token: Option<String>,
}

type Reply = (StatusCode, Vec<(&'static str, String)>, String);
type Responder = Arc<dyn Fn(&Req) -> Reply + Send + Sync>;

#[derive(Clone)]
struct Fake {
    log: Arc<Mutex<Vec<Req>>>,
    responder: Arc<Mutex<Responder>>,
}

async fn handle(
    State(f): State<Fake>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    _b: Bytes,
) -> Response {
    let query = uri
        .query()
        .map(|q| {
            q.split('&')
                .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let _ = method;
    let req = Req {
        path: uri.path().to_owned(),
        query,
        token: headers
            .get("x-consul-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    };
    f.log.lock().unwrap().push(req.clone());
    let responder = f.responder.lock().unwrap().clone();
    let (status, hdrs, body) = responder(&req);
    // A blocking request on an unchanged index waits a little, like a real agent would.
    if req.query.contains_key("index") || req.query.contains_key("hash") {
        let same = hdrs.iter().any(|(k, v)| {
            (*k == "X-Consul-Index" && req.query.get("index") == Some(v))
                || (*k == "X-Consul-ContentHash" && req.query.get("hash") == Some(v))
        });
        if same {
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
    }
    let mut resp = (status, body).into_response();
    for (k, v) in hdrs {
        resp.headers_mut().insert(k, v.parse().unwrap());
    }
    resp
}

async fn fake_agent(responder: Responder) -> (Fake, String) {
    let fake = Fake {
        log: Arc::default(),
        responder: Arc::new(Mutex::new(responder)),
    };
    let app = Router::new().fallback(handle).with_state(fake.clone());
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await });
    (fake, addr.to_string())
}

/// Waits (20 s at most) until the fake agent has answered `n` requests in all.
async fn wait_for_requests(fake: &Fake, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while fake.log.lock().unwrap().len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "the fake agent saw fewer than {n} requests in 20 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn ok_json(v: &serde_json::Value, index: u64) -> Reply {
    (
        StatusCode::OK,
        vec![
            ("X-Consul-Index", index.to_string()),
            ("Content-Type", "application/json".into()),
        ],
        v.to_string(),
    )
}

fn fast() -> Timing {
    Timing {
        wait: Duration::from_secs(2),
        backoff_base: Duration::from_millis(20),
        backoff_max: Duration::from_millis(100),
        rate_per_second: 50.0,
        policy_refresh: Duration::from_secs(60),
    }
}

#[tokio::test]
async fn client_parses_wire_and_reports_errors_like_consul() {
    let (fake, addr) = fake_agent(Arc::new(|r: &Req| match r.path.as_str() {
        "/v1/agent/service/db-sidecar-proxy" => (
            StatusCode::OK,
            vec![("X-Consul-ContentHash", "4ecd29c7bc647ca8".into())],
            json!({"Kind":"connect-proxy","ID":"db-sidecar-proxy","Service":"db-sidecar-proxy","Tags":[],"Meta":{},
                "Port":21000,"Address":"","Weights":{"Passing":1,"Warning":1},"EnableTagOverride":false,
                "ContentHash":"4ecd29c7bc647ca8","Proxy":{"DestinationServiceName":"db","DestinationServiceID":"db",
                "LocalServiceAddress":"127.0.0.1","LocalServicePort":8080,"Config":{"protocol":"http"},
                "Upstreams":[{"DestinationType":"service","DestinationName":"cache","LocalBindPort":9191,"MeshGateway":{}}],
                "MeshGateway":{},"Expose":{}},"Datacenter":"dc1"}).to_string(),
        ),
        "/v1/agent/service/missing" => (StatusCode::NOT_FOUND, vec![], "unknown service ID: missing".into()),
        "/v1/connect/intentions/match" => ok_json(&json!({"db": null}), 7),
        "/v1/agent/self" => (StatusCode::FORBIDDEN, vec![], "Permission denied".into()),
        "/v1/agent/connect/ca/roots" => (StatusCode::OK, vec![("X-Consul-Default-ACL-Policy", "deny".into())], json!({"Roots":[]}).to_string()),
        _ => (StatusCode::NOT_FOUND, vec![], "Invalid URL path: not a recognized HTTP API endpoint\n".into()),
    }))
    .await;
    let c = AgentClient::new(&addr, Some("secret".into())).unwrap();
    let (svc, hash) = c
        .service("db-sidecar-proxy", None, Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(hash, "4ecd29c7bc647ca8");
    let p = svc.proxy.unwrap();
    assert_eq!(
        (p.destination_service_name.as_str(), p.local_service_port),
        ("db", 8080)
    );
    assert_eq!(p.upstreams[0].local_bind_port, 9191);
    assert_eq!(p.config["protocol"], "http");

    let err = c
        .service("missing", None, Duration::from_secs(1))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unexpected response code: 404 (unknown service ID: missing)"
    );

    let ixns = c.intentions("db", 3, Duration::from_secs(1)).await.unwrap();
    assert_eq!(
        (ixns.body.len(), ixns.index),
        (0, 7),
        "null means no intentions"
    );

    let policy = c.default_policy().await.unwrap();
    assert_eq!(
        policy,
        DefaultPolicy::DENY,
        "403 on agent/self: header fallback"
    );

    let log = fake.log.lock().unwrap().clone();
    assert!(
        log.iter().all(|r| r.token.as_deref() == Some("secret")),
        "token on every request"
    );
    let m = log
        .iter()
        .find(|r| r.path == "/v1/connect/intentions/match")
        .unwrap();
    assert_eq!(m.query.get("by").map(String::as_str), Some("destination"));
    assert_eq!(m.query.get("name").map(String::as_str), Some("db"));
    assert_eq!(m.query.get("index").map(String::as_str), Some("3"));
    assert_eq!(m.query.get("wait").map(String::as_str), Some("1000ms"));
    assert!(
        m.query.contains_key("cached"),
        "served from the agent cache when servers are down"
    );

    assert!(matches!(
        AgentClient::new("https://x:8501", None),
        Err(AgentError::UnsupportedAddress(_))
    ));
    assert_eq!(
        normalize_addr("127.0.0.1:8500/").unwrap(),
        "http://127.0.0.1:8500"
    );
    assert!(http_timeout(Duration::from_secs(300)) > Duration::from_millis(318_750));
}

#[test]
fn default_policy_from_agent_self() {
    let body = json!({"DebugConfig":{"DefaultIntentionPolicy":"","ACLsEnabled":true,"ACLResolverSettings":{"ACLDefaultPolicy":"deny"}}});
    assert_eq!(
        client::policy_from_self(&body, Some("allow")),
        DefaultPolicy::DENY
    );
    let body = json!({"DebugConfig":{"DefaultIntentionPolicy":"allow","ACLsEnabled":true,"ACLResolverSettings":{"ACLDefaultPolicy":"deny"}}});
    assert!(client::policy_from_self(&body, None).allow);
    let body = json!({"DebugConfig":{"ACLsEnabled":false}});
    assert_eq!(
        client::policy_from_self(&body, Some("deny")),
        DefaultPolicy::ALLOW
    );
}

#[tokio::test]
async fn watch_follows_index_rules_on_the_wire() {
    // The agent answers with indexes 5, 9, 3 (went backwards), 0, then 12 forever.
    let seq = Arc::new(Mutex::new(vec![5u64, 9, 3, 0]));
    let s2 = seq.clone();
    let (fake, addr) = fake_agent(Arc::new(move |_r: &Req| {
        let idx = s2.lock().unwrap().first().copied().map_or(12, |i| i);
        let mut s = s2.lock().unwrap();
        if !s.is_empty() {
            s.remove(0);
        }
        ok_json(
            &json!({"ActiveRootID":"a","TrustDomain":"td","Roots":[]}),
            idx,
        )
    }))
    .await;
    let c = AgentClient::new(&addr, Some("t".into())).unwrap();
    let (tx, mut rx) = mpsc::channel(16);
    let t = fast();
    let task = tokio::spawn(watches::index_watch(
        "roots",
        t,
        Metrics::new(),
        tx,
        Update::Roots,
        move |i| {
            let c = c.clone();
            async move { c.roots(i, t.wait).await }
        },
    ));
    // Changes are forwarded: 5, 9, 3, 0(->1), 12; then unchanged 12s are not.
    for _ in 0..5 {
        tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
    }
    eventually(Duration::from_secs(5), || {
        fake.log.lock().unwrap().len() >= 7
    })
    .await;
    task.abort();
    let sent: Vec<Option<String>> = fake
        .log
        .lock()
        .unwrap()
        .iter()
        .take(7)
        .map(|r| r.query.get("index").cloned())
        .collect();
    let want: Vec<Option<String>> = [
        None,
        Some("5"),
        Some("9"),
        None,
        Some("1"),
        Some("12"),
        Some("12"),
    ]
    .iter()
    .map(|o| o.map(str::to_owned))
    .collect();
    assert_eq!(
        sent, want,
        "first read, follow, reset on backwards, 0 -> 1, then block"
    );
    assert!(
        fake.log
            .lock()
            .unwrap()
            .iter()
            .skip(1)
            .filter(|r| r.query.contains_key("index"))
            .all(|r| r.query.get("wait").map(String::as_str) == Some("2000ms"))
    );
    assert!(
        rx.try_recv().is_err(),
        "unchanged index is not re-published"
    );
}

#[tokio::test]
async fn watch_backs_off_on_errors_without_hot_looping() {
    let (fake, addr) = fake_agent(Arc::new(|_r: &Req| {
        (StatusCode::INTERNAL_SERVER_ERROR, vec![], "boom".into())
    }))
    .await;
    let c = AgentClient::new(&addr, None).unwrap();
    let (tx, _rx) = mpsc::channel(16);
    let metrics = Metrics::new();
    let t = Timing {
        backoff_base: Duration::from_millis(50),
        backoff_max: Duration::from_millis(400),
        ..fast()
    };
    let task = tokio::spawn(watches::index_watch(
        "roots",
        t,
        metrics.clone(),
        tx,
        Update::Roots,
        move |i| {
            let c = c.clone();
            async move { c.roots(i, t.wait).await }
        },
    ));
    // Four failed requests (an event: however long a loaded machine takes); between them the
    // backoff waits 25-50, 50-100 and 100-200 ms, so they cannot come sooner than 175 ms after
    // the start (a hot loop sends them at once). Load only makes them later.
    let started = std::time::Instant::now();
    wait_for_requests(&fake, 4).await;
    let took = started.elapsed();
    task.abort();
    let _ = task.await;
    let n = fake.log.lock().unwrap().len();
    assert!(
        took >= Duration::from_millis(175),
        "{n} requests in {took:?}"
    );
    assert!(metrics.render().contains(&format!(
        "proxy_agent_watch_errors_total{{watch=\"roots\"}} {n}"
    )));
}

#[tokio::test]
async fn after_an_error_the_watch_starts_over_without_an_index() {
    // Index 40, then an error (an agent restart cutting the blocked read), then the restarted
    // agent answers index 7 for anything up to 40 only after `wait` (Consul's rule for an index
    // above the current one), and at once without an index.
    let calls = Arc::new(Mutex::new(0u32));
    let c2 = calls.clone();
    let (fake, addr) = fake_agent(Arc::new(move |r: &Req| {
        let n = {
            let mut n = c2.lock().unwrap();
            *n += 1;
            *n
        };
        let roots = json!({"ActiveRootID": format!("r{n}"), "TrustDomain": "td", "Roots": []});
        match (n, r.query.get("index").map(String::as_str)) {
            (1, _) => ok_json(&roots, 40),
            (2, _) => (StatusCode::SERVICE_UNAVAILABLE, vec![], "restarting".into()),
            (_, Some("40")) => (StatusCode::INTERNAL_SERVER_ERROR, vec![], "parked".into()),
            _ => ok_json(&roots, 7),
        }
    }))
    .await;
    let c = AgentClient::new(&addr, None).unwrap();
    let (tx, mut rx) = mpsc::channel(16);
    let t = fast();
    let task = tokio::spawn(watches::index_watch(
        "roots",
        t,
        Metrics::new(),
        tx,
        Update::Roots,
        move |i| {
            let c = c.clone();
            async move { c.roots(i, t.wait).await }
        },
    ));
    let mut active = Vec::new();
    for _ in 0..2 {
        match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
            Ok(Some(Update::Roots(r))) => active.push(r.active_root_id),
            other => panic!("expected roots, got {other:?}"),
        }
    }
    task.abort();
    assert_eq!(active, ["r1", "r3"], "the post-error read is forwarded");
    let sent: Vec<Option<String>> = fake
        .log
        .lock()
        .unwrap()
        .iter()
        .take(3)
        .map(|r| r.query.get("index").cloned())
        .collect();
    assert_eq!(sent, [None, Some("40".to_owned()), None]);
}

#[tokio::test]
async fn only_blocking_reads_may_take_the_wait() {
    // An agent that accepts and never answers.
    let app = Router::new().fallback(std::future::pending::<Response>);
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(l, app).await });
    let c = AgentClient::new(&addr, None)
        .unwrap()
        .with_request_timeout(Duration::from_millis(300));
    let wait = Duration::from_secs(300);
    let quick = Duration::from_secs(5);
    // Non-blocking reads (a first read, or the read after an error) give up quickly...
    let roots = tokio::time::timeout(quick, c.roots(0, wait)).await;
    assert_eq!(roots.expect("gave up").unwrap_err(), AgentError::Timeout);
    let svc = tokio::time::timeout(quick, c.service("db-sidecar-proxy", None, wait)).await;
    assert_eq!(svc.expect("gave up").unwrap_err(), AgentError::Timeout);
    let policy = tokio::time::timeout(quick, c.default_policy()).await;
    assert_eq!(policy.expect("gave up").unwrap_err(), AgentError::Timeout);
    // ...a blocking read waits past its `wait`.
    let blocked = tokio::time::timeout(Duration::from_secs(2), c.roots(7, wait)).await;
    assert!(
        blocked.is_err(),
        "a blocking read gave up before its wait: {blocked:?}"
    );
}

/// A complete canned agent for `db-sidecar-proxy` on `port`, app at `app`.
fn full_agent(
    ca: &TestCa,
    port: u16,
    app: u16,
    allow_web: Arc<Mutex<bool>>,
    down: Arc<Mutex<bool>>,
) -> Responder {
    let (cert, key) = ca.leaf_pems("db");
    let root = ca.root_pem();
    Arc::new(move |r: &Req| {
        if *down.lock().unwrap() {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                vec![],
                "rpc error making call: No cluster leader".into(),
            );
        }
        let allow = *allow_web.lock().unwrap();
        match r.path.as_str() {
            "/v1/agent/service/db-sidecar-proxy" => (StatusCode::OK, vec![("X-Consul-ContentHash", "h1".into())],
                json!({"Kind":"connect-proxy","ID":"db-sidecar-proxy","Service":"db-sidecar-proxy","Port":port,"Address":"127.0.0.1",
                    "Proxy":{"DestinationServiceName":"db","DestinationServiceID":"db","LocalServicePort":app,
                    "Config":{"reauthorize_interval_ms":200}},"Datacenter":"dc1"}).to_string()),
            "/v1/agent/service/web" => (StatusCode::OK, vec![], json!({"Kind":"","ID":"web","Service":"web","Port":1}).to_string()),
            "/v1/agent/connect/ca/leaf/db" => ok_json(&json!({"SerialNumber":"01","CertPEM":cert,"PrivateKeyPEM":key,"Service":"db",
                "ServiceURI":svc_uri(TD,"db"),"ValidAfter":"","ValidBefore":""}), 10),
            "/v1/agent/connect/ca/roots" => ok_json(&json!({"ActiveRootID":"r1","TrustDomain":TD,"Roots":[{"ID":"r1","RootCert":root,"Active":true}]}), 11),
            "/v1/connect/intentions/match" => ok_json(&json!({"db":[{"SourceNS":"default","SourceName":"web","DestinationNS":"default",
                "DestinationName":"db","SourceType":"consul","Action": if allow {"allow"} else {"deny"},"Precedence":9}]}), if allow { 12 } else { 13 }),
            "/v1/agent/self" => ok_json(&json!({"DebugConfig":{"DefaultIntentionPolicy":"","ACLsEnabled":true,"ACLResolverSettings":{"ACLDefaultPolicy":"deny"}}}), 1),
            _ => (StatusCode::NOT_FOUND, vec![], "unknown service ID: x".into()),
        }
    })
}

#[tokio::test]
async fn proxy_runs_from_the_agent_follows_changes_and_fails_static() {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let allow = Arc::new(Mutex::new(true));
    let down = Arc::new(Mutex::new(false));
    let (fake, addr) = fake_agent(full_agent(
        &ca,
        port,
        app.port(),
        allow.clone(),
        down.clone(),
    ))
    .await;
    let client = AgentClient::new(&addr, Some("tok".into())).unwrap();
    let running = Proxy::new(client.clone(), "db-sidecar-proxy")
        .timing(fast())
        .start()
        .await
        .unwrap();
    assert_eq!(running.inbound_addr().port(), port);
    let web = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let api = client_config(Some(&ca.service_leaf("api")), &ca.roots(), "db", false);
    assert!(
        probe(running.inbound_addr(), web.clone(), b"hi")
            .await
            .is_ok()
    );
    assert!(
        probe(running.inbound_addr(), api.clone(), b"hi")
            .await
            .is_err(),
        "default deny"
    );

    // Agent fails: data path unchanged (fail static).
    *down.lock().unwrap() = true;
    // Until the proxy has met the failure: two more requests answered while down (at least one
    // of them after a blocked read returned).
    let seen = fake.log.lock().unwrap().len();
    wait_for_requests(&fake, seen + 2).await;
    assert!(
        probe(running.inbound_addr(), web.clone(), b"hi")
            .await
            .is_ok()
    );
    assert!(
        probe(running.inbound_addr(), api.clone(), b"hi")
            .await
            .is_err()
    );

    // Agent back; intention flipped to deny: followed.
    *allow.lock().unwrap() = false;
    *down.lock().unwrap() = false;
    let mut rx = running.snapshots();
    tokio::time::timeout(
        Duration::from_secs(5),
        rx.wait_for(|s| {
            s.as_ref().is_some_and(|s| {
                !s.intentions
                    .authorize_l4(
                        &crate::spiffe::parse_service_uri(&svc_uri(TD, "web")).unwrap(),
                        s.default_policy,
                    )
                    .allowed
            })
        }),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(probe(running.inbound_addr(), web, b"hi").await.is_err());
    assert!(
        fake.log
            .lock()
            .unwrap()
            .iter()
            .all(|r| r.token.as_deref() == Some("tok"))
    );
    assert!(fake.log.lock().unwrap().iter().any(|r| r.path == "/v1/agent/service/db-sidecar-proxy" && r.query.contains_key("hash")));
    running.shutdown().await;

    // Startup errors are clear.
    let err = Proxy::new(client.clone(), "nope")
        .timing(fast())
        .start()
        .await
        .unwrap_err();
    assert!(
        matches!(err, ProxyError::MissingRegistration { .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "no service registered with ID \"nope\" on the agent (Unexpected response code: 404 (unknown service ID: x))"
    );
    let err = Proxy::new(client, "web")
        .timing(fast())
        .start()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "service \"web\" is not a connect-proxy (Kind \"\")"
    );
}

#[tokio::test]
async fn nothing_is_bound_before_the_configuration_is_complete() {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let inner = full_agent(
        &ca,
        port,
        app.port(),
        Arc::new(Mutex::new(true)),
        Arc::new(Mutex::new(false)),
    );
    let no_leaf = Arc::new(AtomicFlag::default());
    let nl = no_leaf.clone();
    let (fake, addr) = fake_agent(Arc::new(move |r: &Req| {
        if r.path.starts_with("/v1/agent/connect/ca/leaf/") && !nl.get() {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                vec![],
                "cluster has no CA bootstrapped yet".into(),
            );
        }
        inner(r)
    }))
    .await;
    let client = AgentClient::new(&addr, None).unwrap();
    let start = tokio::spawn(
        Proxy::new(client, "db-sidecar-proxy")
            .timing(fast())
            .start(),
    );
    // Until the proxy has asked for its leaf and been refused twice (the agent's CA is not
    // bootstrapped): it must still be waiting, with nothing bound.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while fake
        .log
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.path.starts_with("/v1/agent/connect/ca/leaf/"))
        .count()
        < 2
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no leaf request in 20 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!start.is_finished());
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err(),
        "fail closed"
    );
    no_leaf.set();
    let running = tokio::time::timeout(Duration::from_secs(5), start)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(running.inbound_addr().port(), port);
}

#[derive(Default)]
struct AtomicFlag(std::sync::atomic::AtomicBool);

impl AtomicFlag {
    fn get(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
    fn set(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
