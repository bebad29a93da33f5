//! Whether the agent is failing, and a signal each time it answers again after a failure: state
//! that is otherwise read on a timer (the default intention policy from agent/self) is re-read
//! at once, so an agent restarted with another configuration is followed within seconds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;

#[cfg(test)]
pub(crate) mod tests;

/// Shared by every clone of an [`AgentClient`](super::AgentClient).
#[derive(Debug, Clone)]
pub(crate) struct AgentHealth(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    failing: AtomicBool,
    recoveries: watch::Sender<u64>,
}

impl Default for AgentHealth {
    fn default() -> Self {
        Self(Arc::new(Inner {
            failing: AtomicBool::new(false),
            recoveries: watch::Sender::new(0),
        }))
    }
}

impl AgentHealth {
    /// Records one request's outcome: `answered` is false for no answer (connection error,
    /// timeout) or a 5xx. An answer after a failure counts one recovery.
    pub(crate) fn observe(&self, answered: bool) {
        if !answered {
            self.0.failing.store(true, Ordering::SeqCst);
        } else if self.0.failing.swap(false, Ordering::SeqCst) {
            self.0.recoveries.send_modify(|n| *n = n.wrapping_add(1));
            tracing::info!("agent answers again after failing");
        }
    }

    /// A receiver that changes at every recovery.
    pub(crate) fn recoveries(&self) -> watch::Receiver<u64> {
        self.0.recoveries.subscribe()
    }
}
