//! [`TlsStream`]: a tokio `AsyncRead` + `AsyncWrite` over our record layer, with the accessors
//! the proxy reads after the handshake (peer chain, ALPN, version, suite). Shutdown sends
//! close_notify then shuts the socket's write half; reads after the peer's close_notify are EOF;
//! each direction closes on its own (half-close).

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use rustls::{ProtocolVersion, SupportedCipherSuite};
use rustls_pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::rx::Rx;
use super::shrink::Shrink;
use super::tx::Tx;
use super::{Kernel, SessionInfo};

/// A TLS connection over `IO` after the handshake.
pub(crate) struct TlsStream<IO> {
    pub(super) io: IO,
    pub(super) rx: Rx,
    pub(super) tx: Tx,
    pub(super) kernel: Kernel,
    pub(super) info: SessionInfo,
    /// Gives bulk-sized buffers back once the connection is quiet.
    pub(super) shrink: Shrink,
}

impl<IO> TlsStream<IO> {
    /// The peer's certificate chain (leaf first), if it presented one.
    pub(crate) fn peer_certificates(&self) -> Option<&[CertificateDer<'static>]> {
        self.info.peer_certificates.as_deref()
    }

    /// The application protocol selected by ALPN, if any.
    pub(crate) fn alpn_protocol(&self) -> Option<&[u8]> {
        self.info.alpn.as_deref()
    }

    /// The negotiated protocol version.
    pub(crate) fn protocol_version(&self) -> ProtocolVersion {
        self.info.version
    }

    /// The negotiated cipher suite.
    pub(crate) fn negotiated_cipher_suite(&self) -> SupportedCipherSuite {
        self.info.suite
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> TlsStream<IO> {
    /// After a receive error: the fatal alert it owes the peer (once: the alert closes the send
    /// half), sealed after whatever was still unsent and written as far as the socket takes it
    /// now (best effort: the connection ends with `err` whether or not the alert left). Returns
    /// `err`.
    pub(super) fn fail(&mut self, cx: &mut Context<'_>, err: io::Error) -> io::Error {
        if !self.tx.closed
            && let Some(desc) = self.rx.alert_owed()
            && self.tx.fatal(desc).is_ok()
        {
            let _ = self.tx.poll_drain(cx, &mut self.io);
        }
        err
    }

    /// Queues our KeyUpdate if the peer asked for one and tries to send it.
    fn answer_key_update(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if self.rx.key_update_due && !self.tx.closed {
            self.tx
                .before_record(&mut self.kernel, &mut self.rx.key_update_due)
                .map_err(|e| e.to_io())?;
            if let Poll::Ready(Err(e)) = self.tx.poll_drain(cx, &mut self.io) {
                return Err(e);
            }
        }
        Ok(())
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsStream<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let more = match this.rx.poll_plain(cx, &mut this.io, &mut this.kernel) {
            Poll::Pending => {
                this.shrink.poll(cx, &mut this.rx, &mut this.tx);
                return Poll::Pending;
            }
            Poll::Ready(r) => r.map_err(|e| this.fail(cx, e))?,
        };
        if more {
            this.rx.read_into(out);
        }
        this.answer_key_update(cx)?;
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsStream<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.tx.closed {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "TLS session already shut down",
            )));
        }
        if bufs.iter().all(|b| b.is_empty()) {
            return Poll::Ready(Ok(0));
        }
        if let Poll::Ready(Err(e)) = this.tx.poll_drain(cx, &mut this.io) {
            return Poll::Ready(Err(e));
        }
        if this.tx.congested() {
            return Poll::Pending;
        }
        let n = this
            .tx
            .seal_from(&mut this.kernel, &mut this.rx.key_update_due, bufs)
            .map_err(|e| e.to_io())?;
        if let Poll::Ready(Err(e)) = this.tx.poll_drain(cx, &mut this.io) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.answer_key_update(cx)?;
        ready!(this.tx.poll_drain(cx, &mut this.io))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.answer_key_update(cx)?;
        this.tx.close().map_err(|e| e.to_io())?;
        ready!(this.tx.poll_drain(cx, &mut this.io))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}
