//! L7 inbound over the terminated mTLS stream: HTTP/1.1 or HTTP/2 (ALPN `h2`, or prior
//! knowledge), told apart by the connection preface, for `http`, `http2` and `grpc` alike, as
//! Envoy's codec `AUTO` does. Every request (every
//! HTTP/2 stream) has its path normalized as Envoy does (`crate::normalize`), then is authorized
//! on its own against the newest snapshot's intentions, so a change
//! applies to the next request or stream on a connection that is already open (with the
//! request's JWTs verified first when intentions ask for them, `crate::jwt`); refused ones get
//! Envoy's RBAC answer (403 `RBAC: access denied`, or `grpc-status: 7` for gRPC calls), allowed
//! ones go to the local application ([`app`]: HTTP/1.1, or h2c for `http2`/`grpc`). Bodies,
//! trailers and flow control pass through hyper's streaming bodies; with
//! `local_request_timeout_ms` an answer whose headers do not come in time is replaced by Envoy's
//! `504 upstream request timeout`; a stream reset by the
//! application is reset towards the caller with the same reason, and one reset by the caller is
//! reset towards the application.

pub(crate) mod app;
mod framing;
pub(crate) mod idle;
pub(crate) mod reply;
pub(crate) mod xfcc;

use std::sync::Arc;

use bytes::Bytes;
use http::uri::PathAndQuery;
use http::{Request, Response, StatusCode, Uri};
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

use self::app::{AppClient, AppError};
use super::Shared;
use super::inbound::{Peer, log_end, supervise};
use crate::authz::RequestInfo;
use crate::knobs::Protocol;
use crate::mesh::Underscores;
use crate::normalize::PathAction;
use crate::seam::PerConnection;
use crate::snapshot::Snapshot;

pub(crate) type Body = BoxBody<Bytes, hyper::Error>;

struct Forwarder {
    shared: Arc<Shared>,
    peer: Peer,
    app: AppClient,
    /// What the request hooks keep for this connection.
    hooks: PerConnection,
    /// This connection's XFCC element.
    xfcc: xfcc::Element,
}

impl Forwarder {
    /// Answers one request (one stream). `Err` resets an HTTP/2 stream (the application reset
    /// its side); HTTP/1.1 never gets one.
    async fn handle(&self, mut req: Request<Incoming>) -> Result<Response<Body>, hyper::Error> {
        let grpc = reply::is_grpc(req.headers());
        let Some(snap) = self.shared.current() else {
            return Ok(reply::local(
                grpc,
                StatusCode::SERVICE_UNAVAILABLE,
                "no configuration",
            ));
        };
        if let Some(answer) = framing::refuse(&req) {
            return Ok(answer);
        }
        if let Some(answer) = underscores(&snap, grpc, &mut req) {
            return Ok(answer);
        }
        if let Some(answer) = normalize(&snap, grpc, &mut req) {
            return Ok(answer);
        }
        // Envoy's `jwt_authn` runs ahead of RBAC for every provider the intentions name.
        let providers = snap.intentions.jwt_providers();
        let jwt = if providers.is_empty() {
            None
        } else {
            snap.jwt.sanitize(&providers, req.headers_mut());
            Some(
                snap.jwt
                    .verify(&providers, req.headers(), req.uri().query())
                    .await,
            )
        };
        let decision = {
            let info = RequestInfo {
                method: req.method().as_str(),
                path: req.uri().path(),
                headers: req.headers(),
                jwt: jwt.as_ref().unwrap_or(&crate::jwt::NO_JWT),
            };
            snap.intentions
                .authorize_l7(&self.peer.id, &info, snap.default_policy)
        };
        let decision = snap.hooks.request_decision(&self.hooks, decision);
        self.shared.metrics.decision(decision.allowed);
        if !decision.allowed {
            tracing::info!(
                peer = %self.peer.addr, source = %self.peer.id, version = ?req.version(),
                method = %req.method(), path = req.uri().path(), grpc,
                reason = %decision.reason, "HTTP request denied"
            );
            return Ok(reply::local(grpc, StatusCode::FORBIDDEN, reply::DENIED));
        }
        tracing::debug!(
            source = %self.peer.id, version = ?req.version(), method = %req.method(),
            path = req.uri().path(), reason = %decision.reason, "HTTP request allowed"
        );
        if let Some(j) = &jwt {
            snap.jwt.finish(j, req.headers_mut());
        }
        let forward_xfcc = !snap.mesh.sanitize_xfcc && snap.knobs.protocol != Protocol::Grpc;
        let element = forward_xfcc
            .then(|| snap.leaf.certified.cert.first())
            .flatten()
            .and_then(|own| self.xfcc.get(own, &self.peer.chain));
        xfcc::apply(req.headers_mut(), element.as_ref());
        let (req, body) = framing::watch(req);
        let (parts, b) = req.into_parts();
        let (b, idle) = idle::limit(b, snap.knobs.inbound_idle_timeout());
        let req = Request::from_parts(parts, b);
        let sent = match snap.knobs.local_request_timeout {
            None => self.app.send(&snap, req).await,
            Some(limit) => match tokio::time::timeout(limit, self.app.send(&snap, req)).await {
                Ok(sent) => sent,
                Err(_) => {
                    // Envoy's route timeout (`local_request_timeout_ms`): 504, and the
                    // application connection that still owes the answer is not reused.
                    self.app.forget().await;
                    tracing::info!(app = %snap.local_app, ?limit, "local application did not answer in time");
                    return Ok(reply::local(
                        grpc,
                        StatusCode::GATEWAY_TIMEOUT,
                        "upstream request timeout",
                    ));
                }
            },
        };
        match sent {
            Ok(resp) => Ok(resp.map(|b| response_body(&snap, b))),
            Err(AppError::Request(e)) if idle.happened() => {
                self.app.forget().await;
                tracing::info!(error = %e, "HTTP request abandoned: the caller stopped sending its body");
                Ok(idle::timed_out(grpc))
            }
            Err(AppError::Request(e)) if body.failed() => {
                tracing::info!(error = %e, "HTTP request refused: its body could not be decoded");
                Ok(framing::bad_body())
            }
            Err(AppError::Request(e)) if snap.knobs.protocol.is_h2() => {
                tracing::info!(app = %snap.local_app, error = %e, "stream to the local application failed; resetting the caller's stream");
                Err(e)
            }
            Err(e) => {
                tracing::warn!(app = %snap.local_app, error = %e, "forwarding to the local application failed");
                Ok(reply::local(
                    grpc,
                    StatusCode::BAD_GATEWAY,
                    "upstream connect error",
                ))
            }
        }
    }
}

/// `headers_with_underscores_action` (the `mesh` entry's `HeadersWithUnderscoresAction`):
/// header names with `_` pass, make the request fail with 400, or are dropped.
fn underscores(snap: &Snapshot, grpc: bool, req: &mut Request<Incoming>) -> Option<Response<Body>> {
    if snap.mesh.underscores == Underscores::Allow {
        return None;
    }
    let named: Vec<http::HeaderName> = req
        .headers()
        .keys()
        .filter(|k| k.as_str().contains('_'))
        .cloned()
        .collect();
    if named.is_empty() {
        return None;
    }
    if snap.mesh.underscores == Underscores::RejectRequest {
        tracing::info!(header = %named[0], "HTTP request refused: header name with an underscore");
        return Some(reply::local(grpc, StatusCode::BAD_REQUEST, ""));
    }
    for name in named {
        req.headers_mut().remove(&name);
    }
    None
}

/// Normalizes the request's path as Envoy's connection manager does before any filter sees it
/// ([`crate::normalize`]), so authorization and the application see the same, normalized path;
/// a path Envoy refuses is answered here (400, or 307 to the unescaped path).
fn normalize(snap: &Snapshot, grpc: bool, req: &mut Request<Incoming>) -> Option<Response<Body>> {
    let raw = req.uri().path_and_query()?.as_str();
    match snap
        .hooks
        .path_normalization(snap.path_normalization)
        .apply(raw)
    {
        PathAction::Forward(path) if path == raw => None,
        PathAction::Forward(path) => {
            tracing::debug!(raw, normalized = %path, "request path normalized");
            let mut parts = req.uri().clone().into_parts();
            match path.parse::<PathAndQuery>() {
                Ok(pq) => parts.path_and_query = Some(pq),
                Err(_) => return Some(reply::local(grpc, StatusCode::BAD_REQUEST, "")),
            }
            match Uri::from_parts(parts) {
                Ok(uri) => {
                    *req.uri_mut() = uri;
                    None
                }
                Err(_) => Some(reply::local(grpc, StatusCode::BAD_REQUEST, "")),
            }
        }
        PathAction::Redirect(path) => Some(reply::redirect(&path)),
        PathAction::Reject(why) => {
            tracing::info!(
                path = raw,
                reason = why,
                "HTTP request refused: path normalization failed"
            );
            Some(reply::local(grpc, StatusCode::BAD_REQUEST, ""))
        }
    }
}

/// A response body as it is passed on (trailers included).
pub(crate) fn response_body(snap: &Snapshot, body: Incoming) -> Body {
    snap.hooks.response_body(body.boxed())
}

pub(crate) async fn serve(
    stream: crate::tls::session::TlsStream<super::inbound::Wire>,
    peer: Peer,
    snap: Arc<Snapshot>,
    shared: Arc<Shared>,
) {
    let fwd = Arc::new(Forwarder {
        shared: shared.clone(),
        peer: peer.clone(),
        app: AppClient::default(),
        hooks: PerConnection::default(),
        xfcc: xfcc::Element::default(),
    });
    let svc = service_fn(move |req| {
        let fwd = fwd.clone();
        // Boxed: the stream task hyper spawns per request stays small (its future is moved on
        // spawn and on completion; unboxed, those copies were a tenth of the HTTP/2 path's CPU).
        Box::pin(async move { fwd.handle(req).await })
    });
    let (stream, activity) = super::conn_idle::track(stream);
    let io = TokioIo::new(stream);
    // Envoy's connection manager with codec `AUTO`, whatever the protocol: HTTP/2 when the
    // caller opens with its preface (ALPN `h2`, or prior knowledge), HTTP/1.1 otherwise. A
    // caller that completed mTLS and then sends half a request cannot hold the connection: its
    // headers must be in within the timeout, or the connection is closed.
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(snap.knobs.request_headers_timeout);
    let conn = builder.serve_connection(io, svc);
    // No byte moving for `idle_timeout_ms` (an HTTP/2 caller stalled in a header block, a
    // connection with no stream) ends it, as Envoy's connection idle timeout does.
    let idle = snap.knobs.idle_timeout;
    let peer_addr = peer.addr;
    let conn = async move {
        tokio::select! {
            _ = conn => {}
            () = activity.idle_for(idle) => {
                tracing::debug!(peer = %peer_addr, "L7 connection idle: closed");
            }
        }
    };
    let end = supervise(&shared, &peer, &snap.knobs, false, conn).await;
    log_end(&shared, &peer, &end);
}

#[cfg(test)]
mod tests;
