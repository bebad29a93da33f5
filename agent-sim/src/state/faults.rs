//! Fault injection: the set of active faults, each with an id so it can be undone (by a guard
//! going out of scope, by an expiry, or explicitly), published to the server loop and middleware.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::time::Instant;

/// One fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "Kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Fault {
    /// The agent stops listening: connections are refused and open ones are cut.
    AgentDown,
    /// The agent accepts connections and requests but never answers while the fault lasts.
    AgentHung,
    /// Requests (optionally only under a path prefix) get an error status and body.
    Errors {
        /// HTTP status, 500 by default.
        #[serde(rename = "Status", default = "default_status")]
        status: u16,
        /// Plain-text body.
        #[serde(rename = "Body", default = "default_body")]
        body: String,
        /// Only paths starting with this prefix; all `/v1/` paths when absent.
        #[serde(rename = "PathPrefix", default)]
        path_prefix: Option<String>,
    },
    /// The agent is up but its servers are gone: cached data is served, everything else fails.
    ServersUnreachable,
    /// Every request (optionally only under a prefix) is delayed.
    Latency {
        /// The added delay.
        #[serde(rename = "Delay", with = "go_duration_serde")]
        delay: Duration,
        /// Only paths starting with this prefix.
        #[serde(rename = "PathPrefix", default)]
        path_prefix: Option<String>,
    },
}

fn default_status() -> u16 {
    500
}

fn default_body() -> String {
    "agent-sim: injected error".into()
}

mod go_duration_serde {
    use crate::go::duration::GoDuration;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&GoDuration::from_std(*d).to_string())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        GoDuration::parse(&text)
            .map(GoDuration::to_std)
            .map_err(serde::de::Error::custom)
    }
}

/// What the data path needs to know, derived from the active faults.
#[derive(Debug, Clone, Default)]
pub struct FaultSet {
    /// Refuse connections.
    pub down: bool,
    /// Accept but never answer.
    pub hung: bool,
    /// Since when the servers are unreachable.
    pub servers_down_since: Option<Instant>,
    /// (prefix, status, body) error injections.
    pub errors: Vec<(Option<String>, u16, String)>,
    /// (prefix, delay) latency injections.
    pub latency: Vec<(Option<String>, Duration)>,
}

impl FaultSet {
    /// The first error injection covering `path`.
    pub fn error_for(&self, path: &str) -> Option<(u16, &str)> {
        self.errors
            .iter()
            .find(|(p, _, _)| p.as_deref().is_none_or(|p| path.starts_with(p)))
            .map(|(_, s, b)| (*s, b.as_str()))
    }

    /// The total delay for `path`.
    pub fn delay_for(&self, path: &str) -> Duration {
        self.latency
            .iter()
            .filter(|(p, _)| p.as_deref().is_none_or(|p| path.starts_with(p)))
            .map(|(_, d)| *d)
            .sum()
    }
}

/// An active fault as listed by the control API.
#[derive(Debug, Clone, Serialize)]
pub struct ActiveFault {
    /// Id used to remove it.
    #[serde(rename = "ID")]
    pub id: u64,
    /// The fault.
    #[serde(rename = "Fault")]
    pub fault: Fault,
    /// Seconds left when it expires by itself.
    #[serde(rename = "ExpiresInSeconds", skip_serializing_if = "Option::is_none")]
    pub expires_in_seconds: Option<f64>,
    #[serde(skip)]
    since: Option<Instant>,
    #[serde(skip)]
    until: Option<Instant>,
}

/// The registry of active faults.
#[derive(Debug)]
pub struct Faults {
    inner: Mutex<Registry>,
    tx: watch::Sender<Arc<FaultSet>>,
}

#[derive(Debug, Default)]
struct Registry {
    next_id: u64,
    active: BTreeMap<u64, ActiveFault>,
}

impl Faults {
    /// No faults.
    pub fn new() -> Arc<Self> {
        let (tx, _) = watch::channel(Arc::new(FaultSet::default()));
        Arc::new(Self {
            inner: Mutex::new(Registry::default()),
            tx,
        })
    }

    /// Subscribes to changes of the derived fault set.
    pub fn subscribe(&self) -> watch::Receiver<Arc<FaultSet>> {
        self.tx.subscribe()
    }

    /// The current derived set.
    pub fn current(&self) -> Arc<FaultSet> {
        self.tx.borrow().clone()
    }

    /// Adds a fault, optionally for a limited time; returns its id.
    pub fn add(self: &Arc<Self>, fault: Fault, duration: Option<Duration>) -> u64 {
        let now = Instant::now();
        let id = {
            let mut reg = self.inner.lock();
            reg.next_id += 1;
            let id = reg.next_id;
            let until = duration.map(|d| now + d);
            reg.active.insert(
                id,
                ActiveFault {
                    id,
                    fault,
                    expires_in_seconds: None,
                    since: Some(now),
                    until,
                },
            );
            id
        };
        self.publish();
        if let Some(d) = duration {
            let me = Arc::downgrade(self);
            tokio::spawn(async move {
                tokio::time::sleep(d).await;
                if let Some(me) = me.upgrade() {
                    me.remove(id);
                }
            });
        }
        id
    }

    /// Removes a fault; true if it was active.
    pub fn remove(&self, id: u64) -> bool {
        let removed = self.inner.lock().active.remove(&id).is_some();
        if removed {
            self.publish();
        }
        removed
    }

    /// Removes every fault.
    pub fn clear(&self) {
        self.inner.lock().active.clear();
        self.publish();
    }

    /// The active faults.
    pub fn list(&self) -> Vec<ActiveFault> {
        let now = Instant::now();
        self.inner
            .lock()
            .active
            .values()
            .map(|f| ActiveFault {
                expires_in_seconds: f
                    .until
                    .map(|u| u.saturating_duration_since(now).as_secs_f64()),
                ..f.clone()
            })
            .collect()
    }

    fn publish(&self) {
        let reg = self.inner.lock();
        let mut set = FaultSet::default();
        for f in reg.active.values() {
            match &f.fault {
                Fault::AgentDown => set.down = true,
                Fault::AgentHung => set.hung = true,
                Fault::ServersUnreachable => {
                    let since = f.since.unwrap_or_else(Instant::now);
                    set.servers_down_since =
                        Some(set.servers_down_since.map_or(since, |s| s.min(since)));
                }
                Fault::Errors {
                    status,
                    body,
                    path_prefix,
                } => {
                    set.errors
                        .push((path_prefix.clone(), *status, body.clone()));
                }
                Fault::Latency { delay, path_prefix } => {
                    set.latency.push((path_prefix.clone(), *delay));
                }
            }
        }
        self.tx.send_replace(Arc::new(set));
    }
}

/// Undoes its fault when dropped, unless [`FaultGuard::keep`] is called.
#[derive(Debug)]
#[must_use = "the fault is undone when the guard is dropped"]
pub struct FaultGuard {
    faults: Arc<Faults>,
    id: Option<u64>,
}

impl FaultGuard {
    pub(crate) fn new(faults: Arc<Faults>, id: u64) -> Self {
        Self {
            faults,
            id: Some(id),
        }
    }

    /// The fault's id in the registry.
    pub fn id(&self) -> u64 {
        self.id.unwrap_or_default()
    }

    /// Leaves the fault active after the guard is gone.
    pub fn keep(mut self) -> u64 {
        self.id.take().unwrap_or_default()
    }

    /// Undoes the fault now.
    pub fn undo(self) {}
}

impl Drop for FaultGuard {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.faults.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn guards_and_expiry_undo_faults() {
        let f = Faults::new();
        let g = FaultGuard::new(f.clone(), f.add(Fault::AgentDown, None));
        assert!(f.current().down);
        drop(g);
        assert!(!f.current().down);

        let mut rx = f.subscribe();
        f.add(Fault::AgentHung, Some(Duration::from_secs(5)));
        assert!(rx.borrow_and_update().hung);
        rx.changed().await.unwrap();
        assert!(!rx.borrow().hung, "expired by itself");
    }

    #[test]
    fn prefixes_select_paths() {
        let mut set = FaultSet::default();
        set.errors
            .push((Some("/v1/health/".into()), 503, "x".into()));
        set.latency.push((None, Duration::from_millis(5)));
        set.latency
            .push((Some("/v1/agent/".into()), Duration::from_millis(7)));
        assert_eq!(set.error_for("/v1/health/connect/db"), Some((503, "x")));
        assert_eq!(set.error_for("/v1/agent/self"), None);
        assert_eq!(set.delay_for("/v1/agent/self"), Duration::from_millis(12));
    }

    #[test]
    fn faults_parse_from_control_json() {
        let f: Fault = serde_json::from_str(r#"{"Kind":"latency","Delay":"250ms"}"#).unwrap();
        assert_eq!(
            f,
            Fault::Latency {
                delay: Duration::from_millis(250),
                path_prefix: None
            }
        );
        let e: Fault = serde_json::from_str(r#"{"Kind":"errors","Status":503}"#).unwrap();
        assert!(matches!(e, Fault::Errors { status: 503, .. }));
        assert!(serde_json::from_str::<Fault>(r#"{"Kind":"meteor"}"#).is_err());
    }
}
