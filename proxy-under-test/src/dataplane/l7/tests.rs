//! L7 inbound tests: per-request authorization (403 vs 200) and intention changes applying to the
//! next request on the same keep-alive connection.

mod h2;
mod h2_to_h1;
mod smuggling;
mod timeouts;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::authz::{DefaultPolicy, HttpMatch, Intention, IntentionSet, Permission};
use crate::dataplane::DataPlane;
use crate::knobs::{Knobs, Protocol};
use crate::testutil::*;

/// An HTTP app answering `app:<method> <path> xfcc=<header>`.
async fn http_app() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            tokio::spawn(async move {
                let svc = service_fn(|req: Request<hyper::body::Incoming>| async move {
                    let xfcc = req
                        .headers()
                        .get("x-forwarded-client-cert")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    let body = format!("app:{} {} xfcc={xfcc}", req.method(), req.uri().path());
                    Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(Bytes::from(
                        body,
                    ))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    addr
}

fn allow_public_only() -> Vec<Permission> {
    vec![
        Permission {
            action: "deny".into(),
            http: Some(HttpMatch {
                path_prefix: Some("/public/secret".into()),
                ..HttpMatch::default()
            }),
            jwt: None,
        },
        Permission {
            action: "allow".into(),
            http: Some(HttpMatch {
                path_prefix: Some("/public".into()),
                methods: vec!["GET".into()],
                ..HttpMatch::default()
            }),
            jwt: None,
        },
    ]
}

/// `db` (HTTP; `web` may reach `/public` except `/public/secret`, default deny) in front of
/// `app`, behind a running data plane signed by `ca`.
async fn public_only_http_db(
    ca: &TestCa,
    app: SocketAddr,
) -> (
    watch::Sender<Option<Arc<crate::snapshot::Snapshot>>>,
    crate::dataplane::RunningDataPlane,
) {
    let knobs = Knobs {
        protocol: Protocol::Http,
        ..Knobs::default()
    };
    let snap = snapshot(
        ca,
        app,
        vec![Intention::l7("web", "db", allow_public_only())],
        DefaultPolicy::DENY,
        knobs,
        vec![],
    );
    let (tx, rx) = watch::channel(Some(Arc::new(snap)));
    (tx, DataPlane::new(rx).start().await.unwrap())
}

/// [`public_only_http_db`] in front of the HTTP test app, and a keep-alive HTTP/1.1 connection
/// to it as `web`.
async fn public_only_db() -> (
    watch::Sender<Option<Arc<crate::snapshot::Snapshot>>>,
    crate::dataplane::RunningDataPlane,
    hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
) {
    let ca = TestCa::new("Consul CA 1");
    let (tx, dp) = public_only_http_db(&ca, http_app().await).await;
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let tls = connect(dp.inbound_addr(), cfg).await.unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    (tx, dp, sender)
}

/// One request on `sender`: its status and body.
async fn send(
    sender: &mut hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
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
    sender.ready().await.unwrap();
    let resp = sender
        .send_request(req.body(Empty::<Bytes>::new()).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn per_request_authorization_and_change_on_keepalive() {
    let (tx, _dp, mut sender) = public_only_db().await;
    let forged = [(
        "x-forwarded-client-cert",
        "URI=spiffe://forged/ns/default/dc/dc1/svc/admin",
    )];
    let mut send = async |method: &str, path: &str| send(&mut sender, method, path, &forged).await;

    let (s, b) = send("GET", "/public/index").await;
    assert_eq!(s, StatusCode::OK);
    // Envoy's APPEND_FORWARD: what the caller sent stays first, this hop's element (naming the
    // authenticated caller) is appended last.
    let (head, xfcc) = b.split_once(" xfcc=").expect("xfcc");
    assert_eq!(head, "app:GET /public/index");
    let elements: Vec<&str> = xfcc.split(',').collect();
    assert_eq!(elements[0], forged[0].1);
    assert!(
        elements[1].ends_with(&format!(";URI={}", svc_uri(TD, "web"))),
        "{xfcc}"
    );
    let (s, b) = send("GET", "/public/secret/x").await;
    assert_eq!(
        (s, b.as_str()),
        (StatusCode::FORBIDDEN, "RBAC: access denied")
    );
    let (s, _) = send("POST", "/public/index").await;
    assert_eq!(
        s,
        StatusCode::FORBIDDEN,
        "no permission matches: default deny"
    );
    let (s, _) = send("GET", "/other").await;
    assert_eq!(s, StatusCode::FORBIDDEN);

    // Change the intention to a plain deny: the next request on the same connection is refused.
    tx.send_modify(|cur| {
        let mut next = (**cur.as_ref().unwrap()).clone();
        next.intentions = Arc::new(IntentionSet::new(
            "db",
            vec![Intention::l4("web", "db", false)],
        ));
        *cur = Some(Arc::new(next));
    });
    let (s, _) = send("GET", "/public/index").await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    // And back to allow-all, still the same connection.
    tx.send_modify(|cur| {
        let mut next = (**cur.as_ref().unwrap()).clone();
        next.intentions = Arc::new(IntentionSet::new(
            "db",
            vec![Intention::l4("web", "db", true)],
        ));
        *cur = Some(Arc::new(next));
    });
    let (s, b) = send("POST", "/anything").await;
    assert_eq!(
        (s, b.starts_with("app:POST /anything")),
        (StatusCode::OK, true)
    );
}

#[tokio::test]
async fn l7_still_requires_client_certificates() {
    let ca = TestCa::new("Consul CA 1");
    let app = http_app().await;
    let knobs = Knobs {
        protocol: Protocol::Http,
        ..Knobs::default()
    };
    let snap = snapshot(&ca, app, vec![], DefaultPolicy::ALLOW, knobs, vec![]);
    let (_tx, rx) = watch::channel(Some(Arc::new(snap)));
    let dp = DataPlane::new(rx).start().await.unwrap();
    let other = TestCa::new("Other");
    for leaf in [None, Some(other.service_leaf("web"))] {
        let cfg = client_config(leaf.as_ref(), &ca.roots(), "db", false);
        let r = probe(
            dp.inbound_addr(),
            cfg,
            b"GET / HTTP/1.1\r\nhost: db\r\n\r\n",
        )
        .await;
        assert!(r.is_err(), "{r:?}");
    }
}

/// CVE-2024-10005's shapes: a `PathPrefix /public/secret` deny holds for every spelling of the
/// path, and what the application receives is the normalized path; the query is untouched.
#[tokio::test]
async fn denied_paths_cannot_be_spelled_around_and_the_app_sees_the_normalized_path() {
    let (_tx, _dp, mut sender) = public_only_db().await;
    let mut send = async |path: &str| send(&mut sender, "GET", path, &[]).await;
    for raw in [
        "/public/secret/x",
        "/public/%73ecret/x",
        "/public/./secret/x",
        "/public/x/../secret/x",
        "/public/x/%2e%2E/secret/x",
        "/x/../public/secret",
    ] {
        let (s, b) = send(raw).await;
        assert_eq!(
            (s, b.as_str()),
            (StatusCode::FORBIDDEN, "RBAC: access denied"),
            "{raw}"
        );
    }
    for (raw, seen) in [
        ("/public/%7Euser", "/public/~user"),
        ("/public/a/../b", "/public/b"),
        ("/secret/../public/ok?q=/../x", "/public/ok"),
        ("/public/a%2Fb", "/public/a%2Fb"),
    ] {
        let (s, b) = send(raw).await;
        assert_eq!(s, StatusCode::OK, "{raw}");
        assert!(b.starts_with(&format!("app:GET {seen} ")), "{raw}: {b}");
    }
    let (s, _) = send("/public/a%00b").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

/// A caller that completes mTLS and sends half a request head is closed once
/// `request_headers_timeout_ms` passes; a complete request on the same listener is unaffected.
#[tokio::test]
async fn half_a_request_head_cannot_hold_the_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ca = TestCa::new("Consul CA 1");
    let app = http_app().await;
    let knobs = Knobs {
        protocol: Protocol::Http,
        request_headers_timeout: std::time::Duration::from_millis(300),
        ..Knobs::default()
    };
    let snap = snapshot(
        &ca,
        app,
        vec![Intention::l7("web", "db", allow_public_only())],
        DefaultPolicy::DENY,
        knobs,
        vec![],
    );
    let (_tx, rx) = watch::channel(Some(Arc::new(snap)));
    let dp = DataPlane::new(rx).start().await.unwrap();
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let mut tls = connect(dp.inbound_addr(), cfg).await.unwrap();
    tls.write_all(b"GET /public/index HTTP/1.1\r\nhost: db\r\nx-slow: ")
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let mut buf = Vec::new();
    // Generous deadline: the close must come from the proxy's timer, not from this one.
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        tls.read_to_end(&mut buf),
    )
    .await;
    assert!(read.is_ok(), "the connection is still held after 20 s");
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(250),
        "closed before the timeout: {:?}",
        started.elapsed()
    );
    let (_tx2, _dp2, mut sender) = public_only_db().await;
    assert_eq!(
        send(&mut sender, "GET", "/public/index", &[]).await.0,
        StatusCode::OK
    );
}
