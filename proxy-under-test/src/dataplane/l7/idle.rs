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
use http_body_util::BodyExt;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::app::AppBody;
use super::{Body, reply};

/// A request body that fails once it has been silent for `limit`.
pub(crate) struct IdleBody<B> {
    inner: B,
    limit: Duration,
    /// When the last frame came (the wrap, to begin with).
    last: Instant,
    /// Armed only while a frame is awaited: a body that is already there (or has none) costs
    /// no timer work.
    timer: Option<Pin<Box<Sleep>>>,
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

/// `body` as the application clients send it, failing after `limit` without a frame (never,
/// without a limit); whether it did.
pub(crate) fn limit<B>(body: B, limit: Option<Duration>) -> (AppBody, Expired)
where
    B: HttpBody<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match limit {
        Some(limit) => {
            let (b, expired) = wrap(body, limit);
            (b.boxed_unsync(), expired)
        }
        None => (body.map_err(Into::into).boxed_unsync(), Expired::default()),
    }
}

/// `body`, failing after `limit` without a frame.
fn wrap<B>(body: B, limit: Duration) -> (IdleBody<B>, Expired) {
    let expired = Expired::default();
    let body = IdleBody {
        inner: body,
        limit,
        last: Instant::now(),
        timer: None,
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
                this.last = Instant::now();
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                let due = this.last + this.limit;
                let timer = match &mut this.timer {
                    Some(t) => {
                        if t.deadline() != due {
                            t.as_mut().reset(due);
                        }
                        t
                    }
                    None => this.timer.insert(Box::pin(tokio::time::sleep_until(due))),
                };
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        this.expired.store(true, Ordering::Release);
                        Poll::Ready(Some(Err(Box::new(BodyIdle(this.limit)))))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
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

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http_body_util::BodyExt;
    use tokio::sync::mpsc;

    use super::*;

    /// A body whose frames come from a channel.
    struct Chan(mpsc::Receiver<Bytes>);

    impl HttpBody for Chan {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
        }
    }

    /// Frames postpone the timeout; silence ends the body with an error exactly a limit after
    /// the last frame (paused clock).
    #[tokio::test(start_paused = true)]
    async fn silence_ends_the_body_a_limit_after_the_last_frame() {
        let (tx, rx) = mpsc::channel(4);
        let limit = Duration::from_secs(10);
        let (mut body, expired) = wrap(Chan(rx), limit);
        let start = Instant::now();
        let feeder = tokio::spawn(async move {
            for _ in 0..3 {
                tokio::time::sleep(Duration::from_secs(9)).await;
                tx.send(Bytes::from_static(b"x")).await.unwrap();
            }
            tokio::time::sleep(Duration::from_secs(3600)).await;
        });
        for _ in 0..3 {
            assert!(body.frame().await.unwrap().unwrap().is_data());
            assert!(!expired.happened());
        }
        let err = body.frame().await.unwrap().unwrap_err();
        assert!(err.to_string().contains("idle"), "{err}");
        assert!(expired.happened());
        assert_eq!(start.elapsed(), Duration::from_secs(27) + limit);
        feeder.abort();
    }

    /// A body that is complete when wrapped ends normally and never arms a timer.
    #[tokio::test(start_paused = true)]
    async fn a_complete_body_needs_no_timer() {
        let (body, expired) = wrap(
            http_body_util::Full::new(Bytes::from_static(b"whole")),
            Duration::from_secs(1),
        );
        let mut body = body;
        assert_eq!(
            body.frame().await.unwrap().unwrap().into_data().unwrap(),
            "whole"
        );
        assert!(body.frame().await.is_none());
        assert!(body.timer.is_none());
        assert!(!expired.happened());
    }
}
