//! The L4 relay between a [`TlsStream`] and a plain socket, without the copy buffers of
//! `copy_bidirectional`: ciphertext is read in big chunks, opened in place and the plaintext
//! written to the application with vectored writes straight from the receive buffer; plaintext
//! is read from the application straight into record slots, sealed in place, and many records
//! leave in one write. Both directions run in one future; each ends on its own (half-close:
//! the peer's close_notify shuts the application's write half, the application's EOF sends
//! close_notify and shuts the socket's write half), the relay when both have.

use std::future::poll_fn;
use std::io::{self, IoSlice, IoSliceMut};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

use super::stream::TlsStream;

/// Plaintext records written in one vectored write at most.
const MAX_SLICES: usize = 64;

/// A plain socket the relay reads plaintext from straight into record slots: one vectored
/// read (`readv`) fills several where the socket type has it, else one slot per read.
pub(crate) trait SlotRead: AsyncRead + AsyncWrite + Unpin {
    /// Reads into `slots` in order; bytes read (0: end of stream).
    fn poll_read_slots(
        &mut self,
        cx: &mut Context<'_>,
        slots: &mut [IoSliceMut<'_>],
    ) -> Poll<io::Result<usize>> {
        let Some(first) = slots.first_mut() else {
            return Poll::Ready(Ok(0));
        };
        let mut rb = ReadBuf::new(first);
        ready!(Pin::new(self).poll_read(cx, &mut rb))?;
        Poll::Ready(Ok(rb.filled().len()))
    }
}

/// A `readv` that filled less than the slots drained the socket's receive queue (a stream
/// socket returns short only when nothing more is queued), so the socket's readiness is cleared
/// with it, as tokio's own `poll_read` does: the next read waits for epoll's next edge instead
/// of making a `readv` that can only answer `EAGAIN` (one system call less per message on a
/// request/response stream). A readiness event that arrived meanwhile is kept (tokio clears
/// only the event it read before the call).
macro_rules! scatter {
    ($t:ty) => {
        impl SlotRead for $t {
            fn poll_read_slots(
                &mut self,
                cx: &mut Context<'_>,
                slots: &mut [IoSliceMut<'_>],
            ) -> Poll<io::Result<usize>> {
                let room: usize = slots.iter().map(|s| s.len()).sum();
                loop {
                    ready!(self.poll_read_ready(cx))?;
                    let mut short = 0;
                    let read = self.try_io(tokio::io::Interest::READABLE, || {
                        let n = self.try_read_vectored(slots)?;
                        if n > 0 && n < room {
                            // Reported as `WouldBlock` so that `try_io` clears the readiness.
                            short = n;
                            return Err(io::ErrorKind::WouldBlock.into());
                        }
                        Ok(n)
                    });
                    if short > 0 {
                        return Poll::Ready(Ok(short));
                    }
                    match read {
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        other => return Poll::Ready(other),
                    }
                }
            }
        }
    };
}

scatter!(TcpStream);
scatter!(UnixStream);
impl SlotRead for tokio::io::DuplexStream {}

impl<T: SlotRead + ?Sized> SlotRead for &mut T {
    fn poll_read_slots(
        &mut self,
        cx: &mut Context<'_>,
        slots: &mut [IoSliceMut<'_>],
    ) -> Poll<io::Result<usize>> {
        (**self).poll_read_slots(cx, slots)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Running,
    ShuttingDown,
    Done,
}

/// Relays until both directions ended; the first error ends it.
pub(crate) async fn relay<IO, A>(tls: &mut TlsStream<IO>, app: &mut A) -> io::Result<()>
where
    IO: AsyncRead + AsyncWrite + Unpin,
    A: SlotRead,
{
    let (mut down, mut up) = (Dir::Running, Dir::Running);
    poll_fn(|cx| {
        if down != Dir::Done && poll_down(cx, tls, app, &mut down)?.is_ready() {
            down = Dir::Done;
        }
        if up != Dir::Done && poll_up(cx, tls, app, &mut up)?.is_ready() {
            up = Dir::Done;
        }
        if down == Dir::Done && up == Dir::Done {
            Poll::Ready(Ok(()))
        } else {
            tls.shrink.poll(cx, &mut tls.rx, &mut tls.tx);
            Poll::Pending
        }
    })
    .await
}

/// Peer → application.
fn poll_down<IO, A>(
    cx: &mut Context<'_>,
    tls: &mut TlsStream<IO>,
    app: &mut A,
    state: &mut Dir,
) -> Poll<io::Result<()>>
where
    IO: AsyncRead + AsyncWrite + Unpin,
    A: SlotRead,
{
    loop {
        if *state == Dir::ShuttingDown {
            return Pin::new(&mut *app).poll_shutdown(cx);
        }
        if !tls.rx.has_plain() {
            match tls.rx.poll_plain(cx, &mut tls.io, &mut tls.kernel) {
                Poll::Ready(Ok(true)) => {}
                Poll::Ready(Ok(false)) => {
                    *state = Dir::ShuttingDown;
                    continue;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(tls.fail(cx, e))),
                Poll::Pending => {
                    ready!(Pin::new(&mut *app).poll_flush(cx))?;
                    return Poll::Pending;
                }
            }
        }
        let mut slices = [IoSlice::new(&[]); MAX_SLICES];
        let k = tls.rx.io_slices(&mut slices);
        let n = ready!(Pin::new(&mut *app).poll_write_vectored(cx, &slices[..k]))?;
        if n == 0 {
            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
        }
        tls.rx.consume(n);
    }
}

/// Application → peer.
fn poll_up<IO, A>(
    cx: &mut Context<'_>,
    tls: &mut TlsStream<IO>,
    app: &mut A,
    state: &mut Dir,
) -> Poll<io::Result<()>>
where
    IO: AsyncRead + AsyncWrite + Unpin,
    A: SlotRead,
{
    loop {
        if tls.tx.pending() {
            ready!(tls.tx.poll_drain(cx, &mut tls.io))?;
        }
        if *state == Dir::ShuttingDown {
            return Pin::new(&mut *tls).poll_shutdown(cx);
        }
        let ended =
            ready!(
                tls.tx
                    .poll_fill_from(cx, app, &mut tls.kernel, &mut tls.rx.key_update_due)
            )?;
        if ended {
            *state = Dir::ShuttingDown;
        }
    }
}
