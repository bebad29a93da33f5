//! Consul's `CSRMaxPerSecond` on leaf *signing* (`CAManager.SignCertificate`): a token bucket
//! with burst 1 (`rate.NewLimiter(limit, 1)`), each signing waiting at most `csrLimitWait`
//! (500 ms) for its token, else `ErrRateLimited` (`Rate limit reached, try again later`, which
//! the agent's HTTP layer answers with 429). Cached leaf reads never sign and are not limited.
//!
//! The simulator reserves the token the way `Wait` does but signs at once instead of sleeping
//! up to 500 ms: the admitted rate is Consul's, a leaf can be issued up to 500 ms earlier.
//! `CSRMaxConcurrent` (a semaphore on concurrent signings, used only when `CSRMaxPerSecond` is
//! 0) is accepted but inert: the simulator signs one leaf at a time, so it never binds.

use std::time::Duration;

use time::OffsetDateTime;

/// `csrLimitWait`.
const CSR_LIMIT_WAIT: Duration = Duration::from_millis(500);

/// The bucket, as a GCRA: `next` is when the next token is available.
#[derive(Debug, Clone, Default)]
pub(crate) struct CsrLimiter {
    rate: f64,
    next: Option<OffsetDateTime>,
}

impl CsrLimiter {
    /// Takes a token at `now` for `rate` signings per second (0 or less: unlimited). A change of
    /// rate starts a fresh bucket, as `getCSRRateLimiterWithLimit` does. False: rate limited.
    pub(crate) fn take(&mut self, rate: f64, now: OffsetDateTime) -> bool {
        if rate <= 0.0 || !rate.is_finite() {
            return true;
        }
        if (self.rate - rate).abs() > f64::EPSILON {
            *self = Self { rate, next: None };
        }
        let at = self.next.map_or(now, |n| n.max(now));
        if at - now > CSR_LIMIT_WAIT {
            return false;
        }
        let interval = Duration::from_secs_f64((1.0 / rate).min(1e9));
        self.next = Some(at + interval);
        true
    }
}

#[cfg(test)]
mod tests;
