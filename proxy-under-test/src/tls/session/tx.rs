//! The send half: plaintext sealed into records in place in one buffer (header and tag room
//! left around each payload), many records written at once; close_notify, the fatal alert a
//! receive error owes the peer, and TLS 1.3 KeyUpdate when the peer asks for one or before the
//! suite's confidentiality limit (TLS 1.2: the connection ends there instead).

use std::io::{self, IoSlice, IoSliceMut};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::AsyncWrite;

use super::record::{MAX_PLAINTEXT, Sealer, Version, content};
use super::relay::SlotRead;
use super::{Kernel, SessionError};

/// Records per buffer once a transfer is bulk: 512 KiB of plaintext read (`readv`) and sent
/// (one `send`) per wake-up. hop_bench, one stream: 4 records (64 KiB) 1,121 MB/s and 1.19
/// pair CPU-s/GB, 16 records 1,319 and 0.97, 32 records 1,437 and 0.87, 64 records about the
/// same as 32; the kernel's per-call costs (wake-ups, context switches) dominate on loopback.
const TX_RECORDS: usize = 32;

pub(crate) struct Tx {
    sealer: Sealer,
    buf: Vec<u8>,
    /// Sealed bytes not written yet: `buf[start..end]`.
    start: usize,
    end: usize,
    /// close_notify queued: nothing more may be sent.
    pub(crate) closed: bool,
    /// Bytes written to the socket so far.
    sent: u64,
}

impl Tx {
    pub(crate) fn new(sealer: Sealer) -> Self {
        let slot = sealer.prefix() + MAX_PLAINTEXT + sealer.suffix();
        Self {
            sealer,
            buf: vec![0; slot],
            start: 0,
            end: 0,
            closed: false,
            sent: 0,
        }
    }

    /// Test only: the sealer.
    #[cfg(test)]
    pub(crate) fn sealer_mut(&mut self) -> &mut Sealer {
        &mut self.sealer
    }

    fn slot(&self) -> usize {
        self.sealer.prefix() + MAX_PLAINTEXT + self.sealer.suffix()
    }

    fn overhead(&self) -> usize {
        self.sealer.prefix() + self.sealer.suffix()
    }

    /// Bytes written to the socket so far.
    pub(crate) fn bytes_sent(&self) -> u64 {
        self.sent
    }

    /// The buffer grew past one record's slot.
    pub(crate) fn is_big(&self) -> bool {
        self.buf.len() > self.slot()
    }

    /// Back to one record's slot, unless sealed bytes are still unsent.
    pub(crate) fn shrink(&mut self) {
        if !self.pending() && self.is_big() {
            self.buf = vec![0; self.slot()];
            self.start = 0;
            self.end = 0;
        }
    }

    pub(crate) fn pending(&self) -> bool {
        self.start < self.end
    }

    /// Enough sealed and unsent that a writer should wait for the socket.
    pub(crate) fn congested(&self) -> bool {
        self.end - self.start >= self.slot() * (TX_RECORDS - 1)
    }

    /// Writes out every sealed byte.
    pub(crate) fn poll_drain<IO: AsyncWrite + Unpin>(
        &mut self,
        cx: &mut Context<'_>,
        io: &mut IO,
    ) -> Poll<io::Result<()>> {
        while self.start < self.end {
            let n = ready!(Pin::new(&mut *io).poll_write(cx, &self.buf[self.start..self.end]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.start += n;
            self.sent += n as u64;
        }
        self.start = 0;
        self.end = 0;
        Poll::Ready(Ok(()))
    }

    /// Room at the end for at least one more record, moving unsent bytes to the front if needed.
    fn make_room(&mut self, want: usize) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.buf.len() - self.end < want && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < want {
            let grow = (self.end + want).max(self.slot() * TX_RECORDS);
            self.buf.resize(grow, 0);
        }
    }

    /// Seals one record of type `typ` with `payload`.
    fn queue(&mut self, typ: u8, payload: &[u8]) -> Result<(), SessionError> {
        self.make_room(payload.len() + self.overhead());
        let at = self.end + self.sealer.prefix();
        self.buf[at..at + payload.len()].copy_from_slice(payload);
        self.end += self
            .sealer
            .seal(typ, &mut self.buf[self.end..], payload.len())?;
        Ok(())
    }

    /// Before a record: our KeyUpdate if the peer asked for one (`due`) or the key is at its
    /// confidentiality limit (TLS 1.2: an error, the connection ends).
    pub(crate) fn before_record(
        &mut self,
        kernel: &mut Kernel,
        due: &mut bool,
    ) -> Result<(), SessionError> {
        let limit = self.sealer.at_limit();
        if limit && self.sealer.version() == Version::Tls12 {
            return Err(SessionError::Limit);
        }
        if (*due || limit) && !self.closed {
            // update_not_requested: sealed under the old key, then ours changes.
            self.queue(content::HANDSHAKE, &[24, 0, 0, 1, 0])?;
            let (seq, secrets) = kernel.update_tx()?;
            self.sealer.rekey(seq, &secrets)?;
            *due = false;
        }
        Ok(())
    }

    /// Test only: seals one record of any type (unexpected content, alerts).
    #[cfg(test)]
    pub(crate) fn queue_raw(&mut self, typ: u8, payload: &[u8]) -> Result<(), SessionError> {
        self.queue(typ, payload)
    }

    /// Queues a fatal alert, unless the last alert was queued already (nothing is sent after
    /// either).
    pub(crate) fn fatal(&mut self, desc: rustls::AlertDescription) -> Result<(), SessionError> {
        self.last_alert([2, u8::from(desc)])
    }

    /// Queues close_notify (once).
    pub(crate) fn close(&mut self) -> Result<(), SessionError> {
        self.last_alert([1, 0])
    }

    /// Queues the connection's last alert (`[level, description]`) once.
    fn last_alert(&mut self, alert: [u8; 2]) -> Result<(), SessionError> {
        if !self.closed {
            self.queue(content::ALERT, &alert)?;
            self.closed = true;
        }
        Ok(())
    }

    /// Seals as much of `bufs` as the buffer takes (growing it for bulk writes); bytes taken.
    pub(crate) fn seal_from(
        &mut self,
        kernel: &mut Kernel,
        due: &mut bool,
        bufs: &[IoSlice<'_>],
    ) -> Result<usize, SessionError> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let mut taken = 0;
        let (mut i, mut off) = (0, 0);
        while taken < total {
            self.before_record(kernel, due)?;
            if self.buf.len() - self.end < self.overhead() + 1 {
                if taken > 0 {
                    break;
                }
                // Compacts (unsent bytes behind `start`) or grows to the bulk size.
                self.make_room(self.slot());
            }
            let room = (self.buf.len() - self.end - self.overhead()).min(MAX_PLAINTEXT);
            let n = room.min(total - taken);
            let mut at = self.end + self.sealer.prefix();
            let mut left = n;
            while left > 0 {
                let src = &bufs[i][off..];
                let k = src.len().min(left);
                self.buf[at..at + k].copy_from_slice(&src[..k]);
                (at, left, off) = (at + k, left - k, off + k);
                if off == bufs[i].len() {
                    (i, off) = (i + 1, 0);
                }
            }
            while i < bufs.len() && bufs[i].is_empty() {
                i += 1;
            }
            self.end +=
                self.sealer
                    .seal(content::APPLICATION_DATA, &mut self.buf[self.end..], n)?;
            taken += n;
        }
        Ok(taken)
    }

    /// Reads plaintext from `src` straight into record slots (one vectored read over every
    /// free slot where `src` has it) and seals each, until the buffer is full or `src` has
    /// nothing more now. `Ready(true)`: `src` ended.
    pub(crate) fn poll_fill_from<R: SlotRead>(
        &mut self,
        cx: &mut Context<'_>,
        src: &mut R,
        kernel: &mut Kernel,
        due: &mut bool,
    ) -> Poll<Result<bool, io::Error>> {
        let mut sealed = false;
        loop {
            self.before_record(kernel, due).map_err(|e| e.to_io())?;
            if self.buf.len() - self.end < self.overhead() + 1 {
                if self.buf.len() >= self.slot() * TX_RECORDS || self.pending() {
                    return Poll::Ready(Ok(false));
                }
                self.make_room(self.slot());
            }
            // Slots of whole records from `end`; only the last may be short. With a KeyUpdate
            // due at the limit, one slot at a time (the update goes between records).
            let (slot, prefix, overhead) = (self.slot(), self.sealer.prefix(), self.overhead());
            let max_slots = if self.sealer.at_limit_within(TX_RECORDS as u64 + 1) {
                1
            } else {
                TX_RECORDS
            };
            let mut slots: [IoSliceMut<'_>; TX_RECORDS] =
                std::array::from_fn(|_| IoSliceMut::new(&mut []));
            let mut rooms = [0usize; TX_RECORDS];
            let mut k = 0;
            for chunk in self.buf[self.end..].chunks_mut(slot).take(max_slots) {
                if chunk.len() < overhead + 1 {
                    break;
                }
                let room = (chunk.len() - overhead).min(MAX_PLAINTEXT);
                slots[k] = IoSliceMut::new(&mut chunk[prefix..prefix + room]);
                rooms[k] = room;
                k += 1;
            }
            let queued = sealed || self.start < self.end;
            let n = match src.poll_read_slots(cx, &mut slots[..k]) {
                Poll::Pending if queued => return Poll::Ready(Ok(false)),
                Poll::Pending => return Poll::Pending,
                Poll::Ready(r) => r?,
            };
            if n == 0 {
                return Poll::Ready(Ok(true));
            }
            let mut left = n;
            let mut filled_all = true;
            for &room in &rooms[..k] {
                if left == 0 {
                    break;
                }
                let take = left.min(room);
                filled_all = take == room;
                self.end += self
                    .sealer
                    .seal(content::APPLICATION_DATA, &mut self.buf[self.end..], take)
                    .map_err(|e| e.to_io())?;
                left -= take;
            }
            sealed = true;
            if filled_all && self.buf.len() < self.slot() * TX_RECORDS {
                self.buf.resize(self.slot() * TX_RECORDS, 0);
            }
        }
    }
}
