//! Giving bulk buffers back: a connection whose receive or send buffer grew to the bulk size
//! (a transfer, a burst, back-pressure) returns both to their starting sizes once no byte has
//! moved either way for [`SHRINK_AFTER`]. One timer per connection, armed only while a buffer
//! is big, checked when the connection is about to wait; a busy bulk transfer re-arms it once
//! per period instead of touching it per batch.

use std::future::Future;
use std::pin::Pin;
use std::task::Context;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use super::rx::Rx;
use super::tx::Tx;

/// Quiet time after which big buffers are given back.
pub(crate) const SHRINK_AFTER: Duration = Duration::from_secs(2);

/// One connection's shrink timer.
#[derive(Default)]
pub(crate) struct Shrink {
    timer: Option<Pin<Box<Sleep>>>,
    /// Bytes moved (read plus sent) when the timer was armed.
    mark: u64,
}

impl Shrink {
    /// Call when the connection is about to return `Pending`: arms the timer while a buffer is
    /// big, and once it is due shrinks both buffers if no byte moved since it was armed (else
    /// re-arms). Between those, only a clock read: the timer's waker is registered when it is
    /// armed, and polled outside the task's cooperative budget, so a spent budget cannot turn
    /// it into an immediate wake-up of a task that is really waiting for its sockets.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>, rx: &mut Rx, tx: &mut Tx) {
        if !rx.is_big() && !tx.is_big() {
            self.timer = None;
            return;
        }
        let moved = rx.bytes_read() + tx.bytes_sent();
        let Some(timer) = &mut self.timer else {
            self.mark = moved;
            let mut t = Box::pin(tokio::time::sleep(SHRINK_AFTER));
            register(t.as_mut(), cx);
            self.timer = Some(t);
            return;
        };
        if Instant::now() < timer.deadline() {
            return;
        }
        if moved == self.mark {
            rx.shrink();
            tx.shrink();
            self.timer = None;
        } else {
            self.mark = moved;
            timer.as_mut().reset(Instant::now() + SHRINK_AFTER);
            register(timer.as_mut(), cx);
        }
    }
}

/// Polls the timer once (registering the task's waker), outside the cooperative budget.
fn register(timer: Pin<&mut Sleep>, cx: &mut Context<'_>) {
    let _ = Pin::new(&mut tokio::task::unconstrained(timer)).poll(cx);
}
