//! The part of an upstream's opaque `Config` map the cluster builder reads, as Consul's
//! `structs.ParseUpstreamConfigNoDefaults` decodes it (mapstructure, weakly typed, keys
//! matched case-insensitively with `snake_case` aliases, durations as Go strings or integer
//! nanoseconds): `limits` and `passive_health_check`. The map is the registration's upstream
//! `Config` merged with the downstream's service-defaults `UpstreamConfig` (defaults, then the
//! override for this upstream), as `ComputeResolvedServiceConfig` leaves it.

use serde_json::{Map, Value};

use crate::go::duration::parse_nanos;

/// `structs.UpstreamLimits`: each threshold only when set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) max_connections: Option<i64>,
    pub(crate) max_pending_requests: Option<i64>,
    pub(crate) max_concurrent_requests: Option<i64>,
}

/// `structs.PassiveHealthCheck` (durations in nanoseconds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PassiveHealthCheck {
    pub(crate) interval: i64,
    pub(crate) max_failures: u32,
    pub(crate) enforcing_consecutive_5xx: Option<u32>,
    pub(crate) max_ejection_percent: Option<u32>,
    pub(crate) base_ejection_time: Option<i64>,
}

/// What the cluster builder takes from an upstream's config; `None` where the key is absent
/// (Consul's nil pointers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct UpstreamPolicy {
    pub(crate) limits: Option<Limits>,
    pub(crate) passive_health_check: Option<PassiveHealthCheck>,
}

impl UpstreamPolicy {
    /// Decodes the policy from an upstream's opaque config. Values that do not decode are left
    /// unset (Consul logs the decode error and carries on with what decoded).
    pub(crate) fn parse(cfg: &Map<String, Value>) -> Self {
        let limits = field(cfg, "limits")
            .and_then(Value::as_object)
            .map(|m| Limits {
                max_connections: field(m, "max_connections").and_then(int),
                max_pending_requests: field(m, "max_pending_requests").and_then(int),
                max_concurrent_requests: field(m, "max_concurrent_requests").and_then(int),
            });
        let passive_health_check = field(cfg, "passive_health_check")
            .and_then(Value::as_object)
            .map(|m| PassiveHealthCheck {
                interval: field(m, "interval").and_then(duration).unwrap_or(0),
                max_failures: field(m, "max_failures").and_then(uint).unwrap_or(0),
                enforcing_consecutive_5xx: field(m, "enforcing_consecutive_5xx").and_then(uint),
                max_ejection_percent: field(m, "max_ejection_percent").and_then(uint),
                base_ejection_time: field(m, "base_ejection_time").and_then(duration),
            });
        Self {
            limits,
            passive_health_check,
        }
    }
}

/// The value of the key matching `snake` (`max_failures`) in either spelling mapstructure
/// accepts: the alias itself or the Go field name in any case (`MaxFailures`). `null` counts
/// as absent (a nil pointer).
fn field<'a>(m: &'a Map<String, Value>, snake: &str) -> Option<&'a Value> {
    let want = snake.replace('_', "");
    m.get(snake)
        .or_else(|| {
            m.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(&want))
                .map(|(_, v)| v)
        })
        .filter(|v| !v.is_null())
}

/// A weakly typed integer: a number (whole floats too) or a numeric string.
fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e18)
                .map(|f| f as i64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

fn uint(v: &Value) -> Option<u32> {
    int(v).and_then(|i| u32::try_from(i).ok())
}

/// A `time.Duration`: integer nanoseconds or a Go duration string (`"10s"`).
fn duration(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => parse_nanos(s).ok().or_else(|| s.trim().parse().ok()),
        other => int(other),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(v: &Value) -> UpstreamPolicy {
        UpstreamPolicy::parse(v.as_object().expect("object"))
    }

    #[test]
    fn absent_keys_are_nil() {
        assert_eq!(
            parse(&json!({"protocol": "http"})),
            UpstreamPolicy::default()
        );
        assert_eq!(parse(&json!({"limits": null})).limits, None);
    }

    #[test]
    fn merged_service_defaults_shape_decodes() {
        // What `UpstreamConfig.MergeInto` leaves: Go field names, durations in nanoseconds.
        let p = parse(&json!({
            "limits": {"MaxConnections": 10, "MaxPendingRequests": 0},
            "passive_health_check": {"Interval": 10_000_000_000_i64, "MaxFailures": 3,
                "EnforcingConsecutive5xx": 100, "MaxEjectionPercent": 50,
                "BaseEjectionTime": 30_000_000_000_i64}
        }));
        let l = p.limits.expect("limits");
        assert_eq!(l.max_connections, Some(10));
        assert_eq!(l.max_pending_requests, Some(0));
        assert_eq!(l.max_concurrent_requests, None);
        let h = p.passive_health_check.expect("passive");
        assert_eq!(h.interval, 10_000_000_000);
        assert_eq!(h.max_failures, 3);
        assert_eq!(h.enforcing_consecutive_5xx, Some(100));
        assert_eq!(h.max_ejection_percent, Some(50));
        assert_eq!(h.base_ejection_time, Some(30_000_000_000));
    }

    #[test]
    fn registration_snake_case_and_weak_values_decode() {
        let p = parse(&json!({
            "Limits": {"max_connections": "5", "max_concurrent_requests": 7.0},
            "PassiveHealthCheck": {"interval": "2s", "max_failures": "4", "base_ejection_time": "1m"}
        }));
        let l = p.limits.expect("limits");
        assert_eq!(l.max_connections, Some(5));
        assert_eq!(l.max_concurrent_requests, Some(7));
        let h = p.passive_health_check.expect("passive");
        assert_eq!(h.interval, 2_000_000_000);
        assert_eq!(h.max_failures, 4);
        assert_eq!(h.base_ejection_time, Some(60_000_000_000));
        assert_eq!(h.enforcing_consecutive_5xx, None);
    }
}
