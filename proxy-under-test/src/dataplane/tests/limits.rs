//! `max_inbound_connections` (the excess closed right after accept, the open ones kept, a
//! changed limit applying to the next connection) and `local_request_timeout_ms` (Envoy's 504,
//! and the next request on the same connection served).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::{start, update};
use crate::authz::DefaultPolicy;
use crate::knobs::{Knobs, Protocol};
use crate::testutil::*;

#[tokio::test]
async fn connections_over_the_limit_are_closed_and_the_rest_keep_working() {
    let ca = TestCa::new("Consul CA 1");
    let app = echo_app().await;
    let knobs = Knobs {
        max_inbound_connections: Some(2),
        ..Knobs::default()
    };
    let (tx, dp) = start(snapshot(
        &ca,
        app,
        vec![],
        DefaultPolicy::ALLOW,
        knobs,
        vec![],
    ))
    .await;
    let addr = dp.inbound_addr();
    let cfg = || client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let mut held = Vec::new();
    for i in 0..2u8 {
        let mut s = connect(addr, cfg()).await.expect("under the limit");
        assert_eq!(echo_once(&mut s, &[i; 3]).await, Ok(vec![i; 3]));
        held.push(s);
    }
    let third = probe(addr, cfg(), b"over").await;
    assert!(third.is_err(), "the third is closed: {third:?}");
    for (i, s) in held.iter_mut().enumerate() {
        let b = u8::try_from(i).unwrap() + 10;
        assert_eq!(echo_once(s, &[b; 2]).await, Ok(vec![b; 2]), "still open");
    }
    // A raised limit applies to the next connection.
    update(&tx, |s| s.knobs.max_inbound_connections = Some(3));
    assert_eq!(
        probe(addr, cfg(), b"raised").await.as_deref(),
        Ok(&b"raised"[..])
    );
    // A closed connection frees its place.
    update(&tx, |s| s.knobs.max_inbound_connections = Some(2));
    assert!(probe(addr, cfg(), b"over").await.is_err());
    drop(held.pop());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match probe(addr, cfg(), b"freed").await {
            Ok(b) => break assert_eq!(b, b"freed"),
            Err(e) if tokio::time::Instant::now() > deadline => panic!("never freed: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// An HTTP app that answers `/slow` after 3 s and anything else at once.
async fn slow_app() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            tokio::spawn(async move {
                let svc = service_fn(|req: Request<hyper::body::Incoming>| async move {
                    if req.uri().path() == "/slow" {
                        tokio::time::sleep(Duration::from_secs(3)).await;
                    }
                    let body = Full::new(Bytes::from(format!("app:{}", req.uri().path())));
                    Ok::<_, std::convert::Infallible>(http::Response::new(body))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn a_late_answer_gets_envoys_504_and_the_connection_serves_the_next_request() {
    let ca = TestCa::new("Consul CA 1");
    let knobs = Knobs {
        protocol: Protocol::Http,
        local_request_timeout: Some(Duration::from_millis(300)),
        ..Knobs::default()
    };
    let snap = snapshot(
        &ca,
        slow_app().await,
        vec![],
        DefaultPolicy::ALLOW,
        knobs,
        vec![],
    );
    let (_tx, dp) = start(snap).await;
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let tls = connect(dp.inbound_addr(), cfg).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut get = async |path: &str| {
        sender.ready().await.unwrap();
        let req = Request::get(path)
            .header("host", "db")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let resp = sender.send_request(req).await.unwrap();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    };
    let started = tokio::time::Instant::now();
    let (s, b) = get("/slow").await;
    assert_eq!(
        (s, b.as_str()),
        (StatusCode::GATEWAY_TIMEOUT, "upstream request timeout")
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let (s, b) = get("/fast").await;
    assert_eq!((s, b.as_str()), (StatusCode::OK, "app:/fast"));
}
