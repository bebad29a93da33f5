//! SIGINT and SIGTERM for `conformance run`: listened to from the start of the run (so an early
//! signal is not lost to the default action), a burst counted once (`timeout -s INT` and a
//! terminal's Ctrl-C signal the process and its group, so the same signal can arrive twice at
//! once: that is not the "second signal" that cuts the cleanup short), and the killed children
//! reaped so none is left defunct.

use std::time::{Duration, Instant};

use crate::runner::Signal;

/// Signals closer together than this are one (a process-group signal delivered twice).
pub(crate) const BURST: Duration = Duration::from_millis(250);

/// The run's signal handlers.
pub(crate) struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    /// When the last counted signal arrived.
    last: Option<Instant>,
}

impl Signals {
    /// Installs the handlers; needs a runtime context.
    pub(crate) fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            last: None,
        })
    }

    /// The next signal that counts: one within [`BURST`] of the last counted is ignored.
    pub(crate) async fn next(&mut self) -> Signal {
        loop {
            let sig = tokio::select! {
                _ = self.int.recv() => Signal::Int,
                _ = self.term.recv() => Signal::Term,
            };
            let now = Instant::now();
            if counts(self.last, now) {
                self.last = Some(now);
                return sig;
            }
        }
    }
}

/// Whether a signal at `now` counts after the last counted one at `last`.
pub(crate) fn counts(last: Option<Instant>, now: Instant) -> bool {
    last.is_none_or(|t| now.saturating_duration_since(t) >= BURST)
}

/// Waits for every child of this process that has ended (or ends within `within`), so none is
/// left defunct; how many were reaped. Returns at once when there is no child.
pub(crate) fn reap_children(within: Duration) -> usize {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    let deadline = Instant::now() + within;
    let mut reaped = 0;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {
                if Instant::now() >= deadline {
                    return reaped;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(_) => reaped += 1,
            Err(_) => return reaped, // ECHILD: no child left
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_counts_once() {
        let t = Instant::now();
        assert!(counts(None, t));
        assert!(!counts(Some(t), t + Duration::from_millis(5)));
        assert!(counts(Some(t), t + BURST));
    }
}
