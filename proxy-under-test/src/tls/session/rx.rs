//! The receive half: ciphertext read in big chunks into one buffer, records opened in place,
//! their plaintext queued as ranges where it lies; alerts (close_notify = end of stream),
//! TLS 1.3 KeyUpdate (new keys from rustls; a requested update is flagged for the send half)
//! and session tickets (ignored: we never resume) handled on the way.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};

use super::record::{MAX_RECORD, Opener, Version, content};
use super::{Kernel, SessionError};

/// Initial buffer: one whole record and a read's worth more.
const RX_START: usize = MAX_RECORD + 16 * 1024;
/// The buffer of a bulk transfer (a read that filled the buffer grows it to this): as big as
/// the send half's batch, so one read takes what the peer sent in one write.
const RX_MAX: usize = 512 * 1024;
/// A read gets at least this much space (else the partial record left is moved to the front).
const MIN_READ: usize = 16 * 1024;

/// TLS 1.3 handshake types after the handshake.
const NEW_SESSION_TICKET: u8 = 4;
const KEY_UPDATE: u8 = 24;
/// TLS 1.2 HelloRequest (renegotiation; ignored).
const HELLO_REQUEST: u8 = 0;

pub(crate) struct Rx {
    opener: Opener,
    buf: Vec<u8>,
    /// Start of the first record not opened yet.
    parsed: usize,
    /// End of the bytes read.
    filled: usize,
    /// Plaintext ready, in order, inside `buf`.
    plain: VecDeque<Range<usize>>,
    /// A post-handshake message split over records.
    hs: Vec<u8>,
    /// The peer's close_notify arrived: end of stream.
    pub(crate) close_notify: bool,
    failed: Option<SessionError>,
    /// The peer asked for our KeyUpdate (the send half sends it).
    pub(crate) key_update_due: bool,
    /// Bytes read from the socket so far.
    read: u64,
}

impl Rx {
    /// Starts with the plaintext rustls already decrypted and the bytes read past the handshake.
    pub(crate) fn new(opener: Opener, early: &[u8], leftover: &[u8], close_notify: bool) -> Self {
        let len = RX_START.max(early.len() + leftover.len() + MAX_RECORD);
        let mut buf = vec![0; len];
        buf[..early.len()].copy_from_slice(early);
        buf[early.len()..early.len() + leftover.len()].copy_from_slice(leftover);
        let mut plain = VecDeque::new();
        if !early.is_empty() {
            plain.push_back(0..early.len());
        }
        Self {
            opener,
            buf,
            parsed: early.len(),
            filled: early.len() + leftover.len(),
            plain,
            hs: Vec::new(),
            close_notify,
            failed: None,
            key_update_due: false,
            read: 0,
        }
    }

    /// Bytes read from the socket so far.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.read
    }

    /// The buffer grew past its starting size.
    pub(crate) fn is_big(&self) -> bool {
        self.buf.len() > RX_START
    }

    /// Back to the starting size, unless bytes are still held (plaintext not written out, or a
    /// partial record).
    pub(crate) fn shrink(&mut self) {
        if self.plain.is_empty() && self.parsed == self.filled && self.is_big() {
            self.buf = vec![0; RX_START];
            self.parsed = 0;
            self.filled = 0;
        }
    }

    pub(crate) fn has_plain(&self) -> bool {
        !self.plain.is_empty()
    }

    /// The queued plaintext as slices for a vectored write; how many were set.
    pub(crate) fn io_slices<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut k = 0;
        for (d, r) in dst.iter_mut().zip(&self.plain) {
            *d = IoSlice::new(&self.buf[r.clone()]);
            k += 1;
        }
        k
    }

    /// Drops the first `n` plaintext bytes (written out).
    pub(crate) fn consume(&mut self, mut n: usize) {
        while n > 0 {
            let Some(r) = self.plain.front_mut() else {
                return;
            };
            let take = n.min(r.len());
            r.start += take;
            n -= take;
            if r.start == r.end {
                self.plain.pop_front();
            }
        }
    }

    /// Copies queued plaintext into `out`.
    pub(crate) fn read_into(&mut self, out: &mut ReadBuf<'_>) {
        while out.remaining() > 0 {
            let Some(r) = self.plain.front() else {
                return;
            };
            let take = out.remaining().min(r.len());
            out.put_slice(&self.buf[r.start..r.start + take]);
            self.consume(take);
        }
    }

    /// Plaintext queued (`true`), the end of the stream (`false`), or the error that ended it.
    pub(crate) fn poll_plain<IO: AsyncRead + Unpin>(
        &mut self,
        cx: &mut Context<'_>,
        io: &mut IO,
        kernel: &mut Kernel,
    ) -> Poll<io::Result<bool>> {
        loop {
            if self.has_plain() {
                return Poll::Ready(Ok(true));
            }
            if self.close_notify {
                return Poll::Ready(Ok(false));
            }
            if let Some(e) = &self.failed {
                return Poll::Ready(Err(e.to_io()));
            }
            if let Err(e) = self.open_all(kernel) {
                let err = e.to_io();
                self.failed = Some(e);
                return Poll::Ready(Err(err));
            }
            if self.has_plain() || self.close_notify {
                continue;
            }
            if ready!(self.poll_fill(cx, io))? == 0 {
                self.failed = Some(SessionError::Truncated);
            }
        }
    }

    /// The fatal alert the receive error owes the peer, if the half failed with one.
    pub(crate) fn alert_owed(&self) -> Option<rustls::AlertDescription> {
        self.failed.as_ref()?.alert()
    }

    /// Reads what the socket holds after the unopened bytes (only with no plaintext queued).
    fn poll_fill<IO: AsyncRead + Unpin>(
        &mut self,
        cx: &mut Context<'_>,
        io: &mut IO,
    ) -> Poll<io::Result<usize>> {
        debug_assert!(self.plain.is_empty());
        if self.parsed == self.filled {
            self.parsed = 0;
            self.filled = 0;
        } else if self.buf.len() - self.filled < MIN_READ {
            self.buf.copy_within(self.parsed..self.filled, 0);
            self.filled -= self.parsed;
            self.parsed = 0;
        }
        let mut rb = ReadBuf::new(&mut self.buf[self.filled..]);
        let space = rb.remaining();
        ready!(Pin::new(io).poll_read(cx, &mut rb))?;
        let n = rb.filled().len();
        self.filled += n;
        self.read += n as u64;
        if n == space && self.buf.len() < RX_MAX {
            self.buf.resize(RX_MAX, 0);
        }
        Poll::Ready(Ok(n))
    }

    /// Opens every complete record read, up to a close_notify.
    pub(crate) fn open_all(&mut self, kernel: &mut Kernel) -> Result<(), SessionError> {
        while !self.close_notify {
            let avail = &self.buf[self.parsed..self.filled];
            let Some(len) = Opener::record_len(avail)? else {
                return Ok(());
            };
            if avail.len() < len {
                return Ok(());
            }
            let at = self.parsed;
            let (typ, r) = self.opener.open(&mut self.buf[at..at + len])?;
            let r = at + r.start..at + r.end;
            self.parsed += len;
            match typ {
                content::APPLICATION_DATA => {
                    if !self.hs.is_empty() {
                        return Err(SessionError::Decode("data inside a handshake message"));
                    }
                    if r.start < r.end {
                        self.plain.push_back(r);
                    }
                }
                content::ALERT => self.alert(&r)?,
                content::HANDSHAKE => {
                    self.hs.extend_from_slice(&self.buf[r]);
                    self.handshake(kernel)?;
                }
                other => return Err(SessionError::UnexpectedMessage(other)),
            }
        }
        Ok(())
    }

    fn alert(&mut self, r: &Range<usize>) -> Result<(), SessionError> {
        let [level, desc] = self.buf[r.clone()] else {
            return Err(SessionError::Decode("alert of the wrong length"));
        };
        match desc {
            0 => self.close_notify = true,
            // user_canceled, and TLS 1.2 warnings: ignored, as rustls does.
            90 => {}
            _ if level == 1 && self.opener.version() == Version::Tls12 => {}
            _ => return Err(SessionError::PeerAlert(desc.into())),
        }
        Ok(())
    }

    fn handshake(&mut self, kernel: &mut Kernel) -> Result<(), SessionError> {
        while let [typ, a, b, c, ..] = self.hs[..] {
            let len = u32::from_be_bytes([0, a, b, c]) as usize;
            if len > 64 * 1024 {
                return Err(SessionError::Decode("handshake message too long"));
            }
            if self.hs.len() < 4 + len {
                return Ok(());
            }
            match (self.opener.version(), typ) {
                (Version::Tls13, KEY_UPDATE) => {
                    if len != 1 || self.hs.len() != 5 {
                        return Err(SessionError::Decode("KeyUpdate"));
                    }
                    let requested = match self.hs[4] {
                        0 => false,
                        1 => true,
                        _ => return Err(SessionError::Decode("KeyUpdate request")),
                    };
                    let (seq, secrets) = kernel.update_rx()?;
                    self.opener.rekey(seq, &secrets)?;
                    self.key_update_due |= requested;
                }
                (Version::Tls13, NEW_SESSION_TICKET) | (Version::Tls12, HELLO_REQUEST)
                    if kernel.is_client() => {}
                _ => return Err(SessionError::UnexpectedMessage(content::HANDSHAKE)),
            }
            self.hs.drain(..4 + len);
        }
        Ok(())
    }
}
