//! Retry policy as Consul configures Envoy's (`getRetryPolicyForDestination`): `NumRetries`
//! (Envoy's default, 1, when zero), `RetryOn` conditions, `connect-failure` for
//! `RetryOnConnectFailure`, `retriable-status-codes` for `RetryOnStatusCodes`; and Envoy's
//! backoff (25 ms base, full jitter, doubling, at most 10 times the base).

use std::time::Duration;

use http::HeaderMap;

use crate::agent::types::RouteDestination;

/// Envoy's default retry backoff base interval.
pub const BACKOFF_BASE: Duration = Duration::from_millis(25);

/// What happened to one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// No connection could be opened to the instance.
    ConnectFailure,
    /// The connection or stream was reset before a response.
    Reset,
    /// The instance answered with this status and these headers.
    Response(u16, &'a HeaderMap),
}

/// A route's retry policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub num_retries: u32,
    on: Vec<String>,
    status_codes: Vec<u16>,
}

impl RetryPolicy {
    /// The destination's policy, `None` without retry settings (`HasRetryFeatures`).
    pub fn new(d: &RouteDestination) -> Option<Self> {
        if d.num_retries == 0
            && !d.retry_on_connect_failure
            && d.retry_on.is_empty()
            && d.retry_on_status_codes.is_empty()
        {
            return None;
        }
        let mut on = d.retry_on.clone();
        if d.retry_on_connect_failure {
            on.push("connect-failure".into());
        }
        if !d.retry_on_status_codes.is_empty() {
            on.push("retriable-status-codes".into());
        }
        Some(Self {
            num_retries: if d.num_retries == 0 { 1 } else { d.num_retries },
            on,
            status_codes: d
                .retry_on_status_codes
                .iter()
                .filter_map(|c| u16::try_from(*c).ok())
                .collect(),
        })
    }

    fn has(&self, cond: &str) -> bool {
        self.on.iter().any(|c| c == cond)
    }

    /// Whether an attempt with `outcome` is retried (attempts left aside).
    pub fn retriable(&self, outcome: Outcome<'_>) -> bool {
        let any = |cs: &[&str]| cs.iter().any(|c| self.has(c));
        match outcome {
            Outcome::ConnectFailure => any(&["connect-failure", "5xx", "gateway-error", "reset"]),
            Outcome::Reset => any(&["reset", "5xx", "gateway-error"]),
            Outcome::Response(status, headers) => {
                (self.has("5xx") && status >= 500)
                    || (self.has("gateway-error") && matches!(status, 502..=504))
                    || (self.has("retriable-4xx") && status == 409)
                    || (self.has("retriable-status-codes") && self.status_codes.contains(&status))
                    || grpc_retriable(self, headers)
            }
        }
    }
}

fn grpc_retriable(p: &RetryPolicy, headers: &HeaderMap) -> bool {
    let Some(code) = headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u8>().ok())
    else {
        return false;
    };
    let cond = match code {
        1 => "cancelled",
        4 => "deadline-exceeded",
        8 => "resource-exhausted",
        13 => "internal",
        14 => "unavailable",
        _ => return false,
    };
    p.has(cond)
}

/// The backoff before retry number `retry` (1-based): uniform in `[0, base * 2^(retry-1))`,
/// capped at ten times the base; `unit` in `[0, 1)` is the random draw.
pub fn backoff(retry: u32, unit: f64) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1 << retry.saturating_sub(1).min(16))
        .min(BACKOFF_BASE * 10);
    ceiling.mul_f64(unit.clamp(0.0, 1.0))
}
