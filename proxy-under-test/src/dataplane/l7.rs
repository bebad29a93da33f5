//! L7 inbound: HTTP/1.1 over the terminated mTLS stream. Every request is authorized against the
//! newest snapshot's intentions (so a change applies to the next request on a keep-alive
//! connection); refused requests get 403 `RBAC: access denied`, allowed ones are forwarded to the
//! local application over HTTP/1.1.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tokio_rustls::server::TlsStream;

use super::Shared;
use super::inbound::{Peer, log_end, supervise};
use super::local::{self, AppConn};
use crate::authz::RequestInfo;
use crate::snapshot::Snapshot;

type Body = BoxBody<Bytes, hyper::Error>;

/// Header carrying the authenticated caller to the application (Envoy's XFCC, URI only).
const XFCC: &str = "x-forwarded-client-cert";

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut resp = Response::new(
        Full::new(Bytes::from_static(body.as_bytes()))
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

struct Forwarder {
    shared: Arc<Shared>,
    peer: Peer,
    app: Mutex<Option<SendRequest<Incoming>>>,
    #[cfg(feature = "sabotage")]
    first_decision: std::sync::OnceLock<crate::authz::Decision>,
}

impl Forwarder {
    async fn handle(&self, mut req: Request<Incoming>) -> Response<Body> {
        let Some(snap) = self.shared.current() else {
            return text(StatusCode::SERVICE_UNAVAILABLE, "no configuration");
        };
        let decision = {
            let info = RequestInfo {
                method: req.method().as_str(),
                path: req.uri().path(),
                headers: req.headers(),
            };
            snap.intentions
                .authorize_l7(&self.peer.id, &info, snap.default_policy)
        };
        #[cfg(feature = "sabotage")]
        let decision = snap.sabotage.per_connection(&self.first_decision, decision);
        self.shared.metrics.decision(decision.allowed);
        if !decision.allowed {
            tracing::info!(
                peer = %self.peer.addr, source = %self.peer.id, method = %req.method(),
                path = req.uri().path(), reason = %decision.reason, "HTTP request denied"
            );
            return text(StatusCode::FORBIDDEN, "RBAC: access denied");
        }
        tracing::debug!(
            source = %self.peer.id, method = %req.method(), path = req.uri().path(),
            reason = %decision.reason, "HTTP request allowed"
        );
        req.headers_mut().remove(XFCC);
        if let Ok(v) = HeaderValue::from_str(&format!("URI={}", self.peer.id)) {
            req.headers_mut().insert(XFCC, v);
        }
        match self.forward(&snap, req).await {
            Ok(resp) => resp.map(BodyExt::boxed),
            Err(e) => {
                tracing::warn!(app = %snap.local_app, error = %e, "forwarding to the local application failed");
                text(StatusCode::BAD_GATEWAY, "upstream connect error")
            }
        }
    }

    async fn forward(
        &self,
        snap: &Snapshot,
        req: Request<Incoming>,
    ) -> Result<Response<Incoming>, String> {
        let mut guard = self.app.lock().await;
        let reusable = match guard.as_mut() {
            Some(s) => s.ready().await.is_ok(),
            None => false,
        };
        if !reusable {
            let app = local::connect(&snap.local_app, snap.knobs.local_connect_timeout)
                .await
                .map_err(|e| e.to_string())?;
            let sender = match app {
                AppConn::Tcp(s) => handshake(s).await,
                AppConn::Unix(s) => handshake(s).await,
            };
            *guard = Some(sender?);
        }
        let sender = guard.as_mut().ok_or("no application connection")?;
        sender.send_request(req).await.map_err(|e| e.to_string())
    }
}

/// An HTTP/1.1 client connection to the local application over `stream` (TCP or unix); the
/// connection task runs in the background.
async fn handshake<S>(stream: S) -> Result<SendRequest<Incoming>, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

pub(crate) async fn serve(
    stream: TlsStream<TcpStream>,
    peer: Peer,
    snap: Arc<Snapshot>,
    shared: Arc<Shared>,
) {
    let fwd = Arc::new(Forwarder {
        shared: shared.clone(),
        peer: peer.clone(),
        app: Mutex::new(None),
        #[cfg(feature = "sabotage")]
        first_decision: std::sync::OnceLock::new(),
    });
    let svc = service_fn(move |req| {
        let fwd = fwd.clone();
        async move { Ok::<_, std::convert::Infallible>(fwd.handle(req).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), svc);
    let end = supervise(&shared, &peer, &snap.knobs, false, conn).await;
    log_end(&shared, &peer, &end);
}

#[cfg(test)]
mod tests;
