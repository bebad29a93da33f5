//! The stream idle timeout of a request body (Envoy's `stream_idle_timeout`, 5 min by default,
//! or the route's `idle_timeout` that Consul sets from `local_idle_timeout_ms`): a caller that
//! sends the head of a request and then stops sending its body cannot hold the stream. When no
//! body frame has come for the timeout, the body fails, the request to the application is
//! abandoned, and the caller gets Envoy's `408 stream timeout` (the connection closed).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::{Body, reply};

/// A request body that fails once it has been silent for `limit`.
pub(crate) struct IdleBody<B> {
    inner: B,
    limit: Duration,
    timer: Pin<Box<Sleep>>,
    expired: Arc<AtomicBool>,
}

/// Whether a body wrapped by [`wrap`] timed out.
#[derive(Clone, Default)]
pub(crate) struct Expired(Arc<AtomicBool>);

impl Expired {
    /// The caller stopped sending the body for longer than the timeout.
    pub(crate) fn happened(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// `body`, failing after `limit` without a frame.
pub(crate) fn wrap<B>(body: B, limit: Duration) -> (IdleBody<B>, Expired) {
    let expired = Expired::default();
    let body = IdleBody {
        inner: body,
        limit,
        timer: Box::pin(tokio::time::sleep(limit)),
        expired: expired.0.clone(),
    };
    (body, expired)
}

/// The error a silent body ends with.
#[derive(Debug, thiserror::Error)]
#[error("request body idle for {0:?}")]
pub(crate) struct BodyIdle(Duration);

impl<B> HttpBody for IdleBody<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                let limit = this.limit;
                this.timer.as_mut().reset(Instant::now() + limit);
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => match this.timer.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.expired.store(true, Ordering::Release);
                    Poll::Ready(Some(Err(Box::new(BodyIdle(this.limit)))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Envoy's answer when the stream idle timeout fires before the response began.
pub(crate) fn timed_out(grpc: bool) -> Response<Body> {
    let mut resp = reply::local(grpc, StatusCode::REQUEST_TIMEOUT, "stream timeout");
    resp.headers_mut()
        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    resp
}
