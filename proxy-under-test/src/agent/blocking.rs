//! Blocking-query discipline, as Consul's docs prescribe for clients: index rules (reset when it
//! goes backwards, never 0 after a read), exponential backoff with jitter on errors, and a token
//! bucket (burst 2) so a server answering instantly cannot make the loop spin.

use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

/// The index to send next, given the one we sent (`prev`) and the one the server returned.
/// - the server returned a smaller index than we had (snapshot restore, agent restart): reset
///   to 0, so the next read is a fresh non-blocking one;
/// - the server returned 0: use 1 (Consul never means 0; blocking on 0 would not block);
/// - otherwise the returned index.
pub fn next_index(prev: u64, returned: u64) -> u64 {
    if returned == 0 {
        1
    } else if returned < prev {
        0
    } else {
        returned
    }
}

/// Exponential backoff with jitter: `base * 2^(n-1)` capped at `max`, then a random value in
/// `[d/2, d]`.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    failures: u32,
}

impl Backoff {
    /// A backoff starting at `base`, capped at `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: 0,
        }
    }

    /// The un-jittered delay after the current number of failures.
    pub fn ceiling(&self) -> Duration {
        let exp = self.failures.saturating_sub(1).min(20);
        self.base.saturating_mul(1 << exp).min(self.max)
    }

    /// Records a failure and returns how long to wait.
    pub fn failure(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let d = self.ceiling();
        let half = d / 2;
        let jitter = rand::rng().random_range(0..=half.as_millis().max(1) as u64);
        half + Duration::from_millis(jitter)
    }

    /// Records a success.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// Consecutive failures so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

/// A token bucket: `burst` tokens, refilled at `per_second`.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    tokens: f64,
    burst: f64,
    per_second: f64,
    last: Instant,
}

impl RateLimiter {
    /// A full bucket.
    pub fn new(per_second: f64, burst: u32) -> Self {
        Self {
            tokens: f64::from(burst),
            burst: f64::from(burst),
            per_second: per_second.max(0.001),
            last: Instant::now(),
        }
    }

    /// Takes a token at `now`, returning how long the caller must wait first (zero when a
    /// token was available).
    pub fn take_at(&mut self, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.per_second)
        }
    }

    /// Waits for a token.
    pub async fn acquire(&mut self) {
        let wait = self.take_at(Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_rules() {
        assert_eq!(next_index(0, 5), 5, "first read");
        assert_eq!(next_index(5, 5), 5, "timeout, unchanged");
        assert_eq!(next_index(5, 9), 9, "moved forward");
        assert_eq!(next_index(9, 3), 0, "went backwards: reset");
        assert_eq!(next_index(0, 0), 1, "server said 0: use 1");
        assert_eq!(next_index(7, 0), 1, "never 0 after a read");
    }

    #[test]
    fn backoff_doubles_to_the_cap_with_jitter() {
        let mut b = Backoff::new(Duration::from_millis(250), Duration::from_secs(30));
        let mut ceilings = Vec::new();
        for _ in 0..10 {
            let d = b.failure();
            let c = b.ceiling();
            assert!(d <= c && d >= c / 2, "{d:?} within [{:?}, {c:?}]", c / 2);
            ceilings.push(c.as_millis());
        }
        assert_eq!(
            ceilings,
            [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
        b.reset();
        assert_eq!(b.failures(), 0);
        assert!(b.failure() <= Duration::from_millis(250));
    }

    #[test]
    fn token_bucket_allows_a_burst_of_two_then_paces() {
        let mut r = RateLimiter::new(1.0, 2);
        let t0 = Instant::now();
        assert_eq!(r.take_at(t0), Duration::ZERO);
        assert_eq!(r.take_at(t0), Duration::ZERO);
        let third = r.take_at(t0);
        assert!(third >= Duration::from_millis(999), "{third:?}");
        // Ten instant returns in a row cannot go faster than the refill rate.
        let mut r = RateLimiter::new(1.0, 2);
        let mut now = t0;
        let mut total = Duration::ZERO;
        for _ in 0..10 {
            let w = r.take_at(now);
            now += w;
            total += w;
        }
        assert!(total >= Duration::from_millis(7_990), "{total:?}");
    }
}
