//! The request body of an attempt: streamed as it comes when the route cannot retry, or read
//! whole first (data and trailers) and replayed for every attempt when it can (as Envoy buffers
//! a retriable request).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body_util::BodyExt;
use hyper::body::{Frame, SizeHint};

use crate::dataplane::l7::app::AppBody;

/// A request body for one or more attempts.
pub(super) enum RequestBody {
    /// Not read yet; only one attempt can carry it.
    Streaming(Option<AppBody>),
    /// Read whole.
    Buffered(Bytes, Option<HeaderMap>),
}

/// Why a request body could not be read (or a request not be sent): the caller's stream is
/// reset with it.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub(super) struct BodyError(pub(super) Box<dyn std::error::Error + Send + Sync>);

impl RequestBody {
    /// `body` read whole.
    pub(super) async fn buffered(body: AppBody) -> Result<Self, BodyError> {
        let c = body.collect().await.map_err(BodyError)?;
        let trailers = c.trailers().cloned();
        Ok(Self::Buffered(c.to_bytes(), trailers))
    }

    /// The body of the next attempt; `None` once a streamed body was used.
    pub(super) fn next_attempt(&mut self) -> Option<AppBody> {
        match self {
            Self::Streaming(b) => b.take(),
            Self::Buffered(data, trailers) => Some(
                Replay {
                    data: (!data.is_empty()).then(|| data.clone()),
                    trailers: trailers.clone(),
                }
                .map_err(|never| match never {})
                .boxed_unsync(),
            ),
        }
    }
}

struct Replay {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl hyper::body::Body for Replay {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(d) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(d))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        let n = self.data.as_ref().map_or(0, |d| d.len() as u64);
        if self.trailers.is_none() {
            SizeHint::with_exact(n)
        } else {
            let mut h = SizeHint::new();
            h.set_lower(n);
            h
        }
    }
}
