//! Connection idle timeouts: a connection on which no byte has moved for the timeout is closed.
//!
//! - L7 listeners: Envoy's connection manager `common_http_protocol_options.idle_timeout` (1 h
//!   by default, which Consul leaves unset), so an HTTP/2 caller that stalls inside a header
//!   block, or holds a connection with no stream open, cannot keep it for ever. Envoy counts
//!   from the end of the last stream; counting from the last byte is the same for an idle
//!   connection and never later for a stalled one (a stream silent that long has already met
//!   the shorter `stream_idle_timeout`).
//! - L4 relays: Envoy's `tcp_proxy` `idle_timeout` (1 h by default; Consul's
//!   `makeTCPProxyFilter` sets none), the period in which no byte is sent or received on
//!   either connection. Every byte of a relay passes through its local side (the application
//!   on the public listener, the caller on an upstream listener), so that side is the one
//!   tracked.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use crate::tls::session::SlotRead;

/// When a byte last moved on a [`Tracked`] stream.
#[derive(Clone)]
pub(crate) struct Activity {
    start: Instant,
    /// Milliseconds since `start` of the last read or write that moved bytes.
    last_ms: Arc<AtomicU64>,
}

impl Activity {
    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }

    /// Resolves once no byte has moved for `limit`; never without a limit.
    pub(crate) async fn idle_for(&self, limit: Option<Duration>) {
        let Some(limit) = limit else {
            return std::future::pending().await;
        };
        loop {
            let due = self.last() + limit;
            if Instant::now() >= due {
                return;
            }
            tokio::time::sleep_until(due).await;
        }
    }
}

/// A stream that records when bytes move through it.
pub(crate) struct Tracked<S> {
    inner: S,
    activity: Activity,
}

/// Wraps `inner`; the [`Activity`] says when it last carried bytes (now, to begin with).
pub(crate) fn track<S>(inner: S) -> (Tracked<S>, Activity) {
    let activity = Activity {
        start: Instant::now(),
        last_ms: Arc::new(AtomicU64::new(0)),
    };
    (
        Tracked {
            inner,
            activity: activity.clone(),
        },
        activity,
    )
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(res, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        res
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(res, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        res
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(res, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        res
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<S: SlotRead> SlotRead for Tracked<S> {
    fn poll_read_slots(
        &mut self,
        cx: &mut Context<'_>,
        slots: &mut [std::io::IoSliceMut<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let res = self.inner.poll_read_slots(cx, slots);
        if matches!(res, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;
    use std::io::IoSliceMut;

    use tokio::io::AsyncWriteExt;

    use super::*;

    /// Reads through the relay's vectored path (`poll_read_slots`) count as activity, and the
    /// timeout runs from the last of them (paused clock: exact).
    #[tokio::test(start_paused = true)]
    async fn slot_reads_postpone_the_timeout_to_a_limit_after_the_last_byte() {
        let (near, mut far) = tokio::io::duplex(64);
        let (mut tracked, activity) = track(near);
        let start = Instant::now();
        let limit = Duration::from_secs(10);
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_secs(9)).await;
            far.write_all(b"x").await.unwrap();
            let mut buf = [0u8; 4];
            let n = poll_fn(|cx| tracked.poll_read_slots(cx, &mut [IoSliceMut::new(&mut buf)]))
                .await
                .unwrap();
            assert_eq!(n, 1);
        }
        activity.idle_for(Some(limit)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(27) + limit);
    }

    /// Writes count too, and a stream that never moves a byte times out a limit after it was
    /// wrapped.
    #[tokio::test(start_paused = true)]
    async fn writes_count_and_silence_from_the_start_times_out() {
        let (near, _far) = tokio::io::duplex(64);
        let (mut tracked, activity) = track(near);
        let start = Instant::now();
        let limit = Duration::from_secs(5);
        activity.idle_for(Some(limit)).await;
        assert_eq!(start.elapsed(), limit);
        tracked.write_all(b"y").await.unwrap();
        activity.idle_for(Some(limit)).await;
        assert_eq!(start.elapsed(), limit * 2);
    }
}
