//! gRPC end to end through agent-sim: `db`'s protocol comes from its `service-defaults`
//! (merged into the sidecar's config by the agent), the caller speaks HTTP/2 over the mTLS
//! connection (negotiated by ALPN, or with prior knowledge and no ALPN, as Envoy's AUTO codec
//! accepts), per-method permissions decide each stream, and an intention change applies to the
//! next stream on the same connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::json;
use tokio::net::TcpListener;

use super::support::*;

/// An h2c app answering every call with `grpc-status: 0` in its trailers and the path as body.
async fn grpc_app() -> (SocketAddr, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let conns = Arc::new(AtomicUsize::new(0));
    let count = conns.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let svc = service_fn(|req: Request<Incoming>| async move {
                let mut trailers = http::HeaderMap::new();
                trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
                let body = Full::new(Bytes::from(req.uri().path().to_owned()))
                    .with_trailers(async move { Some(Ok(trailers)) });
                let resp = Response::builder()
                    .header("content-type", "application/grpc")
                    .body(body)
                    .unwrap();
                Ok::<_, std::convert::Infallible>(resp)
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    (addr, conns)
}

/// An HTTP/2 connection through the proxy as `service`, offering ALPN `h2` or none.
async fn h2_client(w: &World, service: &str, alpn: bool) -> SendRequest<Full<Bytes>> {
    let mut probe = w.probe(service);
    if alpn {
        let mut cfg = (*probe.config).clone();
        cfg.alpn_protocols = vec![b"h2".to_vec()];
        probe.config = Arc::new(cfg);
    }
    let tls = probe.connect(w.public()).await.unwrap();
    let negotiated = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    assert_eq!(negotiated, alpn.then(|| b"h2".to_vec()));
    let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

/// One gRPC call; returns its `grpc-status` (headers of a trailers-only answer, else trailers).
async fn grpc_status(s: &mut SendRequest<Full<Bytes>>, path: &str) -> String {
    let req = Request::post(format!("https://db{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(Full::new(Bytes::from_static(b"\0\0\0\0\0")))
        .unwrap();
    s.ready().await.unwrap();
    let resp = s.send_request(req).await.unwrap();
    let (parts, body) = resp.into_parts();
    let collected = body.collect().await.unwrap();
    let status = parts
        .headers
        .get("grpc-status")
        .or_else(|| collected.trailers().and_then(|t| t.get("grpc-status")));
    status
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_methods_are_authorized_per_stream() {
    let (app, conns) = grpc_app().await;
    let w = World::with_app(sim_builder(), json!({}), app, conns).await;
    w.c()
        .upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "db", "Protocol": "grpc"}))
        .unwrap();
    let method = |m: &str| json!({"Action": "allow", "HTTP": {"PathExact": m}});
    w.c()
        .put_intention(
            "web",
            "db",
            &json!({"Permissions": [method("/pkg.Svc/Get")]}),
        )
        .unwrap();
    let proxy = w.proxy().await;
    let snap = proxy.snapshots();
    let mut rx = snap.clone();
    let grpc = rx.wait_for(|s| {
        s.as_ref()
            .is_some_and(|s| s.knobs.protocol == proxy_under_test::Protocol::Grpc)
    });
    tokio::time::timeout(PATIENCE, grpc)
        .await
        .expect("protocol grpc from the merged service-defaults")
        .unwrap();

    for alpn in [true, false] {
        let mut web = h2_client(&w, "web", alpn).await;
        assert_eq!(grpc_status(&mut web, "/pkg.Svc/Get").await, "0");
        assert_eq!(grpc_status(&mut web, "/pkg.Svc/Put").await, "7");
    }

    // Allow Put too: the next stream on an open connection follows.
    let mut web = h2_client(&w, "web", true).await;
    assert_eq!(grpc_status(&mut web, "/pkg.Svc/Put").await, "7");
    w.c()
        .put_intention(
            "web",
            "db",
            &json!({"Permissions": [method("/pkg.Svc/Get"), method("/pkg.Svc/Put")]}),
        )
        .unwrap();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while grpc_status(&mut web, "/pkg.Svc/Put").await != "0" {
        assert!(tokio::time::Instant::now() < deadline, "Put never allowed");
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(grpc_status(&mut web, "/pkg.Svc/Get").await, "0");
}
