//! The L7 side's client connections: to the local application (HTTP/1.1 for `http`, cleartext
//! HTTP/2 with prior knowledge for `http2`/`grpc`, one connection per inbound connection, redialed
//! when it closes) and the request rewriting HTTP/2 needs (absolute URI: `:scheme` and
//! `:authority`).

use http::uri::{Authority, Scheme};
use http::{HeaderValue, Request, Uri};
use hyper::body::Incoming;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;

/// A request body on its way to the application (the caller's, watched for bad framing and
/// for idleness).
pub(crate) type AppBody = UnsyncBoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Mutex;

use crate::dataplane::local::{self, AppConn};
use crate::snapshot::Snapshot;

/// Why a request could not be carried to the application.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AppError {
    /// No connection could be opened (502 / UNAVAILABLE for the caller).
    #[error("connect: {0}")]
    Connect(String),
    /// The request failed on an open connection (for HTTP/2: the stream was reset, which the
    /// caller passes on as a reset).
    #[error("request: {0}")]
    Request(#[from] hyper::Error),
}

/// The connection to the local application of one inbound connection.
#[derive(Default)]
pub(crate) struct AppClient {
    h1: Mutex<Option<http1::SendRequest<AppBody>>>,
    h2: Mutex<Option<http2::SendRequest<AppBody>>>,
}

impl AppClient {
    /// Sends `req` to the local application over the protocol `snap` says.
    pub(crate) async fn send(
        &self,
        snap: &Snapshot,
        req: Request<AppBody>,
    ) -> Result<http::Response<Incoming>, AppError> {
        if snap.knobs.protocol.is_h2() {
            let mut req = absolute(req, None);
            // A request the connection never sent (it had just closed) is retried once on a
            // fresh connection.
            for attempt in 0..2 {
                let mut sender = self.h2_sender(snap).await?;
                match sender.try_send_request(req).await {
                    Ok(resp) => return Ok(resp),
                    Err(mut e) => match e.take_message() {
                        Some(unsent) if attempt == 0 => {
                            self.h2.lock().await.take();
                            req = unsent;
                        }
                        _ => return Err(e.into_error().into()),
                    },
                }
            }
            return Err(AppError::Connect("application connection closed".into()));
        }
        // HTTP/1.1 (also for a caller that spoke HTTP/2, as Envoy's router does for an
        // HTTP/1.1 cluster): one request at a time on the connection, so the lock is held
        // throughout.
        let mut req = origin_form(req);
        chunk_unsized_body(&mut req);
        let mut guard = self.h1.lock().await;
        let reusable = match guard.as_mut() {
            Some(s) => s.ready().await.is_ok(),
            None => false,
        };
        if !reusable {
            let app = dial(snap).await?;
            let sender = match app {
                AppConn::Tcp(s) => handshake1(s).await,
                AppConn::Unix(s) => handshake1(s).await,
            };
            *guard = Some(sender.map_err(|e| AppError::Connect(e.to_string()))?);
        }
        let sender = guard
            .as_mut()
            .ok_or_else(|| AppError::Connect("no application connection".into()))?;
        Ok(sender.send_request(req).await?)
    }

    /// Drops the HTTP/1.1 connection (one that timed out owes an answer and cannot carry the
    /// next request); HTTP/2 streams are independent, so that connection stays.
    pub(crate) async fn forget(&self) {
        self.h1.lock().await.take();
    }

    /// A handle on the HTTP/2 connection (streams run concurrently; the lock is only held to
    /// (re)dial).
    async fn h2_sender(&self, snap: &Snapshot) -> Result<http2::SendRequest<AppBody>, AppError> {
        let mut guard = self.h2.lock().await;
        if let Some(s) = guard.as_mut()
            && s.ready().await.is_ok()
        {
            return Ok(s.clone());
        }
        let app = dial(snap).await?;
        let sender = match app {
            AppConn::Tcp(s) => handshake2(s).await,
            AppConn::Unix(s) => handshake2(s).await,
        }
        .map_err(|e| AppError::Connect(e.to_string()))?;
        *guard = Some(sender.clone());
        Ok(sender)
    }
}

async fn dial(snap: &Snapshot) -> Result<AppConn, AppError> {
    local::connect(&snap.local_app, snap.knobs.local_connect_timeout)
        .await
        .map_err(|e| AppError::Connect(e.to_string()))
}

/// An HTTP/1.1 client connection over `stream`; the connection task runs in the background.
async fn handshake1<S>(stream: S) -> Result<http1::SendRequest<AppBody>, hyper::Error>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// A cleartext HTTP/2 (prior knowledge) client connection over `stream`.
pub(crate) async fn handshake2<S, B>(stream: S) -> Result<http2::SendRequest<B>, hyper::Error>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    B: hyper::body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (sender, conn) = http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(stream))
        .await?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "HTTP/2 client connection ended");
        }
    });
    Ok(sender)
}

/// `req` with an absolute URI, as an HTTP/2 client must send it: scheme `http` unless known,
/// authority from the URI, else the `Host` header, else `fallback`, else `localhost`.
pub(crate) fn absolute<B>(mut req: Request<B>, fallback: Option<&str>) -> Request<B> {
    let uri = req.uri().clone();
    if uri.scheme().is_some() && uri.authority().is_some() {
        return req;
    }
    let authority = uri
        .authority()
        .cloned()
        .or_else(|| {
            req.headers()
                .get(http::header::HOST)
                .and_then(|h| h.to_str().ok())
                .and_then(|h| h.parse::<Authority>().ok())
        })
        .or_else(|| fallback.and_then(|f| f.parse::<Authority>().ok()))
        .unwrap_or_else(|| Authority::from_static("localhost"));
    let mut parts = uri.into_parts();
    parts.scheme = Some(parts.scheme.unwrap_or(Scheme::HTTP));
    parts.authority = Some(authority);
    if parts.path_and_query.is_none() {
        parts.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
    }
    if let Ok(u) = Uri::from_parts(parts) {
        *req.uri_mut() = u;
    }
    req
}

/// `req` as HTTP/1.1 sends it: an origin-form URI, the authority (from an HTTP/2 request) moved
/// to `Host`.
pub(crate) fn origin_form<B>(mut req: Request<B>) -> Request<B> {
    if let Some(auth) = req.uri().authority().cloned() {
        if !req.headers().contains_key(http::header::HOST)
            && let Ok(v) = HeaderValue::from_str(auth.as_str())
        {
            req.headers_mut().insert(http::header::HOST, v);
        }
        let pq = req
            .uri()
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/"));
        *req.uri_mut() = Uri::from(pq);
    }
    *req.version_mut() = http::Version::HTTP_11;
    req
}

/// A body of unknown length that came over HTTP/2 (any method) is sent chunked: hyper's
/// HTTP/1.1 client would drop a GET's body of unknown length, where Envoy's codec sends it
/// chunked.
fn chunk_unsized_body(req: &mut Request<AppBody>) {
    use hyper::body::Body as _;
    let h = req.headers();
    if req.body().is_end_stream()
        || req.body().size_hint().exact().is_some()
        || h.contains_key(http::header::CONTENT_LENGTH)
        || h.contains_key(http::header::TRANSFER_ENCODING)
    {
        return;
    }
    req.headers_mut().insert(
        http::header::TRANSFER_ENCODING,
        HeaderValue::from_static("chunked"),
    );
}
