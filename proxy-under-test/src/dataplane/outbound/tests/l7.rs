//! The L7 outbound path end to end (app → upstream listener → mTLS instances' proxies → their
//! HTTP/1.1 apps, each answering with its name, the method and path it received and the headers
//! it saw): routing, prefix rewrite, header changes, retries (attempts counted), route timeout,
//! circuit breaking, outlier ejection, and a chain change applied on an open keep-alive
//! connection.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::{ep, target};
use crate::authz::DefaultPolicy;
use crate::dataplane::{DataPlane, RunningDataPlane};
use crate::knobs::{Knobs, Protocol};
use crate::metrics::Metrics;
use crate::route::RouteTable;
use crate::route::limits::{Limits, Outlier};
use crate::snapshot::{L7Upstream, Snapshot, Upstream};
use crate::testutil::h2::start_snap;
use crate::testutil::*;

/// An instance's app: answers `<name> <method> <path>` with `x-seen-<h>` for `x-route`/`x-gone`;
/// paths containing `fail` answer 503 (counted), `slow` sleeps 1 s, `body` reads the whole
/// request body first.
async fn app(name: &'static str, hits: Arc<AtomicUsize>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            let hits = hits.clone();
            let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let hits = hits.clone();
                async move {
                    hits.fetch_add(1, Ordering::SeqCst);
                    let path = req.uri().to_string();
                    if path.contains("slow") {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    let mut resp = Response::new(Full::new(Bytes::from(format!(
                        "{name} {} {path}",
                        req.method()
                    ))));
                    let seen = req.headers().clone();
                    if path.contains("body") && req.into_body().collect().await.is_err() {
                        *resp.status_mut() = StatusCode::BAD_REQUEST;
                    }
                    for h in ["x-route", "x-gone"] {
                        if let Some(v) = seen.get(h) {
                            resp.headers_mut().insert(
                                http::HeaderName::from_bytes(format!("x-seen-{h}").as_bytes())
                                    .unwrap(),
                                v.clone(),
                            );
                        }
                    }
                    if path.contains("fail") {
                        *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                    }
                    Ok::<_, hyper::Error>(resp)
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(s), svc),
            );
        }
    });
    addr
}

struct Instance {
    hits: Arc<AtomicUsize>,
    dp: RunningDataPlane,
    _tx: watch::Sender<Option<Arc<Snapshot>>>,
}

async fn instance(ca: &TestCa, name: &'static str) -> Instance {
    let hits = Arc::new(AtomicUsize::new(0));
    let addr = app(name, hits.clone()).await;
    let knobs = Knobs {
        protocol: Protocol::Http,
        ..Knobs::default()
    };
    let snap = snapshot(ca, addr, vec![], DefaultPolicy::ALLOW, knobs, vec![]);
    let (tx, dp) = start_snap(&Metrics::new(), snap).await;
    Instance { hits, dp, _tx: tx }
}

fn chain(default_to: &str) -> Value {
    json!({
        "StartNode": "router:db",
        "Nodes": {
            "router:db": {"Type": "router", "Routes": [
                {"Definition": {"Match": {"HTTP": {"PathPrefix": "/v2/"}}, "Destination": {
                    "PrefixRewrite": "/", "RequestHeaders": {"Set": {"x-route": "v2"}, "Remove": ["x-gone"]},
                    "ResponseHeaders": {"Add": {"x-resp": "added"}}}}, "NextNode": "resolver:v2"},
                {"Definition": {"Match": {"HTTP": {"PathPrefix": "/retry"}}, "Destination": {
                    "NumRetries": 2, "RetryOnStatusCodes": [503]}}, "NextNode": "resolver:v1"},
                {"Definition": {"Match": {"HTTP": {"PathPrefix": "/timeout"}}, "Destination": {
                    "RequestTimeout": "300ms"}}, "NextNode": "resolver:v1"},
                {"Definition": {"Match": {"HTTP": {"PathPrefix": "/"}}}, "NextNode": default_to}
            ]},
            "resolver:v1": {"Type": "resolver", "Resolver": {"Target": "v1.db.default.default.dc1"}},
            "resolver:v2": {"Type": "resolver", "Resolver": {"Target": "v2.db.default.default.dc1"}}
        }
    })
}

fn web(
    ca: &TestCa,
    v1: &Instance,
    v2: &Instance,
    chain: &Value,
    limits: Limits,
    outlier: Option<Outlier>,
) -> Snapshot {
    let mut t1 = target("db", vec![ep(v1.dp.inbound_addr(), "n1/db-v1")]);
    t1.id = "v1.db.default.default.dc1".into();
    let mut t2 = target("db", vec![ep(v2.dp.inbound_addr(), "n2/db-v2")]);
    t2.id = "v2.db.default.default.dc1".into();
    let routes = RouteTable::from_chain(&serde_json::from_value(chain.clone()).unwrap()).unwrap();
    let l7 = L7Upstream {
        routes,
        targets: BTreeMap::from([(t1.id.clone(), t1.clone()), (t2.id.clone(), t2)]),
        limits,
        outlier,
    };
    let up = Upstream {
        name: "db".into(),
        bind: "127.0.0.1:0".parse().unwrap(),
        connect_timeout: Duration::from_secs(2),
        protocol: Protocol::Http,
        targets: vec![t1],
        virtual_ips: vec![],
        l7: Some(Arc::new(l7)),
    };
    let unused: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let mut snap = snapshot(
        ca,
        unused,
        vec![],
        DefaultPolicy::DENY,
        Knobs::default(),
        vec![up],
    );
    snap.service = "web".into();
    snap.proxy_id = "web-sidecar-proxy".into();
    snap.leaf = ca.service_leaf("web").leaf();
    snap
}

async fn client(addr: SocketAddr) -> SendRequest<Empty<Bytes>> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (s, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    s
}

async fn get(
    c: &mut SendRequest<Empty<Bytes>>,
    path: &str,
) -> (StatusCode, http::HeaderMap, String) {
    c.ready().await.unwrap();
    let req = Request::get(path)
        .header("host", "db")
        .header("x-gone", "1")
        .body(Empty::new())
        .unwrap();
    let resp = c.send_request(req).await.unwrap();
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

#[tokio::test]
async fn routes_rewrites_headers_retries_timeouts_and_live_changes() {
    let ca = TestCa::new("Consul CA 1");
    let (v1, v2) = (instance(&ca, "v1").await, instance(&ca, "v2").await);
    let snap = web(
        &ca,
        &v1,
        &v2,
        &chain("resolver:v1"),
        Limits::default(),
        None,
    );
    let (tx, rx) = watch::channel(Some(Arc::new(snap)));
    let dp = DataPlane::new(rx).start().await.unwrap();
    let mut c = client(dp.upstream_addr("db").unwrap()).await;

    let (status, h, body) = get(&mut c, "/v2/hello?x=1").await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::OK, "v2 GET /hello?x=1"),
        "routed and rewritten"
    );
    assert_eq!(h["x-seen-x-route"], "v2");
    assert!(h.get("x-seen-x-gone").is_none(), "removed");
    assert_eq!(h["x-resp"], "added");
    let (_, _, body) = get(&mut c, "/v2x/hello").await;
    assert_eq!(
        body, "v1 GET /v2x/hello",
        "a prefix, not a word: Envoy's `//` gotcha avoided with `/v2/`"
    );
    let (_, h, body) = get(&mut c, "/other").await;
    assert_eq!(body, "v1 GET /other", "falls through to the default route");
    assert_eq!(h["x-seen-x-gone"], "1");

    let before = v1.hits.load(Ordering::SeqCst);
    let (status, _, _) = get(&mut c, "/retry/fail").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        v1.hits.load(Ordering::SeqCst) - before,
        3,
        "one attempt and two retries"
    );
    let before = v1.hits.load(Ordering::SeqCst);
    let (status, _, _) = get(&mut c, "/fail").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        v1.hits.load(Ordering::SeqCst) - before,
        1,
        "no retry policy, no retry"
    );

    let t0 = Instant::now();
    let (status, _, body) = get(&mut c, "/timeout/slow").await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::GATEWAY_TIMEOUT, "upstream request timeout")
    );
    assert!(
        t0.elapsed() < Duration::from_millis(900),
        "{:?}",
        t0.elapsed()
    );

    // A new chain applies to the next request on the same keep-alive connection.
    let next = web(
        &ca,
        &v1,
        &v2,
        &chain("resolver:v2"),
        Limits::default(),
        None,
    );
    tx.send_replace(Some(Arc::new(next)));
    let (_, _, body) = get(&mut c, "/other").await;
    assert_eq!(body, "v2 GET /other");
}

#[tokio::test]
async fn limits_overflow_and_outlier_ejection() {
    let ca = TestCa::new("Consul CA 1");
    let (v1, v2) = (instance(&ca, "v1").await, instance(&ca, "v2").await);
    let limits = Limits {
        max_concurrent_requests: 1,
        ..Limits::default()
    };
    let outlier = Outlier {
        consecutive_5xx: 2,
        base_ejection_time: Duration::from_secs(30),
        max_ejection_percent: 100,
        enforcing: 100,
    };
    let snap = web(&ca, &v1, &v2, &chain("resolver:v1"), limits, Some(outlier));
    let (_tx, rx) = watch::channel(Some(Arc::new(snap)));
    let dp = DataPlane::new(rx).start().await.unwrap();
    let addr = dp.upstream_addr("db").unwrap();
    let slow = tokio::spawn(async move { get(&mut client(addr).await, "/slow").await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, h, _) = get(&mut client(addr).await, "/x").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(h["x-envoy-overloaded"], "true");
    assert_eq!(slow.await.unwrap().0, StatusCode::OK);

    // Two consecutive 5xx eject v1's only endpoint; with every endpoint ejected the target is
    // still used (panic mode), so ejection shows in the counters only: the third 5xx does not
    // re-eject. Ejection of one of two endpoints is covered by the state's own test.
    let mut c = client(addr).await;
    for _ in 0..2 {
        assert_eq!(
            get(&mut c, "/fail").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
    let (status, _, body) = get(&mut c, "/ok").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "v1 GET /ok"));
}

#[test]
fn consecutive_failures_eject_one_of_two_endpoints_until_the_ejection_ends() {
    use crate::dataplane::outbound::l7::state::{UpstreamState, key};
    use crate::route::Lb;
    let a: SocketAddr = "127.0.0.1:1001".parse().unwrap();
    let b: SocketAddr = "127.0.0.1:1002".parse().unwrap();
    let t = target("db", vec![ep(a, "n1/a"), ep(b, "n2/b")]);
    let s = UpstreamState::default();
    let o = Outlier {
        consecutive_5xx: 2,
        base_ejection_time: Duration::from_millis(200),
        max_ejection_percent: 10,
        enforcing: 100,
    };
    let ka = key(&t, &t.endpoints[0]);
    for _ in 0..2 {
        s.start(&ka);
        s.finish(&ka, true, Some(&o), 2);
    }
    for _ in 0..4 {
        let (_, e) = s.choose("c", &[&t], &Lb::default(), None).unwrap();
        assert_eq!(e.port, 1002, "the ejected endpoint is skipped");
    }
    // At least one endpoint may be ejected whatever the percentage, but not a second one.
    let kb = key(&t, &t.endpoints[1]);
    for _ in 0..2 {
        s.start(&kb);
        s.finish(&kb, true, Some(&o), 2);
    }
    assert_eq!(
        s.choose("c", &[&t], &Lb::default(), None).unwrap().1.port,
        1002
    );
    std::thread::sleep(Duration::from_millis(250));
    let ports: std::collections::BTreeSet<u16> = (0..4)
        .map(|_| s.choose("c", &[&t], &Lb::default(), None).unwrap().1.port)
        .collect();
    assert_eq!(ports.len(), 2, "back after the ejection time");
}

/// The web side of [`web`] routing everything to `v1`, with its knobs changed by `edit`.
async fn web_on_v1(
    ca: &TestCa,
    v1: &Instance,
    v2: &Instance,
    edit: impl FnOnce(&mut Knobs),
) -> (watch::Sender<Option<Arc<Snapshot>>>, RunningDataPlane) {
    let mut snap = web(ca, v1, v2, &chain("resolver:v1"), Limits::default(), None);
    edit(&mut snap.knobs);
    let (tx, rx) = watch::channel(Some(Arc::new(snap)));
    (tx, DataPlane::new(rx).start().await.unwrap())
}

/// Sends `bytes` to the upstream listener and stops: what came back before the proxy closed
/// the connection, and how long that took. Fails if it is still open after 20 s (generous: the
/// close must come from the proxy's timer, not from this one).
async fn stall(dp: &RunningDataPlane, bytes: &[u8]) -> (String, Duration) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = TcpStream::connect(dp.upstream_addr("db").unwrap())
        .await
        .unwrap();
    tcp.write_all(bytes).await.unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), tcp.read_to_end(&mut answer)).await;
    assert!(
        read.is_ok(),
        "the upstream listener still holds the connection"
    );
    (
        String::from_utf8_lossy(&answer).into_owned(),
        started.elapsed(),
    )
}

/// An application that sends half a request head to an HTTP upstream listener is cut off once
/// `request_headers_timeout_ms` passes, as on the public listener.
#[tokio::test]
async fn half_a_request_head_cannot_hold_an_upstream_listener() {
    let ca = TestCa::new("Consul CA 1");
    let (v1, v2) = (instance(&ca, "v1").await, instance(&ca, "v2").await);
    let (_tx, dp) = web_on_v1(&ca, &v1, &v2, |k| {
        k.request_headers_timeout = Duration::from_millis(300);
    })
    .await;
    let (_, took) = stall(&dp, b"GET / HTTP/1.1\r\nhost: db\r\nx-slow: ").await;
    assert!(
        took >= Duration::from_millis(250),
        "closed before the timeout: {took:?}"
    );
    assert_eq!(v1.hits.load(Ordering::SeqCst), 0);
}

/// An application that stops sending a request body is answered `408 stream timeout` once
/// `stream_idle_timeout_ms` passes (Envoy's `stream_idle_timeout`), on a streamed route (the
/// body already on its way to the instance) and on a retried one (read whole first).
#[tokio::test]
async fn a_stalled_request_body_is_answered_408_by_an_upstream_listener() {
    let ca = TestCa::new("Consul CA 1");
    let (v1, v2) = (instance(&ca, "v1").await, instance(&ca, "v2").await);
    let limit = Duration::from_millis(300);
    let (_tx, dp) = web_on_v1(&ca, &v1, &v2, |k| k.stream_idle_timeout = Some(limit)).await;
    for path in ["/body", "/retry/body"] {
        let head = format!("POST {path} HTTP/1.1\r\nhost: db\r\ncontent-length: 10\r\n\r\nabc");
        let (answer, took) = stall(&dp, head.as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 408"), "{path}: {answer}");
        assert!(answer.ends_with("stream timeout"), "{path}: {answer}");
        assert!(
            took >= limit,
            "{path}: answered before the timeout: {took:?}"
        );
    }
}
