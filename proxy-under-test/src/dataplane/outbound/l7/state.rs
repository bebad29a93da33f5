//! What the L7 outbound path remembers across requests and application connections, per
//! upstream: requests in flight (circuit breaking), per cluster a round-robin counter, per
//! endpoint its active requests (least request) and outlier state (consecutive 5xx, ejection).
//! Endpoint choice happens here: the first target of the cluster with an endpoint that is not
//! ejected (all of a target's endpoints when every one is: Envoy's panic mode), then the
//! cluster's load balancing.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand::Rng;

use crate::route::lb::{by_hash, least_of};
use crate::route::limits::Outlier;
use crate::route::{Lb, LbPolicy};
use crate::snapshot::{Endpoint, Target};

/// One endpoint's counters.
#[derive(Debug, Default)]
struct EndpointState {
    active: usize,
    consecutive_5xx: u32,
    ejections: u32,
    ejected_until: Option<Instant>,
}

/// One upstream's counters.
#[derive(Debug, Default)]
pub(crate) struct UpstreamState {
    in_flight: AtomicUsize,
    round_robin: Mutex<HashMap<String, usize>>,
    endpoints: Mutex<HashMap<String, EndpointState>>,
}

/// A request counted in flight until dropped.
pub(crate) struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The key of an endpoint of a target.
pub(crate) fn key(target: &Target, ep: &Endpoint) -> String {
    format!("{}|{}:{}", target.id, ep.host, ep.port)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl UpstreamState {
    /// Counts a request in flight, `None` when `limit` are already.
    pub(crate) fn admit(&self, limit: usize) -> Option<InFlight<'_>> {
        let prev = self.in_flight.fetch_add(1, Ordering::AcqRel);
        let guard = InFlight(&self.in_flight);
        (prev < limit).then_some(guard)
    }

    /// The endpoint for the next attempt to `targets` (in failover order), if any.
    pub(crate) fn choose<'t>(
        &self,
        cluster: &str,
        targets: &[&'t Target],
        lb: &Lb,
        hash: Option<u64>,
    ) -> Option<(&'t Target, &'t Endpoint)> {
        let now = Instant::now();
        let eps = lock(&self.endpoints);
        let available = |t: &&&Target| {
            t.endpoints.iter().any(|e| {
                eps.get(&key(t, e))
                    .and_then(|s| s.ejected_until)
                    .is_none_or(|u| u <= now)
            })
        };
        let target = *targets
            .iter()
            .find(available)
            .or_else(|| targets.iter().find(|t| !t.endpoints.is_empty()))?;
        let usable: Vec<&Endpoint> = {
            let ok: Vec<&Endpoint> = target
                .endpoints
                .iter()
                .filter(|e| {
                    eps.get(&key(target, e))
                        .and_then(|s| s.ejected_until)
                        .is_none_or(|u| u <= now)
                })
                .collect();
            if ok.is_empty() {
                target.endpoints.iter().collect()
            } else {
                ok
            }
        };
        let n = usable.len();
        let mut rng = rand::rng();
        let i = match (lb.policy, hash) {
            (LbPolicy::Hash, Some(h)) => {
                let keys: Vec<String> = usable.iter().map(|e| key(target, e)).collect();
                by_hash(h, &keys).unwrap_or(0)
            }
            (LbPolicy::Random | LbPolicy::Hash, _) => rng.random_range(0..n),
            (LbPolicy::LeastRequest, _) => {
                let active: Vec<usize> = usable
                    .iter()
                    .map(|e| eps.get(&key(target, e)).map_or(0, |s| s.active))
                    .collect();
                let draws: Vec<usize> = (0..lb.choice_count.max(1))
                    .map(|_| rng.random_range(0..n))
                    .collect();
                least_of(&active, draws).unwrap_or(0)
            }
            (LbPolicy::RoundRobin, _) => {
                let mut rr = lock(&self.round_robin);
                let c = rr.entry(cluster.to_owned()).or_default();
                *c = c.wrapping_add(1);
                (*c - 1) % n
            }
        };
        Some((target, usable[i]))
    }

    /// An attempt to `key` starts.
    pub(crate) fn start(&self, key: &str) {
        lock(&self.endpoints)
            .entry(key.to_owned())
            .or_default()
            .active += 1;
    }

    /// An attempt to `key` ended: `failed` = a 5xx, a reset or a connect failure. With outlier
    /// detection, a run of failures ejects the endpoint (`total` endpoints in its target).
    pub(crate) fn finish(&self, key: &str, failed: bool, outlier: Option<&Outlier>, total: usize) {
        let now = Instant::now();
        let mut eps = lock(&self.endpoints);
        let ejected = eps
            .values()
            .filter(|s| s.ejected_until.is_some_and(|u| u > now))
            .count();
        let s = eps.entry(key.to_owned()).or_default();
        s.active = s.active.saturating_sub(1);
        if !failed {
            s.consecutive_5xx = 0;
            return;
        }
        s.consecutive_5xx += 1;
        let Some(o) = outlier else {
            return;
        };
        let already = s.ejected_until.is_some_and(|u| u > now);
        let max = (total * o.max_ejection_percent as usize / 100).max(1);
        if s.consecutive_5xx >= o.consecutive_5xx
            && !already
            && ejected < max
            && rand::rng().random_range(0..100) < o.enforcing
        {
            s.ejections += 1;
            s.consecutive_5xx = 0;
            let time = o
                .base_ejection_time
                .saturating_mul(s.ejections)
                .min(Duration::from_secs(300).max(o.base_ejection_time));
            s.ejected_until = Some(now + time);
            tracing::info!(endpoint = key, ?time, "endpoint ejected (consecutive 5xx)");
        }
    }
}
