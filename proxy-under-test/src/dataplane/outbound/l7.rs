//! The outbound L7 path of HTTP upstreams (`http`, `http2`, `grpc`) with a compiled chain: the
//! application speaks HTTP/1.1 (`http`) or h2c (`http2`/`grpc`) to the upstream listener, and
//! every request is routed on its own, with the newest snapshot (so a chain change applies to
//! the next request, also on an open keep-alive connection): route match, split, prefix
//! rewrite, header changes, circuit breaking, endpoint choice (failover, outlier ejection, load
//! balancing), retries with backoff, route timeout; the decision logic is the pure
//! [`crate::route`]; connections come from the shared [`pool`].
//!
//! Local replies as Envoy's: no endpoint 503 `no healthy upstream`; circuit breaker overflow 503
//! with `x-envoy-overloaded: true`; connect failures and resets (after retries) 503
//! `upstream connect error or disconnect/reset before headers`; route timeout 504
//! `upstream request timeout`; idle timeout 408 `stream timeout` (gRPC callers get the mapped
//! `grpc-status`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use http::{HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rand::Rng;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::dataplane::l7::app::{absolute, origin_form};
use crate::dataplane::l7::{Body, idle, reply};
use crate::dataplane::{Shared, flag_set};
use crate::route::retry::{Outcome, backoff};
use crate::route::{DEFAULT_TIMEOUT, RequestView, TOTAL_WEIGHT, rewrite};
use crate::snapshot::{Bind, Snapshot, Target, Upstream};

mod attempt;
pub(crate) mod pool;
mod replay;
pub(crate) mod state;

use self::attempt::{Attempt, send};
use self::replay::{BodyError, RequestBody};

/// Serves one local connection of upstream `name` at `bind` as L7.
pub(crate) async fn serve<S>(
    stream: S,
    name: String,
    bind: Bind,
    shared: Arc<Shared>,
    source: Option<SocketAddr>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Some(first) = shared.current() else {
        return;
    };
    let pinned = first.hooks.pin_routes().then(|| first.clone());
    let ctx = Arc::new(Ctx {
        shared: shared.clone(),
        name,
        bind,
        source,
        pinned,
    });
    let svc = service_fn(move |req| {
        let ctx = ctx.clone();
        // Boxed: the stream task hyper spawns per request stays small (its future is moved on
        // spawn and on completion; unboxed, those copies were a tenth of the HTTP/2 path's CPU).
        Box::pin(async move { ctx.handle(req).await })
    });
    let (stream, activity) = super::super::conn_idle::track(stream);
    let io = TokioIo::new(stream);
    let mut kill = shared.kill.clone();
    // Like Envoy's HTTP connection manager with codec AUTO: HTTP/1.1 or h2c (prior knowledge).
    // Half a request head cannot hold the application's connection either (as on the public
    // listener: `request_headers_timeout_ms`).
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(first.knobs.request_headers_timeout);
    let conn = builder.serve_connection(io, svc);
    let idle = first.knobs.idle_timeout;
    tokio::select! {
        res = conn => if let Err(e) = res { tracing::debug!(error = %e, "upstream HTTP connection ended") },
        () = flag_set(&mut kill) => {}
        () = activity.idle_for(idle) => {
            tracing::debug!("upstream HTTP connection idle: closed");
        }
    }
}

struct Ctx {
    shared: Arc<Shared>,
    name: String,
    bind: Bind,
    source: Option<SocketAddr>,
    /// The snapshot this connection keeps routing with (only when a hook pins it).
    pinned: Option<Arc<Snapshot>>,
}

const RESET_TEXT: &str = "upstream connect error or disconnect/reset before headers";

impl Ctx {
    async fn handle(&self, mut req: Request<Incoming>) -> Result<Response<Body>, BodyError> {
        let grpc = reply::is_grpc(req.headers());
        let local = |status, text| Ok(reply::local(grpc, status, text));
        let Some(snap) = self.pinned.clone().or_else(|| self.shared.current()) else {
            return local(StatusCode::SERVICE_UNAVAILABLE, "no configuration");
        };
        // Envoy's outbound connection manager keeps its default, SANITIZE: the application
        // cannot hand the destination an identity of its own making.
        if !snap.hooks.keep_app_xfcc() {
            req.headers_mut().remove("x-forwarded-client-cert");
        }
        let Some(up) = snap.upstream_at(&self.name, &self.bind) else {
            return local(StatusCode::SERVICE_UNAVAILABLE, "no healthy upstream");
        };
        forward(self, &snap, up, req, grpc).await
    }
}

/// The targets of `up` a request may go to, with the cluster's name: the decision's cluster, or
/// the upstream's targets without a chain.
fn cluster_targets<'a>(up: &'a Upstream, ids: Option<&[String]>) -> Vec<&'a Target> {
    match (up.l7.as_deref(), ids) {
        (Some(l7), Some(ids)) => ids.iter().filter_map(|id| l7.targets.get(id)).collect(),
        _ => up.targets.iter().collect(),
    }
}

async fn forward(
    ctx: &Ctx,
    snap: &Snapshot,
    up: &Upstream,
    req: Request<Incoming>,
    grpc: bool,
) -> Result<Response<Body>, BodyError> {
    let hooks = &snap.hooks;
    let local = |status, text| Ok(reply::local(grpc, status, text));
    let (mut parts, body) = req.into_parts();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().map(str::to_owned);
    let l7 = up.l7.as_deref();
    let decision = l7.and_then(|l7| {
        let view = RequestView {
            method: parts.method.as_str(),
            path: &path,
            query: query.as_deref(),
            headers: &parts.headers,
        };
        let index = hooks.route_index(&l7.routes, l7.routes.matching(&view))?;
        let roll = hooks.split_roll(rand::rng().random_range(0..TOTAL_WEIGHT));
        l7.routes.decide(index, roll)
    });
    if l7.is_some() && decision.is_none() {
        return local(StatusCode::NOT_FOUND, "route not found");
    }
    let route = decision.map(|d| d.route);
    let policy = route.map(|r| &r.policy);
    // Request: rewrite, then the split's header changes, then the route's.
    if let Some(new) = route
        .filter(|_| hooks.applies_prefix_rewrite())
        .and_then(|r| rewrite(r, &path, query.as_deref()))
        && let Ok(pq) = new.parse::<http::uri::PathAndQuery>()
    {
        let mut uri = parts.uri.clone().into_parts();
        uri.path_and_query = Some(pq);
        if let Ok(u) = http::Uri::from_parts(uri) {
            parts.uri = u;
        }
    }
    if hooks.applies_header_ops() {
        if let Some(s) = decision.and_then(|d| d.split) {
            s.request_headers.apply(&mut parts.headers);
        }
        if let Some(p) = policy {
            p.request_headers.apply(&mut parts.headers);
        }
    }
    strip_hop_by_hop(&mut parts.headers);
    let state = ctx.shared.l7_state(&up.name);
    let limits = l7.map(|l| l.limits).unwrap_or_default();
    let Some(_in_flight) =
        state.admit(hooks.in_flight_limit(limits.in_flight(up.protocol.is_h2())))
    else {
        let mut resp = reply::local(
            grpc,
            StatusCode::SERVICE_UNAVAILABLE,
            "upstream connect error or disconnect/reset before headers. reset reason: overflow",
        );
        resp.headers_mut()
            .insert("x-envoy-overloaded", HeaderValue::from_static("true"));
        return Ok(resp);
    };
    // Envoy's `stream_idle_timeout` (5 min by default; Consul sets none on the upstream
    // listener's connection manager): a request body silent that long fails the request with
    // `408 stream timeout`, as on the public listener.
    let (body, expired) = idle::limit(body, snap.knobs.stream_idle_timeout);
    let stalled = || expired.happened();
    let retry = policy.and_then(|p| p.retry.as_ref());
    let max_retries = hooks.max_retries(retry.map_or(0, |r| r.num_retries));
    let body = if max_retries > 0 {
        match RequestBody::buffered(body).await {
            Ok(b) => b,
            Err(_) if stalled() => return Ok(body_stalled(&up.name, grpc)),
            Err(e) => return Err(e),
        }
    } else {
        RequestBody::Streaming(Some(body))
    };
    let timeout = hooks.route_timeout(policy.and_then(|p| p.timeout).unwrap_or(DEFAULT_TIMEOUT));
    let idle = policy.and_then(|p| p.idle_timeout);
    let cluster = decision.map(|d| d.cluster);
    let targets = cluster_targets(up, cluster.map(|c| c.targets.as_slice()));
    let lb = cluster.map(|c| hooks.lb(&c.lb)).unwrap_or_default();
    let fresh = format!("{:016x}", rand::rng().random::<u64>());
    let (hash, cookie) = crate::route::lb::request_hash(
        &lb,
        crate::route::lb::HashInput {
            headers: &parts.headers,
            query: query.as_deref(),
            source: ctx.source.map(|s| s.ip()),
        },
        &fresh,
    );
    // The resolver's ConnectTimeout (as Envoy's cluster), else the knob, else the default.
    let connect_timeout = cluster
        .and_then(|c| c.connect_timeout)
        .or(snap.knobs.upstream_connect_timeout)
        .unwrap_or(up.connect_timeout);
    let outlier = l7.and_then(|l| hooks.outlier(l.outlier));
    let started = Instant::now();
    let deadline = timeout.map(|t| started + t);
    let h2 = up.protocol.is_h2();
    let mut body = body;
    let mut attempt_no = 0u32;
    let cluster_name = cluster.map_or(up.name.as_str(), |c| c.name.as_str());
    let resp = loop {
        let Some((target, ep)) = state.choose(cluster_name, &targets, &lb, hash) else {
            return local(StatusCode::SERVICE_UNAVAILABLE, "no healthy upstream");
        };
        let Some(this_body) = body.next_attempt() else {
            return local(StatusCode::SERVICE_UNAVAILABLE, RESET_TEXT);
        };
        let mut req = Request::from_parts(parts.clone(), this_body);
        req = if h2 {
            let mut r = absolute(req, Some(&up.name));
            *r.version_mut() = http::Version::HTTP_2;
            r
        } else {
            origin_form(req)
        };
        let key = state::key(target, ep);
        state.start(&key);
        let attempt = Attempt {
            pool: &ctx.shared.l7_pool,
            snap,
            target,
            ep,
            h2,
            connect_timeout,
        };
        let fut = Box::pin(send(attempt, req));
        let wait = match (deadline, idle) {
            (Some(d), Some(i)) => Some((d.min(Instant::now() + i), Instant::now() + i < d)),
            (Some(d), None) => Some((d, false)),
            (None, Some(i)) => Some((Instant::now() + i, true)),
            (None, None) => None,
        };
        let result = match wait {
            Some((at, is_idle)) => match tokio::time::timeout_at(at.into(), fut).await {
                Ok(r) => r,
                Err(_) => {
                    state.finish(&key, true, outlier.as_ref(), target.endpoints.len());
                    return if is_idle {
                        local(StatusCode::REQUEST_TIMEOUT, "stream timeout")
                    } else {
                        local(StatusCode::GATEWAY_TIMEOUT, "upstream request timeout")
                    };
                }
            },
            None => fut.await,
        };
        let outcome = match &result {
            Ok(r) => Outcome::Response(r.status().as_u16(), r.headers()),
            Err(attempt::Failure::Connect(_)) => Outcome::ConnectFailure,
            Err(attempt::Failure::Reset(_)) => Outcome::Reset,
        };
        let failed = !matches!(outcome, Outcome::Response(s, _) if s < 500);
        state.finish(&key, failed, outlier.as_ref(), target.endpoints.len());
        let again = attempt_no < max_retries && retry.is_some_and(|r| r.retriable(outcome));
        if !again {
            break result;
        }
        attempt_no += 1;
        tracing::debug!(upstream = %up.name, attempt = attempt_no, "retrying");
        let pause = backoff(attempt_no, rand::rng().random::<f64>());
        if deadline.is_some_and(|d| Instant::now() + pause >= d) {
            break result;
        }
        tokio::time::sleep(pause).await;
    };
    let mut resp = match resp {
        Ok(r) => r,
        Err(attempt::Failure::Reset(_)) if stalled() => return Ok(body_stalled(&up.name, grpc)),
        Err(attempt::Failure::Reset(e)) if h2 && attempt_no == 0 => {
            return Err(BodyError(Box::new(e)));
        }
        Err(attempt::Failure::Connect(e)) => {
            tracing::warn!(upstream = %up.name, error = %e, "upstream connect failure");
            return local(
                StatusCode::SERVICE_UNAVAILABLE,
                "upstream connect error or disconnect/reset before headers. reset reason: connection failure",
            );
        }
        Err(attempt::Failure::Reset(e)) => {
            tracing::warn!(upstream = %up.name, error = %e, "upstream reset");
            return local(StatusCode::SERVICE_UNAVAILABLE, RESET_TEXT);
        }
    };
    if hooks.applies_header_ops() {
        if let Some(s) = decision.and_then(|d| d.split) {
            s.response_headers.apply(resp.headers_mut());
        }
        if let Some(p) = policy {
            p.response_headers.apply(resp.headers_mut());
        }
    }
    if let Some(c) = cookie.and_then(|c| HeaderValue::try_from(c).ok()) {
        resp.headers_mut().append(http::header::SET_COOKIE, c);
    }
    Ok(resp.map(|b| snap.hooks.response_body(b)))
}

/// The answer when the application stopped sending a request body for `stream_idle_timeout_ms`.
fn body_stalled(upstream: &str, grpc: bool) -> Response<Body> {
    tracing::info!(%upstream, "HTTP request abandoned: the application stopped sending its body");
    idle::timed_out(grpc)
}

/// Removes the connection-specific headers a proxy does not forward.
fn strip_hop_by_hop(h: &mut http::HeaderMap) {
    for name in ["connection", "keep-alive", "proxy-connection", "upgrade"] {
        h.remove(name);
    }
    if h.get(http::header::TE).is_some_and(|v| v != "trailers") {
        h.remove(http::header::TE);
    }
}
