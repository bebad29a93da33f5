//! Tests of the HTTP/2 probe against in-process h2/gRPC apps.

use std::collections::BTreeMap;

use super::*;
use crate::world::{AppBind, AppKind, start_app};

fn call(path: &str) -> GrpcCall {
    GrpcCall {
        path: path.into(),
        metadata: vec![("x-user".into(), "alice".into())],
        message: Bytes::from_static(b"ping"),
    }
}

#[tokio::test]
async fn concurrent_streams_on_one_h2c_connection_reach_the_app() {
    let app = start_app(AppKind::Http, AppBind::Loopback).await.unwrap();
    let c = connect_plain(&ListenAddr::Tcp(app.addr)).await.unwrap();
    let probe = HttpProbe {
        method: "GET".into(),
        path: "/data".into(),
        headers: BTreeMap::new(),
    };
    let got = c.http(&probe, 8).await;
    assert_eq!(got.len(), 8);
    assert!(got.iter().all(|r| r == &Ok(200)), "{got:?}");
    assert!(app.record.saw(b"GET http://db/data"));
    let text = describe(&got, |s| format!("HTTP {s}"));
    assert!(
        text.starts_with("8 streams on one connection: #1 HTTP 200"),
        "{text}"
    );
    assert!(c.closed.get().is_none());
}

#[tokio::test]
async fn grpc_calls_get_status_and_trailers() {
    let app = start_app(AppKind::Http, AppBind::Loopback).await.unwrap();
    let c = connect_plain(&ListenAddr::Tcp(app.addr)).await.unwrap();
    let got = c.grpc(&call("/conformance.Echo/Unary"), 3).await;
    for r in &got {
        let a = r.as_ref().unwrap();
        assert_eq!((a.http, a.code, a.messages), (200, 0, 1), "{a:?}");
        assert_eq!(a.trailers["x-conformance-trailer"], "kept");
        assert_eq!(a.trailers["x-conformance-path"], "/conformance.Echo/Unary");
        assert_eq!(a.trailers["x-conformance-served-by"], "app");
    }
    let unknown = c.grpc(&call("/conformance.Nope/Missing"), 1).await;
    assert_eq!(unknown[0].as_ref().unwrap().code, 12);
    assert!(app.record.saw(b"POST http://db/conformance.Echo/Unary"));
}

#[tokio::test]
async fn an_http1_only_server_is_not_http2() {
    // A listener that answers with HTTP/1.1 only: the HTTP/2 handshake or first stream fails.
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            let svc = hyper::service::service_fn(|_req| async {
                Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::new())))
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(s), svc)
                .await;
        }
    });
    let probe = HttpProbe {
        method: "GET".into(),
        path: "/".into(),
        headers: BTreeMap::new(),
    };
    let outcome = match connect_plain(&ListenAddr::Tcp(addr)).await {
        Err(e) => Err(e),
        Ok(c) => c.http(&probe, 1).await.remove(0),
    };
    assert!(outcome.is_err(), "{outcome:?}");
}
