//! What the harness's HTTP servers answer (the app behind the proxy over HTTP/1.1 or
//! cleartext HTTP/2, and gRPC instances over mTLS): plain HTTP gets `200` with the path as the
//! body; a gRPC request (`content-type: application/grpc`) gets its messages echoed, request
//! metadata `x-*` echoed as `echo-x-*` headers, and trailers `grpc-status`, `x-conformance-trailer
//! = kept`, the path, who served it and (instances) which service the client certificate named.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;

use crate::grpc;

/// The answer body (data, then trailers for gRPC).
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// Who answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Server {
    /// `app` or the instance id.
    pub(crate) served_by: String,
    /// The service the client certificate named (mTLS servers).
    pub(crate) client: Option<String>,
}

/// Whether `headers` make a gRPC request.
pub(crate) fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(grpc::CONTENT_TYPE))
}

/// Answers one request (one stream).
pub(crate) async fn answer(req: Request<Incoming>, server: &Server) -> Response<Body> {
    if is_grpc(req.headers()) {
        grpc_answer(req, server).await
    } else {
        let body = req.uri().path().to_owned();
        Response::builder()
            .status(200)
            .header("content-type", "text/plain")
            .body(Full::new(Bytes::from(body)).boxed())
            .unwrap_or_default()
    }
}

async fn grpc_answer(req: Request<Incoming>, server: &Server) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let echoed: Vec<(String, HeaderValue)> = req
        .headers()
        .iter()
        .filter(|(k, _)| k.as_str().starts_with("x-"))
        .map(|(k, v)| (format!("echo-{}", k.as_str()), v.clone()))
        .collect();
    let (code, body) = match req.into_body().collect().await {
        Err(e) => (13u32, Err(format!("request body failed: {e}"))),
        Ok(b) => match grpc::unframe(&b.to_bytes()) {
            Err(e) => (13, Err(e)),
            Ok(_) if !grpc::METHODS.contains(&path.as_str()) => {
                (12, Err(format!("unknown method {path}")))
            }
            Ok(msgs) => (0, Ok(msgs)),
        },
    };
    let mut data = Vec::new();
    let mut trailers = HeaderMap::new();
    let mut put = |k: &'static str, v: &str| {
        if let Ok(v) = HeaderValue::from_str(v) {
            trailers.insert(k, v);
        }
    };
    put("grpc-status", &code.to_string());
    match body {
        Ok(msgs) => msgs
            .iter()
            .for_each(|m| data.extend_from_slice(&grpc::frame(m))),
        Err(e) => put("grpc-message", &e),
    }
    put(grpc::TRAILER.0, grpc::TRAILER.1);
    put(grpc::TRAILER_PATH, &path);
    put(grpc::TRAILER_SERVED_BY, &server.served_by);
    if let Some(c) = &server.client {
        put(grpc::TRAILER_CLIENT, c);
    }
    let body = Full::new(Bytes::from(data))
        .with_trailers(async move { Some(Ok(trailers)) })
        .boxed();
    let mut resp = Response::builder()
        .status(200)
        .header("content-type", grpc::CONTENT_TYPE);
    for (k, v) in echoed {
        resp = resp.header(k, v);
    }
    resp.body(body).unwrap_or_default()
}
