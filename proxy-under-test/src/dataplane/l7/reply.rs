//! Local replies (answers the proxy makes itself: RBAC denial, no configuration, unreachable
//! application) shaped as Consul's Envoy shapes them: a `text/plain` body for HTTP, and for gRPC
//! requests (`content-type: application/grpc*`) a trailers-only response (`:status 200`,
//! `grpc-status` from Envoy's HTTP-to-gRPC status table, `grpc-message` = the text), which a gRPC
//! client reads as e.g. PERMISSION_DENIED for a 403.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};

use super::Body;

/// The text of an RBAC denial (Envoy's RBAC filter).
pub(crate) const DENIED: &str = "RBAC: access denied";

/// Whether a request is a gRPC call (Envoy's `Grpc::Common::isGrpcRequestHeaders`: the
/// content-type is `application/grpc` or starts with `application/grpc+`/`application/grpc;`).
pub(crate) fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            let ct = ct.to_ascii_lowercase();
            ct == "application/grpc"
                || ct.starts_with("application/grpc+")
                || ct.starts_with("application/grpc;")
        })
}

/// Envoy's `Grpc::Utility::httpToGrpcStatus`.
pub(crate) fn grpc_status_of(status: StatusCode) -> u8 {
    match status.as_u16() {
        400 => 13,             // INTERNAL
        401 => 16,             // UNAUTHENTICATED
        403 => 7,              // PERMISSION_DENIED
        404 => 12,             // UNIMPLEMENTED
        429 | 502..=504 => 14, // UNAVAILABLE
        _ => 2,                // UNKNOWN
    }
}

/// A local reply with `status` and `text`, as gRPC when `grpc`.
pub(crate) fn local(grpc: bool, status: StatusCode, text: &'static str) -> Response<Body> {
    if grpc {
        let mut resp = Response::new(empty());
        let h = resp.headers_mut();
        h.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
        h.insert(
            "grpc-status",
            HeaderValue::from(u16::from(grpc_status_of(status))),
        );
        h.insert("grpc-message", HeaderValue::from_static(text));
        return resp;
    }
    let mut resp = Response::new(
        Full::new(Bytes::from_static(text.as_bytes()))
            .map_err(|never| match never {})
            .boxed(),
    );
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain"),
    );
    resp
}

/// Envoy's answer for a path unescaped under `UNESCAPE_AND_REDIRECT`: 307 to the new path.
pub(crate) fn redirect(location: &str) -> Response<Body> {
    let mut resp = Response::new(empty());
    *resp.status_mut() = StatusCode::TEMPORARY_REDIRECT;
    if let Ok(v) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(http::header::LOCATION, v);
    }
    resp
}

fn empty() -> Body {
    Full::new(Bytes::new())
        .map_err(|never| match never {})
        .boxed()
}
