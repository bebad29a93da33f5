//! An HTTP/2 caller of an `http` (HTTP/1.1) service, handled as Envoy under Consul handles it:
//! the public listener offers only `http/1.1` by ALPN, a client offering only `h2` still
//! completes the handshake (no protocol selected, as BoringSSL does when nothing overlaps), the
//! connection manager's codec `AUTO` reads the HTTP/2 preface, and each stream is authorized on
//! its own and reaches the HTTP/1.1 application as an HTTP/1.1 request.

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};

use super::{http_app, public_only_http_db};
use crate::dataplane::RunningDataPlane;
use crate::testutil::*;

/// GETs `paths` over one HTTP/2 connection (mTLS offering `alpn`): status and body of each.
async fn h2_gets(
    dp: &RunningDataPlane,
    ca: &TestCa,
    alpn: &[u8],
    paths: &[&str],
) -> (Option<Vec<u8>>, Vec<(StatusCode, String)>) {
    let mut cfg = (*client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false)).clone();
    cfg.alpn_protocols = vec![alpn.to_vec()];
    let tls = connect(dp.inbound_addr(), Arc::new(cfg))
        .await
        .expect("the handshake completes whatever ALPN the caller offers");
    let negotiated = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    let (mut sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut answers = Vec::new();
    for path in paths {
        let req = Request::get(format!("https://db{path}"))
            .body(Empty::<Bytes>::new())
            .unwrap();
        let resp = sender.send_request(req).await.unwrap();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        answers.push((status, String::from_utf8_lossy(&body).into_owned()));
    }
    (negotiated, answers)
}

#[tokio::test]
async fn an_h2_only_caller_reaches_the_http1_app_with_each_stream_authorized() {
    let ca = TestCa::new("Consul CA 1");
    let (_tx, dp) = public_only_http_db(&ca, http_app().await).await;
    let (alpn, answers) = h2_gets(&dp, &ca, b"h2", &["/public/index", "/public/secret/x"]).await;
    assert_eq!(alpn, None, "no protocol in common: none selected");
    assert_eq!(answers[0].0, StatusCode::OK);
    assert!(
        answers[0].1.starts_with("app:GET /public/index "),
        "{}",
        answers[0].1
    );
    assert_eq!(
        answers[1],
        (StatusCode::FORBIDDEN, "RBAC: access denied".into())
    );
}

#[tokio::test]
async fn the_h2_preface_after_http1_alpn_is_served_as_http2() {
    let ca = TestCa::new("Consul CA 1");
    let (_tx, dp) = public_only_http_db(&ca, http_app().await).await;
    let (alpn, answers) = h2_gets(&dp, &ca, b"http/1.1", &["/public/a/../b"]).await;
    assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
    assert_eq!(answers[0].0, StatusCode::OK);
    assert!(
        answers[0].1.starts_with("app:GET /public/b "),
        "{}",
        answers[0].1
    );
}
