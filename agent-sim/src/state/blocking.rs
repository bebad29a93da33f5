//! Blocking queries: how long a request may block (Consul's defaults, caps and jitter), and the
//! wait loop that re-evaluates a query on every state change until it has something new.

use std::time::Duration;

use rand::Rng;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::go::duration::GoDuration;

/// Blocking-query timing, as agent configuration sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockingConfig {
    /// `default_query_time`: the wait when a client gives none (or <= 0). Consul: 300 s.
    pub default_query_time: Duration,
    /// `max_query_time`: the cap on `wait`. Consul: 600 s.
    pub max_query_time: Duration,
    /// The agent-local (hash) blocking default when `wait` is 0. Consul: 5 min, hard-coded.
    pub local_default_wait: Duration,
    /// The agent-local cap. Consul: 10 min, hard-coded.
    pub local_max_wait: Duration,
    /// Default wait of a blocking leaf query: Consul 10 min, no cap, no jitter.
    pub leaf_default_wait: Duration,
}

impl Default for BlockingConfig {
    fn default() -> Self {
        Self {
            default_query_time: Duration::from_secs(300),
            max_query_time: Duration::from_secs(600),
            local_default_wait: Duration::from_secs(300),
            local_max_wait: Duration::from_secs(600),
            leaf_default_wait: Duration::from_secs(600),
        }
    }
}

impl BlockingConfig {
    /// Server blocking: `wait`, or the default when missing or <= 0, capped, plus
    /// `rand(0, timeout/16)` jitter.
    pub fn server_timeout(&self, wait: Option<GoDuration>, rng: &mut impl Rng) -> Duration {
        let base = match wait {
            Some(w) if w.0 > 0 => w.to_std().min(self.max_query_time),
            _ => self.default_query_time,
        };
        base + jitter(base, rng)
    }

    /// Agent-local hash blocking: `wait`, or the local default when 0, capped, plus jitter.
    pub fn local_timeout(&self, wait: Option<GoDuration>, rng: &mut impl Rng) -> Duration {
        let base = match wait {
            Some(w) if w.0 > 0 => w.to_std().min(self.local_max_wait),
            _ => self.local_default_wait,
        };
        base + jitter(base, rng)
    }

    /// Leaf blocking: `wait` as given (no cap, no jitter), else the leaf default.
    pub fn leaf_timeout(&self, wait: Option<GoDuration>) -> Duration {
        match wait {
            Some(w) if w.0 > 0 => w.to_std(),
            _ => self.leaf_default_wait,
        }
    }
}

fn jitter(base: Duration, rng: &mut impl Rng) -> Duration {
    let max = base.as_nanos() / 16;
    if max == 0 {
        return Duration::ZERO;
    }
    Duration::from_nanos(rng.random_range(0..u64::try_from(max).unwrap_or(u64::MAX)))
}

/// Runs a blocking evaluation.
///
/// `eval(force)` reads the current state: it returns `Some(answer)` when the query should return
/// now, or `None` to keep blocking. When the deadline passes, it is called once more with
/// `force = true` and must return `Some`. The change counter is marked seen *before* each
/// evaluation, so no change between evaluation and wait is lost.
pub async fn wait_for<T>(
    changes: &mut watch::Receiver<u64>,
    deadline: Instant,
    mut eval: impl FnMut(bool) -> Option<T>,
) -> T {
    loop {
        changes.borrow_and_update();
        if let Some(answer) = eval(false) {
            return answer;
        }
        let timed_out = match tokio::time::timeout_at(deadline, changes.changed()).await {
            Ok(Ok(())) => false,
            // Timeout, or the store is gone: answer with what there is.
            Ok(Err(_)) | Err(_) => true,
        };
        if timed_out {
            changes.borrow_and_update();
            if let Some(answer) = eval(true) {
                return answer;
            }
            // A broken evaluator must not spin: keep the contract visible in debug builds.
            debug_assert!(false, "eval(true) must answer");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn timeouts_follow_consul() {
        let cfg = BlockingConfig::default();
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..100 {
            let t = cfg.server_timeout(None, &mut rng);
            assert!(t >= Duration::from_secs(300) && t <= Duration::from_millis(318_750));
            let capped = cfg.server_timeout(Some(GoDuration::parse("1h").unwrap()), &mut rng);
            assert!(capped >= Duration::from_secs(600) && capped <= Duration::from_millis(637_500));
            let neg = cfg.server_timeout(Some(GoDuration::parse("-1s").unwrap()), &mut rng);
            assert!(neg >= Duration::from_secs(300));
        }
        assert_eq!(
            cfg.leaf_timeout(Some(GoDuration::parse("2h").unwrap())),
            Duration::from_secs(7200)
        );
        assert_eq!(cfg.leaf_timeout(None), Duration::from_secs(600));
    }

    #[tokio::test(start_paused = true)]
    async fn wakes_on_change_and_answers_on_timeout() {
        let (tx, mut rx) = watch::channel(0u64);
        let state = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(1));
        let s2 = state.clone();
        let waiter = tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            wait_for(&mut rx, deadline, |force| {
                let idx = s2.load(std::sync::atomic::Ordering::SeqCst);
                (idx > 1 || force).then_some((idx, force))
            })
            .await
        });
        tokio::task::yield_now().await;
        state.store(5, std::sync::atomic::Ordering::SeqCst);
        tx.send_modify(|v| *v += 1);
        assert_eq!(waiter.await.unwrap(), (5, false));

        let (_tx2, mut rx2) = watch::channel(0u64);
        let deadline = Instant::now() + Duration::from_secs(10);
        let answer = wait_for(&mut rx2, deadline, |force| force.then_some("timeout")).await;
        assert_eq!(answer, "timeout");
    }
}
