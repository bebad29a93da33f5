//! HTTP/1.1 request framing as Envoy's codec enforces it before any filter sees the request:
//! a transfer coding other than exactly `chunked` is refused (hyper's parser already refuses one
//! whose last coding is not `chunked`; this also catches `gzip` then `chunked` on two lines), and
//! a chunked body that turns out malformed is answered 400 instead of being passed on as if the
//! caller had finished it ([`Watched`]). Each answer closes the connection (`connection: close`),
//! since the rest of the caller's bytes can no longer be framed. (`Content-Length` with
//! `Transfer-Encoding`, which Envoy refuses, never reaches here: hyper's parser keeps the chunked
//! framing, drops `Content-Length` and closes the connection after the answer.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http::{HeaderValue, Request, Response, StatusCode, Version};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::{Body, reply};

/// A 4xx for a request whose framing Envoy refuses; `None` for a well-framed one (and for
/// HTTP/2, whose frames carry the body's length).
pub(crate) fn refuse(req: &Request<Incoming>) -> Option<Response<Body>> {
    if req.version() > Version::HTTP_11 {
        return None;
    }
    let h = req.headers();
    let te = h.get_all(http::header::TRANSFER_ENCODING);
    let mut codings = te.iter();
    let first = codings.next()?;
    let only_chunked = codings.next().is_none()
        && first
            .to_str()
            .is_ok_and(|v| v.trim().eq_ignore_ascii_case("chunked"));
    if !only_chunked {
        tracing::info!(transfer_encoding = ?first, "HTTP request refused: unsupported transfer encoding");
        return Some(bad_body());
    }
    None
}

/// The answer to a request whose body cannot be framed or decoded: 400, connection closed.
pub(crate) fn bad_body() -> Response<Body> {
    let mut resp = reply::local(false, StatusCode::BAD_REQUEST, "Bad Request");
    resp.headers_mut()
        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// Whether the caller's request body failed to decode (set by the body [`watch`] returns).
#[derive(Clone, Default)]
pub(crate) struct Watched(Arc<AtomicBool>);

impl Watched {
    /// The request body failed: the caller's framing was bad, not the application.
    pub(crate) fn failed(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// `req` with its body boxed so that a decoding failure is remembered in the returned flag.
pub(crate) fn watch(req: Request<Incoming>) -> (Request<Body>, Watched) {
    let watched = Watched::default();
    let flag = watched.0.clone();
    let req = req.map(|body| {
        body.map_err(move |e| {
            flag.store(true, Ordering::Release);
            e
        })
        .boxed()
    });
    (req, watched)
}
