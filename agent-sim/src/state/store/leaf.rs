//! The agent's leaf-certificate manager (`agent/leafcert`): one cached leaf per service,
//! re-issued at a random point in [60%, 90%] of its lifetime, or after a root rotation plus a
//! random delay; blocking queries wake when a newer leaf exists.

use std::time::Duration;

use rand::Rng;
use time::OffsetDateTime;
use tokio::time::Instant;

use super::{LeafEntry, State, Store};
use crate::model::ca::Leaf;
use crate::state::error::StateError;

/// A leaf answer: the cert, and whether it came out of the agent's cache unchanged.
#[derive(Debug, Clone)]
pub(crate) struct LeafAnswer {
    pub(crate) leaf: Leaf,
    pub(crate) hit: bool,
}

impl Store {
    /// A non-blocking leaf read: revalidates, so a rotated or due leaf is replaced at once.
    pub(crate) fn leaf_now(&self, service: &str, dc: &str) -> Result<LeafAnswer, StateError> {
        let now = OffsetDateTime::now_utc();
        if self.servers_down() {
            return self
                .read(|st| st.leaves.get(service).map(|e| e.leaf.clone()))
                .map(|leaf| LeafAnswer { leaf, hit: true })
                .ok_or(StateError::NoServers);
        }
        let current = self.read(|st| {
            st.leaves
                .get(service)
                .filter(|e| {
                    e.leaf.authority_key_id == st.ca.active_signing_key_id() && now < e.renew_at
                })
                .map(|e| e.leaf.clone())
        });
        match current {
            // The real agent reports MISS on a revalidating non-blocking read.
            Some(leaf) => Ok(LeafAnswer { leaf, hit: false }),
            None => self
                .issue(service, dc, now)
                .map(|leaf| LeafAnswer { leaf, hit: false }),
        }
    }

    /// A blocking leaf read (`index = min_index > 0`).
    pub(crate) async fn leaf_blocking(
        &self,
        service: &str,
        dc: &str,
        min_index: u64,
        timeout: Duration,
    ) -> Result<LeafAnswer, StateError> {
        let deadline = Instant::now() + timeout;
        // Woken by writes to the servers' data (a root rotation) and by this service's own
        // leaf-cache writes, not by other services' leaves.
        let mut changes = self.subscribe();
        let mut own = self.subscribe_leaf(service);
        if self.read(|st| !st.leaves.contains_key(service)) {
            return self.leaf_now(service, dc);
        }
        loop {
            changes.borrow_and_update();
            own.borrow_and_update();
            let now = OffsetDateTime::now_utc();
            // Evicted (agent restart): start over with a fresh leaf.
            let Some((entry, rotated)) = self.read(|st| current(st, service)) else {
                return self.leaf_now(service, dc);
            };
            if entry.leaf.modify_index > min_index {
                return Ok(LeafAnswer {
                    leaf: entry.leaf,
                    hit: true,
                });
            }
            let mut wake_at = entry.renew_at;
            if !self.servers_down() {
                if now >= entry.renew_at {
                    return self
                        .issue(service, dc, now)
                        .map(|leaf| LeafAnswer { leaf, hit: false });
                }
                if rotated {
                    let rotate_at = match entry.rotate_at {
                        Some(t) => t,
                        None => self.schedule_rotation(service, now),
                    };
                    if now >= rotate_at {
                        return self
                            .issue(service, dc, now)
                            .map(|leaf| LeafAnswer { leaf, hit: false });
                    }
                    wake_at = wake_at.min(rotate_at);
                }
            }
            let until = Instant::now() + to_std(wake_at - now);
            let stop = deadline.min(until);
            let changed = async {
                tokio::select! {
                    r = changes.changed() => r,
                    r = own.changed() => r,
                }
            };
            if tokio::time::timeout_at(stop, changed).await.is_err() && stop == deadline {
                let leaf = self.read(|st| st.leaves.get(service).map(|e| e.leaf.clone()));
                return leaf
                    .map(|leaf| LeafAnswer { leaf, hit: true })
                    .ok_or(StateError::NoServers);
            }
        }
    }

    /// The leaf a proxy-config leaf watch holds now (what the xDS server sends): re-issued
    /// once due (renewal point reached, or a root rotation's jittered point reached, the
    /// rotation being scheduled on first sight), else the cached one; with the next moment
    /// it will change. Servers down: the cached leaf, or no-servers when there is none.
    pub(crate) fn leaf_watched(
        &self,
        service: &str,
        dc: &str,
    ) -> Result<(Leaf, Option<OffsetDateTime>), StateError> {
        let now = OffsetDateTime::now_utc();
        let leaf = match self.read(|st| current(st, service)) {
            None => self.leaf_now(service, dc)?.leaf,
            Some((entry, _)) if self.servers_down() => entry.leaf,
            Some((entry, rotated)) => {
                let rotation_due = rotated
                    && now
                        >= entry
                            .rotate_at
                            .unwrap_or_else(|| self.schedule_rotation(service, now));
                if now >= entry.renew_at || rotation_due {
                    self.issue(service, dc, now)?
                } else {
                    entry.leaf
                }
            }
        };
        let next = self.read(|st| {
            st.leaves
                .get(service)
                .map(|e| e.rotate_at.map_or(e.renew_at, |r| r.min(e.renew_at)))
        });
        Ok((leaf, next))
    }

    fn schedule_rotation(&self, service: &str, now: OffsetDateTime) -> OffsetDateTime {
        let max = self.cfg.ca_change_jitter;
        let delay = if max.is_zero() {
            Duration::ZERO
        } else {
            self.with_rng(|r| r.random_range(Duration::ZERO..=max))
        };
        let at = now + delay;
        self.write_leaf_cache(service, |st| {
            if let Some(e) = st.leaves.get_mut(service) {
                e.rotate_at = Some(*e.rotate_at.get_or_insert(at));
            }
        });
        at
    }

    fn issue(&self, service: &str, dc: &str, now: OffsetDateTime) -> Result<Leaf, StateError> {
        let fraction: f64 = self.with_rng(|r| r.random_range(0.6..0.9));
        self.write_leaf_cache(service, |st| {
            if let Err(e) = st.ca.take_csr_token(now) {
                // Consul's leaf manager returns the error on a first fetch and otherwise keeps
                // the cached leaf, retrying after a backoff (here: 1 s).
                return match st.leaves.get_mut(service) {
                    Some(entry) => {
                        entry.renew_at = now + Duration::from_secs(1);
                        if let Some(r) = &mut entry.rotate_at {
                            *r = (*r).max(now + Duration::from_secs(1));
                        }
                        Ok(entry.leaf.clone())
                    }
                    None => Err(StateError::Rpc(e.to_string())),
                };
            }
            let index = st.next_index();
            let leaf = st
                .ca
                .issue_leaf(service, dc, now, index)
                .map_err(|e| StateError::Rpc(e.to_string()))?;
            let lifetime = leaf.valid_before - leaf.valid_after;
            let renew_at = leaf.valid_after + lifetime * fraction;
            st.leaves.insert(
                service.to_owned(),
                LeafEntry {
                    leaf: leaf.clone(),
                    renew_at,
                    rotate_at: None,
                },
            );
            Ok(leaf)
        })
    }
}

/// The cached entry and whether the active root has changed since it was issued.
fn current(st: &State, service: &str) -> Option<(LeafEntry, bool)> {
    let e = st.leaves.get(service)?;
    let rotated = e.leaf.authority_key_id != st.ca.active_signing_key_id();
    Some((e.clone(), rotated))
}

fn to_std(d: time::Duration) -> Duration {
    Duration::try_from(d).unwrap_or(Duration::ZERO)
}
