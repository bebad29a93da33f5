//! Named timeouts: what "within T" means by default. Small, so the whole suite stays fast; the
//! runner lets users override each (`--timeout propagation=10s`).

use std::collections::BTreeMap;
use std::time::Duration;

/// Names a scenario may use in `within`, `stable_for` and `idle`, with their defaults.
pub const DEFAULTS: &[(&str, Duration)] = &[
    // The proxy's ports accept connections after it starts.
    ("ready", Duration::from_secs(30)),
    // A state change on the agent (intentions, health, config) reaches the proxy's decisions.
    ("propagation", Duration::from_secs(5)),
    // After a CA rotation the proxy serves a leaf from the new root (includes the sim's jitter).
    ("rotation", Duration::from_secs(10)),
    // An open connection that a new deny covers is closed (the proxy's declared bound wins).
    ("reauth", Duration::from_secs(5)),
    // A prepared query's new result reaches the proxy (it polls: the proxy's declared
    // `query_poll_ms` bound wins).
    ("query-poll", Duration::from_secs(5)),
    // After the agent comes back the proxy picks up a new change.
    ("recovery", Duration::from_secs(15)),
    // How long "stays true" is observed for.
    ("stable", Duration::from_millis(1500)),
    // An idle window over which agent usage is measured.
    ("idle", Duration::from_secs(3)),
];

/// The effective named timeouts: defaults plus overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeouts(BTreeMap<String, Duration>);

impl Default for Timeouts {
    fn default() -> Self {
        Self(
            DEFAULTS
                .iter()
                .map(|(k, v)| ((*k).to_owned(), *v))
                .collect(),
        )
    }
}

impl Timeouts {
    /// Overrides one; `Err` names the unknown timeout.
    pub fn set(&mut self, name: &str, value: Duration) -> Result<(), String> {
        match self.0.get_mut(name) {
            Some(v) => {
                *v = value;
                Ok(())
            }
            None => Err(format!(
                "unknown timeout {name:?}; known: {}",
                self.0.keys().cloned().collect::<Vec<_>>().join(", ")
            )),
        }
    }

    /// The value of a named timeout.
    pub fn get(&self, name: &str) -> Option<Duration> {
        self.0.get(name).copied()
    }

    /// Every name and value.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Duration)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }
}
