//! Upstream listeners for `http2`/`grpc` upstreams: the application speaks cleartext HTTP/2 with
//! prior knowledge (h2c); every stream is carried to an instance over mTLS with ALPN `h2` on one
//! pooled HTTP/2 connection per accepted local connection, dialed at the first stream (the
//! candidates in the usual order: round-robin, then failover targets) and redialed when it
//! closes. Bodies, trailers and flow control stream through; a reset from the instance resets
//! the application's stream with the same reason, and a reset from the application cancels the
//! instance's stream. No reachable instance answers 503 `no healthy upstream` (gRPC:
//! UNAVAILABLE).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Mutex;

use super::{candidates, dial};
use crate::dataplane::l7::app::{absolute, handshake2};
use crate::dataplane::l7::{Body, reply, response_body};
use crate::dataplane::{Shared, flag_set};
use crate::metrics::RefuseReason;
use crate::snapshot::{Bind, Snapshot, Upstream};

struct Pool {
    shared: Arc<Shared>,
    name: String,
    bind: Bind,
    conn: Mutex<Option<SendRequest<Incoming>>>,
}

impl Pool {
    async fn handle(&self, req: Request<Incoming>) -> Result<Response<Body>, hyper::Error> {
        let grpc = reply::is_grpc(req.headers());
        let unavailable = |text| Ok(reply::local(grpc, StatusCode::SERVICE_UNAVAILABLE, text));
        let Some(snap) = self.shared.current() else {
            return unavailable("no configuration");
        };
        let Some(up) = snap.upstream_at(&self.name, &self.bind) else {
            return unavailable("no healthy upstream");
        };
        tracing::debug!(upstream = %self.name, method = %req.method(), path = req.uri().path(), grpc, "upstream stream");
        let mut req = absolute(req, Some(&up.name));
        // A request the pooled connection never sent (it had just closed) is retried once on a
        // fresh connection.
        for attempt in 0..2 {
            let Some(mut sender) = self.sender(&snap, up).await else {
                return unavailable("no healthy upstream");
            };
            match sender.try_send_request(req).await {
                Ok(resp) => return Ok(resp.map(|b| response_body(&snap, b))),
                Err(mut e) => match e.take_message() {
                    Some(unsent) if attempt == 0 => {
                        tracing::debug!(upstream = %self.name, error = %e.error(), "pooled upstream connection closed; redialing");
                        self.conn.lock().await.take();
                        req = unsent;
                    }
                    _ => {
                        let e = e.into_error();
                        tracing::info!(upstream = %self.name, error = %e, "upstream stream failed; resetting the application's stream");
                        return Err(e);
                    }
                },
            }
        }
        unavailable("no healthy upstream")
    }

    /// The pooled connection, (re)dialed when there is none or it closed; `None` when no
    /// candidate answers.
    async fn sender(&self, snap: &Snapshot, up: &Upstream) -> Option<SendRequest<Incoming>> {
        let mut guard = self.conn.lock().await;
        if let Some(s) = guard.as_mut()
            && s.ready().await.is_ok()
        {
            return Some(s.clone());
        }
        let timeout = snap
            .knobs
            .upstream_connect_timeout
            .unwrap_or(up.connect_timeout);
        let start = self.shared.round_robin.fetch_add(1, Ordering::Relaxed);
        for (target, ep) in candidates(up, start) {
            let dialed = tokio::time::timeout(timeout, async {
                let tls = dial(snap, target, ep, true).await?;
                handshake2(tls).await.map_err(|e| format!("HTTP/2: {e}"))
            })
            .await;
            match dialed {
                Ok(Ok(s)) => {
                    tracing::debug!(upstream = %up.name, target = %target.id, endpoint = %ep.label, "upstream HTTP/2 connection open");
                    *guard = Some(s.clone());
                    return Some(s);
                }
                Ok(Err(e)) => {
                    tracing::warn!(upstream = %up.name, target = %target.id, endpoint = %ep.label, error = %e, "upstream endpoint refused");
                }
                Err(_) => {
                    tracing::warn!(upstream = %up.name, target = %target.id, endpoint = %ep.label, "upstream endpoint timed out");
                }
            }
        }
        self.shared.metrics.refused(RefuseReason::NoEndpoint);
        tracing::warn!(upstream = %up.name, "no healthy upstream endpoint could be reached");
        *guard = None;
        None
    }
}

/// Serves one local h2c connection accepted by upstream `name`'s listener at `bind`.
pub(crate) async fn serve<S>(stream: S, name: String, bind: Bind, shared: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let pool = Arc::new(Pool {
        shared: shared.clone(),
        name,
        bind,
        conn: Mutex::new(None),
    });
    let svc = service_fn(move |req| {
        let pool = pool.clone();
        async move { pool.handle(req).await }
    });
    let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(stream), svc);
    let mut kill = shared.kill.clone();
    tokio::select! {
        res = conn => if let Err(e) = res {
            tracing::debug!(error = %e, "upstream h2c connection ended");
        },
        () = flag_set(&mut kill) => {}
    }
}
