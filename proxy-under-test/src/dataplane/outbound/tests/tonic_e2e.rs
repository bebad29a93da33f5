//! A tonic gRPC client and a tonic gRPC server that know nothing of the mesh, talking through
//! two reference proxies: client (h2c) → `web`'s upstream listener → mTLS → `db`'s public
//! listener → h2c → server. Per-method intentions are enforced on every call; the server's own
//! statuses and messages come back intact.

use bytes::{Buf, BufMut, Bytes};
use http::uri::PathAndQuery;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{Code, Status};

use super::h2::web_snapshot;
use crate::authz::Intention;
use crate::dataplane::DataPlane;
use crate::knobs::Protocol;
use crate::metrics::Metrics;
use crate::testutil::TestCa;
use crate::testutil::h2::{grpc_method_only, start};

/// Messages are raw bytes (no codegen needed).
#[derive(Debug, Clone, Copy, Default)]
struct RawCodec;
struct RawEnc;
struct RawDec;

impl Encoder for RawEnc {
    type Item = Bytes;
    type Error = Status;
    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawDec {
    type Item = Bytes;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawEnc;
    type Decoder = RawDec;
    fn encoder(&mut self) -> RawEnc {
        RawEnc
    }
    fn decoder(&mut self) -> RawDec {
        RawDec
    }
}

/// Unary: answers `echo:<message>`, or FAILED_PRECONDITION `no <message>` for `fail`.
#[derive(Clone, Copy)]
struct Echo;

impl tonic::server::UnaryService<Bytes> for Echo {
    type Response = Bytes;
    type Future = std::future::Ready<Result<tonic::Response<Bytes>, Status>>;
    fn call(&mut self, req: tonic::Request<Bytes>) -> Self::Future {
        let msg = req.into_inner();
        std::future::ready(if &msg[..] == b"fail" {
            Err(Status::failed_precondition("no fail"))
        } else {
            let mut out = b"echo:".to_vec();
            out.extend_from_slice(&msg);
            Ok(tonic::Response::new(Bytes::from(out)))
        })
    }
}

async fn tonic_server() -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            tokio::spawn(async move {
                let svc = service_fn(|req: http::Request<hyper::body::Incoming>| async move {
                    let mut grpc = tonic::server::Grpc::new(RawCodec);
                    Ok::<_, std::convert::Infallible>(grpc.unary(Echo, req).await)
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn tonic_client_and_server_through_two_proxies() {
    let ca = TestCa::new("Consul CA 1");
    let server = tonic_server().await;
    let ixns = vec![Intention::l7(
        "web",
        "db",
        grpc_method_only("/pkg.Svc/Call"),
    )];
    let (_db_tx, db) = start(&Metrics::new(), &ca, server, Protocol::Grpc, ixns).await;
    let (_web_tx, rx) = tokio::sync::watch::channel(Some(std::sync::Arc::new(web_snapshot(
        &ca,
        db.inbound_addr(),
    ))));
    let web = DataPlane::new(rx).start().await.unwrap();
    let channel = tonic::transport::Endpoint::from_shared(format!(
        "http://{}",
        web.upstream_addr("db").unwrap()
    ))
    .unwrap()
    .connect()
    .await
    .unwrap();
    let mut client = tonic::client::Grpc::new(channel);
    let mut unary = async |path: &'static str, msg: &'static [u8]| {
        client.ready().await.unwrap();
        client
            .unary(
                tonic::Request::new(Bytes::from_static(msg)),
                PathAndQuery::from_static(path),
                RawCodec,
            )
            .await
            .map(tonic::Response::into_inner)
    };
    assert_eq!(
        unary("/pkg.Svc/Call", b"hi").await.unwrap(),
        Bytes::from_static(b"echo:hi")
    );
    let failed = unary("/pkg.Svc/Call", b"fail").await.unwrap_err();
    assert_eq!(
        (failed.code(), failed.message()),
        (Code::FailedPrecondition, "no fail"),
        "the server's status passes through"
    );
    let denied = unary("/pkg.Svc/Other", b"hi").await.unwrap_err();
    assert_eq!(
        (denied.code(), denied.message()),
        (Code::PermissionDenied, "RBAC: access denied")
    );
    // Many calls on the one client connection, each authorized on its own.
    for i in 0..20 {
        let ok = unary("/pkg.Svc/Call", b"again").await;
        assert!(ok.is_ok(), "call {i}: {ok:?}");
    }
}
