//! `SeqLog<T>`: a bounded, sequence-numbered, in-memory log whose readers can wait for an entry.
//! The machinery shared by the HTTP request log and the xDS log: sequence numbers from 1,
//! milliseconds since the log started, the oldest entries dropped (and counted) past capacity,
//! and a watch channel that wakes `wait_for`.

use std::collections::VecDeque;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;

/// An entry that knows its sequence number.
pub(crate) trait Sequenced: Clone {
    /// Its sequence number.
    fn seq(&self) -> u64;
}

/// The log.
#[derive(Debug)]
pub(crate) struct SeqLog<T> {
    started: Instant,
    capacity: usize,
    inner: Mutex<Ring<T>>,
    tx: watch::Sender<u64>,
}

#[derive(Debug)]
struct Ring<T> {
    next_seq: u64,
    dropped: u64,
    entries: VecDeque<T>,
}

impl<T: Sequenced> SeqLog<T> {
    /// An empty log keeping at most `capacity` entries.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            started: Instant::now(),
            capacity,
            inner: Mutex::new(Ring {
                next_seq: 0,
                dropped: 0,
                entries: VecDeque::new(),
            }),
            tx: watch::channel(0).0,
        }
    }

    /// Appends the entry `make(seq, at_ms)` builds; returns its sequence number.
    pub(crate) fn push(&self, make: impl FnOnce(u64, u64) -> T) -> u64 {
        let at_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let seq = {
            let mut inner = self.inner.lock();
            inner.next_seq += 1;
            let seq = inner.next_seq;
            inner.entries.push_back(make(seq, at_ms));
            while inner.entries.len() > self.capacity {
                inner.entries.pop_front();
                inner.dropped += 1;
            }
            seq
        };
        if self.tx.receiver_count() > 0 {
            self.tx.send_replace(seq);
        }
        seq
    }

    /// Changes entry `seq` in place, if it is still kept.
    pub(crate) fn update(&self, seq: u64, f: impl FnOnce(&mut T)) {
        let mut inner = self.inner.lock();
        let Some(first) = inner.entries.front().map(Sequenced::seq) else {
            return;
        };
        let Some(pos) = seq.checked_sub(first).and_then(|p| usize::try_from(p).ok()) else {
            return;
        };
        if let Some(e) = inner.entries.get_mut(pos) {
            f(e);
        }
    }

    /// Runs `f` over the kept entries, oldest first.
    pub(crate) fn with_entries<R>(&self, f: impl FnOnce(&VecDeque<T>) -> R) -> R {
        f(&self.inner.lock().entries)
    }

    /// Every kept entry.
    pub(crate) fn entries(&self) -> Vec<T> {
        self.with_entries(|e| e.iter().cloned().collect())
    }

    /// Entries with `seq > after`.
    pub(crate) fn since(&self, after: u64) -> Vec<T> {
        self.with_entries(|e| e.iter().filter(|x| x.seq() > after).cloned().collect())
    }

    /// The last sequence number handed out.
    pub(crate) fn last_seq(&self) -> u64 {
        self.inner.lock().next_seq
    }

    /// How many entries were dropped for capacity.
    pub(crate) fn dropped(&self) -> u64 {
        self.inner.lock().dropped
    }

    /// Forgets every entry (sequence numbers keep counting).
    pub(crate) fn clear(&self) {
        self.inner.lock().entries.clear();
    }

    /// Waits until an entry satisfying `pred` exists, or the timeout passes.
    pub(crate) async fn wait_for(&self, timeout: Duration, pred: impl Fn(&T) -> bool) -> Option<T> {
        let mut rx = self.tx.subscribe();
        let deadline = Instant::now() + timeout;
        loop {
            rx.borrow_and_update();
            if let Some(e) = self.with_entries(|es| es.iter().find(|e| pred(e)).cloned()) {
                return Some(e);
            }
            if tokio::time::timeout_at(deadline, rx.changed())
                .await
                .is_err()
            {
                return None;
            }
        }
    }
}
