//! HTTP/2 and gRPC inbound: ALPN per protocol, per-stream authorization on one connection with
//! an intention change between streams, the 403 and `grpc-status: 7` answers, trailers, large
//! bodies both ways and stream resets in both directions.

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;

use crate::authz::Intention;
use crate::knobs::Protocol;
use crate::metrics::Metrics;
use crate::testutil::h2::*;
use crate::testutil::*;

#[tokio::test]
async fn alpn_follows_consuls_envoy_per_protocol() {
    let ca = TestCa::new("Consul CA 1");
    let (app, _) = h2_app().await;
    let both: Vec<Vec<u8>> = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    for (protocol, want) in [
        (Protocol::Tcp, None),
        (Protocol::Http, Some(&b"http/1.1"[..])),
        (Protocol::Http2, Some(&b"h2"[..])),
        (Protocol::Grpc, Some(&b"h2"[..])),
    ] {
        let (_tx, dp) = start(
            &Metrics::new(),
            &ca,
            app,
            protocol,
            vec![Intention::l4("web", "db", true)],
        )
        .await;
        let mut cfg =
            (*client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false)).clone();
        cfg.alpn_protocols = both.clone();
        let tls = connect(dp.inbound_addr(), Arc::new(cfg)).await.unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), want, "{protocol:?}");
    }
}

#[tokio::test]
async fn http1_callers_of_an_http2_service_reach_the_app_over_h2c() {
    let ca = TestCa::new("Consul CA 1");
    let (app, _) = h2_app().await;
    let (_tx, dp) = start(
        &Metrics::new(),
        &ca,
        app,
        Protocol::Http2,
        vec![Intention::l4("web", "db", true)],
    )
    .await;
    let mut cfg = (*client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false)).clone();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tls = connect(dp.inbound_addr(), Arc::new(cfg)).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    let req = http::Request::post("/x")
        .header("host", "db")
        .body(http_body_util::Full::new(bytes::Bytes::from_static(b"hi")))
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["x-seen-version"], "HTTP/2.0");
}

#[tokio::test]
async fn every_stream_is_authorized_on_its_own() {
    let ca = TestCa::new("Consul CA 1");
    let (app, _) = h2_app().await;
    let allowed = "/pkg.Svc/Allowed";
    let metrics = Metrics::new();
    let (tx, dp) = start(
        &metrics,
        &ca,
        app,
        Protocol::Grpc,
        vec![Intention::l7("web", "db", grpc_method_only(allowed))],
    )
    .await;
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let (mut c, alpn) = h2_tls_client(dp.inbound_addr(), cfg).await;
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));

    let ok = call(&mut c, allowed, true, body_of(b"ping")).await.unwrap();
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(&ok.body[..], b"ping");
    assert_eq!(ok.headers["x-seen-version"], "HTTP/2.0", "h2c to the app");
    assert_eq!(ok.headers["x-seen-path"], allowed);
    assert_eq!(ok.headers["x-seen-md"], "md-value", "metadata passes");
    assert_eq!(
        ok.headers["x-seen-xfcc"].to_str().unwrap(),
        "",
        "gRPC: Consul leaves Envoy at SANITIZE (includeXFCC && notGRPC)"
    );
    let t = ok.trailers.as_ref().expect("trailers");
    assert_eq!(
        (
            t["grpc-status"].to_str().unwrap(),
            t["x-custom-trailer"].to_str().unwrap()
        ),
        ("0", "kept")
    );

    // Another method on the same connection: refused as Envoy does for gRPC, trailers-only.
    let denied = call(&mut c, "/pkg.Svc/Other", true, body_of(b"ping"))
        .await
        .unwrap();
    assert_eq!(denied.status, StatusCode::OK);
    assert_eq!(denied.headers["grpc-status"], "7");
    assert_eq!(denied.headers["grpc-message"], "RBAC: access denied");
    assert_eq!(denied.headers["content-type"], "application/grpc");
    assert!(
        denied.body.is_empty() && denied.trailers.is_none(),
        "{denied:?}"
    );
    // Not a gRPC call: HTTP 403.
    let plain = call(&mut c, "/pkg.Svc/Other", false, body_of(b""))
        .await
        .unwrap();
    assert_eq!(plain.status, StatusCode::FORBIDDEN);
    assert_eq!(&plain.body[..], b"RBAC: access denied");

    // A stream opened (and authorized) before the change finishes after it, unaffected.
    let (feed, body) = chan_body();
    let mut c2 = c.clone();
    let inflight = tokio::spawn(async move { call(&mut c2, allowed, true, body).await });
    feed.send(Ok(bytes::Bytes::from_static(b"before ")))
        .await
        .unwrap();
    // Wait until the app has the stream open (its headers can only come after the body ends,
    // so wait on the decision counter instead).
    eventually(Duration::from_secs(10), || allowed_count(&metrics) >= 2).await;
    set_intentions(&tx, vec![Intention::l4("web", "db", false)]);
    let after = call(&mut c, allowed, true, body_of(b"ping")).await.unwrap();
    assert_eq!(
        after.get("grpc-status"),
        "7",
        "new stream follows the new rule"
    );
    feed.send(Ok(bytes::Bytes::from_static(b"after")))
        .await
        .unwrap();
    drop(feed);
    let done = inflight.await.unwrap().unwrap();
    assert_eq!(
        (done.status, &done.body[..]),
        (StatusCode::OK, &b"before after"[..])
    );
    assert_eq!(done.get("grpc-status"), "0");

    // Back to allow: the same connection serves the method again.
    set_intentions(
        &tx,
        vec![Intention::l7("web", "db", grpc_method_only(allowed))],
    );
    let again = call(&mut c, allowed, true, body_of(b"x")).await.unwrap();
    assert_eq!(again.get("grpc-status"), "0");
}

#[tokio::test]
async fn large_bodies_and_trailers_pass_both_ways_on_concurrent_streams() {
    let ca = TestCa::new("Consul CA 1");
    let (app, _) = h2_app().await;
    let (_tx, dp) = start(
        &Metrics::new(),
        &ca,
        app,
        Protocol::Http2,
        vec![Intention::l4("web", "db", true)],
    )
    .await;
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let (c, _) = h2_tls_client(dp.inbound_addr(), cfg).await;
    let big: Vec<u8> = (0..16 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    let big = Arc::new(big);
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let (mut c, big) = (c.clone(), big.clone());
        tasks.push(tokio::spawn(async move {
            call(&mut c, "/big", false, body_of(&big)).await
        }));
    }
    for t in tasks {
        let a = t.await.unwrap().unwrap();
        assert_eq!(a.status, StatusCode::OK);
        assert!(
            a.body.len() == big.len() && a.body[..] == big[..],
            "16 MiB echoed intact"
        );
        assert_eq!(a.trailers.unwrap()["x-custom-trailer"], "kept");
    }
}

#[tokio::test]
async fn stream_resets_propagate_both_ways() {
    let ca = TestCa::new("Consul CA 1");
    let (app, mut events) = h2_app().await;
    let (_tx, dp) = start(
        &Metrics::new(),
        &ca,
        app,
        Protocol::Grpc,
        vec![Intention::l4("web", "db", true)],
    )
    .await;
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let (mut c, _) = h2_tls_client(dp.inbound_addr(), cfg).await;

    // The app resets: the caller's stream is reset with the app's reason.
    let err = call(&mut c, "/reset", true, body_of(b"x"))
        .await
        .unwrap_err();
    assert!(err.contains("INTERNAL_ERROR"), "{err}");

    // The caller resets (its request body fails): the app sees its stream reset.
    let (feed, body) = chan_body();
    let mut c2 = c.clone();
    let held = tokio::spawn(async move { call(&mut c2, "/hold", true, body).await });
    feed.send(Ok(bytes::Bytes::from_static(b"part")))
        .await
        .unwrap();
    feed.send(Err(std::io::Error::other("caller gives up")))
        .await
        .unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), events.recv()).await;
    assert_eq!(seen.unwrap(), Some("reset"));
    held.abort();

    // Other streams on the connection are unaffected.
    let ok = call(&mut c, "/after", true, body_of(b"still"))
        .await
        .unwrap();
    assert_eq!((&ok.body[..], ok.get("grpc-status")), (&b"still"[..], "0"));
}

#[tokio::test]
async fn a_broken_connection_leaves_other_connections_streams_alone() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ca = TestCa::new("Consul CA 1");
    let (app, _) = h2_app().await;
    let ixns = vec![Intention::l7(
        "web",
        "db",
        grpc_method_only("/pkg.Svc/Allowed"),
    )];
    let (_tx, dp) = start(&Metrics::new(), &ca, app, Protocol::Grpc, ixns).await;
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let (mut good, _) = h2_tls_client(dp.inbound_addr(), cfg.clone()).await;
    let ok = call(&mut good, "/pkg.Svc/Allowed", true, body_of(b"1"))
        .await
        .unwrap();
    assert_eq!(ok.get("grpc-status"), "0");

    // Another connection sends the preface then a malformed frame: the proxy drops it.
    let mut h2cfg = (*cfg).clone();
    h2cfg.alpn_protocols = vec![b"h2".to_vec()];
    let mut bad = connect(dp.inbound_addr(), Arc::new(h2cfg)).await.unwrap();
    bad.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    // A SETTINGS frame with a length that is not a multiple of 6: FRAME_SIZE_ERROR.
    bad.write_all(&[0, 0, 5, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5])
        .await
        .unwrap();
    let mut sink = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), bad.read_to_end(&mut sink)).await;
    assert!(closed.is_ok(), "the broken connection is closed");

    // The good connection's next streams are decided as before, both ways.
    let ok = call(&mut good, "/pkg.Svc/Allowed", true, body_of(b"2"))
        .await
        .unwrap();
    assert_eq!((ok.get("grpc-status"), &ok.body[..]), ("0", &b"2"[..]));
    let no = call(&mut good, "/pkg.Svc/Other", true, body_of(b"3"))
        .await
        .unwrap();
    assert_eq!(no.get("grpc-status"), "7");
}
