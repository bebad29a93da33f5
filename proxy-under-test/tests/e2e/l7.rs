//! L7: `db` is an HTTP service (`service-defaults` Protocol http, merged into the sidecar's
//! config by the agent); every request is authorized against the intention's Permissions, 403
//! on deny, and a change applies to the next request on a keep-alive connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::support::*;

/// An HTTP/1.1 app answering `200 <method> <path> <x-forwarded-client-cert>`.
async fn http_app() -> (SocketAddr, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let conns = Arc::new(AtomicUsize::new(0));
    let count = conns.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let svc = service_fn(|req: Request<Incoming>| async move {
                let xfcc = req
                    .headers()
                    .get("x-forwarded-client-cert")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("-")
                    .to_owned();
                let body = format!("{} {} {xfcc}", req.method(), req.uri().path());
                Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::from(body))))
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    (addr, conns)
}

async fn world() -> World {
    let (app, conns) = http_app().await;
    let w = World::with_app(
        sim_builder(),
        json!({"Config": {"reauthorize_interval_ms": 200}}),
        app,
        conns,
    )
    .await;
    w.c()
        .upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "db", "Protocol": "http"}))
        .unwrap();
    w
}

/// An HTTP/1.1 keep-alive connection through the proxy as `service`.
async fn http_client(w: &World, service: &str) -> SendRequest<Empty<Bytes>> {
    let tls = w.probe(service).connect(w.public()).await.unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender
}

/// Sends one request; returns the status and body.
async fn send(
    s: &mut SendRequest<Empty<Bytes>>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, String) {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "db");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    s.ready().await.unwrap();
    let resp = s
        .send_request(req.body(Empty::new()).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Repeats `GET path` on the same connection until it answers `want` (within [`PATIENCE`]).
async fn until(s: &mut SendRequest<Empty<Bytes>>, path: &str, want: StatusCode) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while send(s, "GET", path, &[]).await.0 != want {
        assert!(
            tokio::time::Instant::now() < deadline,
            "GET {path} never answered {want}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

fn permissions() -> Value {
    let http = |v: Value| json!({"Action": "allow", "HTTP": v});
    json!({"Permissions": [
        {"Action": "deny", "HTTP": {"PathPrefix": "/admin"}},
        http(json!({"PathExact": "/exact"})),
        http(json!({"PathPrefix": "/api/", "Methods": ["GET", "HEAD"]})),
        http(json!({"PathRegex": "/re/[0-9]+"})),
        http(json!({"PathPrefix": "/hdr", "Header": [{"Name": "X-Env", "Exact": "prod"}]})),
        http(json!({"PathPrefix": "/present", "Header": [{"Name": "X-Token", "Present": true}]})),
        http(json!({"PathPrefix": "/prefix", "Header": [{"Name": "X-Ver", "Prefix": "v2"}]})),
        http(json!({"PathPrefix": "/suffix", "Header": [{"Name": "X-Host", "Suffix": ".internal"}]})),
        http(json!({"PathPrefix": "/regex", "Header": [{"Name": "X-Id", "Regex": "[a-f]{4}"}]})),
        http(json!({"PathPrefix": "/invert",
            "Header": [{"Name": "X-Debug", "Present": true, "Invert": true}]})),
        http(json!({"PathPrefix": "/nocase",
            "Header": [{"Name": "X-Mode", "Exact": "fast", "IgnoreCase": true}]})),
    ]})
}

/// (method, path, headers, expected status).
type Case = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    u16,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissions_decide_each_request() {
    let w = world().await;
    w.c().put_intention("web", "db", &permissions()).unwrap();
    w.allow("api"); // an L4 allow on an L7 service allows every request
    let proxy = w.proxy().await;
    let snap = proxy.snapshots();
    assert_eq!(
        snap.borrow().as_ref().map(|s| s.knobs.protocol),
        Some(proxy_under_test::Protocol::Http),
        "protocol from the merged service-defaults"
    );
    let mut web = http_client(&w, "web").await;
    let cases: &[Case] = &[
        ("GET", "/exact", &[], 200),
        ("GET", "/exact/more", &[], 403),
        ("GET", "/api/users", &[], 200),
        ("HEAD", "/api/users", &[], 200),
        ("POST", "/api/users", &[], 403),
        ("GET", "/re/123", &[], 200),
        ("GET", "/re/12a", &[], 403),
        ("GET", "/hdr", &[("X-Env", "prod")], 200),
        ("GET", "/hdr", &[("X-Env", "dev")], 403),
        ("GET", "/hdr", &[], 403),
        ("GET", "/present", &[("X-Token", "")], 200),
        ("GET", "/present", &[], 403),
        ("GET", "/prefix", &[("X-Ver", "v2.1")], 200),
        ("GET", "/prefix", &[("X-Ver", "v1")], 403),
        ("GET", "/suffix", &[("X-Host", "a.internal")], 200),
        ("GET", "/suffix", &[("X-Host", "a.external")], 403),
        ("GET", "/regex", &[("X-Id", "beef")], 200),
        ("GET", "/regex", &[("X-Id", "beefy")], 403),
        ("GET", "/invert", &[], 200),
        ("GET", "/invert", &[("X-Debug", "1")], 403),
        ("GET", "/nocase", &[("X-Mode", "FAST")], 200),
        ("GET", "/nocase", &[("X-Mode", "slow")], 403),
        ("GET", "/admin/users", &[], 403),
        // No permission matches: the default policy (ACL default deny), not lower intentions.
        ("GET", "/elsewhere", &[], 403),
    ];
    for (method, path, headers, want) in cases {
        let (status, body) = send(&mut web, method, path, headers).await;
        assert_eq!(
            status.as_u16(),
            *want,
            "{method} {path} {headers:?}: {body}"
        );
        if *want == 403 {
            assert_eq!(body, "RBAC: access denied");
        }
    }
    let td = w.c().trust_domain();
    let (_, body) = send(&mut web, "GET", "/exact", &[]).await;
    // Envoy's APPEND_FORWARD element: By (this sidecar), Hash, Cert, Chain, Subject, URI.
    assert!(
        body.starts_with(&format!(
            "GET /exact By=spiffe://{td}/ns/default/dc/dc1/svc/db;Hash="
        )) && body.ends_with(&format!(";URI=spiffe://{td}/ns/default/dc/dc1/svc/web")),
        "the app sees the caller: {body}"
    );
    let mut api = http_client(&w, "api").await;
    for path in ["/admin", "/elsewhere", "/exact"] {
        assert_eq!(send(&mut api, "DELETE", path, &[]).await.0, StatusCode::OK);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn intention_changes_apply_to_the_next_request_on_a_keepalive_connection() {
    let w = world().await;
    w.allow("web");
    let _proxy = w.proxy().await;
    let mut web = http_client(&w, "web").await;
    assert_eq!(send(&mut web, "GET", "/a", &[]).await.0, StatusCode::OK);

    w.c()
        .put_intention(
            "web",
            "db",
            &json!({"Permissions": [{"Action": "allow", "HTTP": {"PathPrefix": "/a"}}]}),
        )
        .unwrap();
    until(&mut web, "/b", StatusCode::FORBIDDEN).await;
    assert_eq!(send(&mut web, "GET", "/a", &[]).await.0, StatusCode::OK);

    w.deny("web");
    until(&mut web, "/a", StatusCode::FORBIDDEN).await;
    w.allow("web");
    until(&mut web, "/b", StatusCode::OK).await;
}
