//! The upstream's `service-defaults` `UpstreamConfig` as Consul's agent merges it into the
//! upstream's `Config` (`UpstreamConfig.MergeInto`): `limits` (Envoy circuit breakers; Envoy's
//! defaults, 1024 each, when unset) and `passive_health_check` (Envoy outlier detection,
//! consecutive 5xx only; absent = no ejection). Keys are read in the agent's PascalCase and in
//! snake_case; durations as integer nanoseconds or Go strings.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::agent::assemble::parse_go_duration;

/// Envoy's default for each circuit breaker threshold.
pub const DEFAULT_LIMIT: usize = 1024;

/// Circuit breaker thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `MaxConnections`.
    pub max_connections: usize,
    /// `MaxPendingRequests`.
    pub max_pending_requests: usize,
    /// `MaxConcurrentRequests`.
    pub max_concurrent_requests: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_LIMIT,
            max_pending_requests: DEFAULT_LIMIT,
            max_concurrent_requests: DEFAULT_LIMIT,
        }
    }
}

impl Limits {
    /// Requests that may be in flight at once: HTTP/1.1 carries one per connection, plus those
    /// waiting for one; HTTP/2 multiplexes, so only the concurrent-request limit applies.
    pub fn in_flight(&self, h2: bool) -> usize {
        if h2 {
            self.max_concurrent_requests
        } else {
            self.max_concurrent_requests.min(
                self.max_connections
                    .saturating_add(self.max_pending_requests),
            )
        }
    }
}

/// Outlier detection (consecutive 5xx).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outlier {
    /// Consecutive 5xx (or connect failures) that eject an endpoint.
    pub consecutive_5xx: u32,
    /// Ejection time for a first ejection (multiplied by the number of ejections).
    pub base_ejection_time: Duration,
    /// At most this percentage of a target's endpoints is ejected (at least one always may be).
    pub max_ejection_percent: u32,
    /// Percentage of detections enforced.
    pub enforcing: u32,
}

fn get<'a>(m: &'a Map<String, Value>, pascal: &str, snake: &str) -> Option<&'a Value> {
    m.get(pascal).or_else(|| m.get(snake))
}

fn num(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn duration(v: Option<&Value>) -> Option<Duration> {
    match v? {
        Value::Number(n) => n.as_u64().map(Duration::from_nanos),
        Value::String(s) => parse_go_duration(s),
        _ => None,
    }
}

fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// The limits in an upstream's `Config`.
pub fn limits(config: &Map<String, Value>) -> Limits {
    let Some(Value::Object(l)) = config.get("limits") else {
        return Limits::default();
    };
    let d = Limits::default();
    Limits {
        max_connections: num(get(l, "MaxConnections", "max_connections"))
            .map_or(d.max_connections, to_usize),
        max_pending_requests: num(get(l, "MaxPendingRequests", "max_pending_requests"))
            .map_or(d.max_pending_requests, to_usize),
        max_concurrent_requests: num(get(l, "MaxConcurrentRequests", "max_concurrent_requests"))
            .map_or(d.max_concurrent_requests, to_usize),
    }
}

/// The outlier detection in an upstream's `Config`, if configured.
pub fn outlier(config: &Map<String, Value>) -> Option<Outlier> {
    let Some(Value::Object(p)) = config.get("passive_health_check") else {
        return None;
    };
    let pct = |v: Option<u64>, d: u32| v.map_or(d, |v| u32::try_from(v.min(100)).unwrap_or(100));
    Some(Outlier {
        consecutive_5xx: num(get(p, "MaxFailures", "max_failures"))
            .and_then(|v| u32::try_from(v).ok())
            .filter(|v| *v > 0)
            .unwrap_or(5),
        base_ejection_time: duration(get(p, "BaseEjectionTime", "base_ejection_time"))
            .filter(|d| !d.is_zero())
            .unwrap_or(Duration::from_secs(30)),
        max_ejection_percent: pct(
            num(get(p, "MaxEjectionPercent", "max_ejection_percent")),
            10,
        ),
        enforcing: pct(
            num(get(
                p,
                "EnforcingConsecutive5xx",
                "enforcing_consecutive_5xx",
            )),
            100,
        ),
    })
}
