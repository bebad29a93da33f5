//! Progress reporting while scenarios run: an indicatif bar on a terminal, plain lines on
//! stderr otherwise (CI logs), or nothing.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reports::{Report, ScenarioResult, Verdict};

/// Receives progress events (from several tasks at once).
pub trait Progress: Send + Sync {
    /// The run has `total` scenarios.
    fn start(&self, _total: usize) {}
    /// A scenario starts.
    fn begin(&self, _id: &str) {}
    /// A scenario ended with `verdict`.
    fn end(&self, _result: &ScenarioResult, _verdict: Verdict) {}
    /// Scenario `id` has waited `waited` of `limit` for the proxy to listen on `on`.
    fn waiting(&self, _id: &str, _on: &str, _waited: Duration, _limit: Duration) {}
    /// The run is over.
    fn finish(&self, _report: &Report) {}
}

tokio::task_local! {
    /// The run's progress, for the scenario task that runs in its scope (see [`waiting_on`]).
    pub(super) static CURRENT: Arc<dyn Progress>;
}

/// The first "waiting for the proxy" line comes after this long, then one every
/// [`WAITING_EVERY`]: a proxy that never listens is not 30 s of silence.
const WAITING_FIRST: Duration = Duration::from_secs(2);
const WAITING_EVERY: Duration = Duration::from_secs(5);

/// Runs `wait` (the readiness wait of scenario `id` for `on`, at most `limit`), telling the
/// task's progress (if any) how long it has waited while it lasts.
pub(super) async fn waiting_on<F: Future>(
    id: &str,
    on: &str,
    limit: Duration,
    wait: F,
) -> F::Output {
    let Ok(progress) = CURRENT.try_with(Arc::clone) else {
        return wait.await;
    };
    let start = tokio::time::Instant::now();
    let ticks = async {
        tokio::time::sleep(WAITING_FIRST).await;
        loop {
            progress.waiting(id, on, start.elapsed(), limit);
            tokio::time::sleep(WAITING_EVERY).await;
        }
    };
    tokio::select! {
        r = wait => r,
        () = ticks => unreachable!("the ticks never end"),
    }
}

/// No output.
#[derive(Debug, Default)]
pub struct Silent;

impl Progress for Silent {}

/// One line per finished scenario on stderr.
#[derive(Debug, Default)]
pub struct Lines {
    total: AtomicUsize,
    done: AtomicUsize,
}

impl Progress for Lines {
    fn start(&self, total: usize) {
        self.total.store(total, Ordering::Relaxed);
        eprintln!("running {total} scenarios");
    }

    fn end(&self, r: &ScenarioResult, verdict: Verdict) {
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let total = self.total.load(Ordering::Relaxed);
        eprintln!(
            "[{n:>3}/{total}] {:<34} {:<13} {:>6} ms",
            r.id,
            verdict.as_str(),
            r.duration_ms
        );
    }

    fn waiting(&self, id: &str, on: &str, waited: Duration, limit: Duration) {
        eprintln!("{}", waiting_line(id, on, waited, limit));
    }
}

/// `ID: waiting for the proxy on ADDR (n/30 s)`.
fn waiting_line(id: &str, on: &str, waited: Duration, limit: Duration) -> String {
    format!(
        "{id}: waiting for the proxy on {on} ({}/{} s)",
        waited.as_secs(),
        limit.as_secs()
    )
}

/// An indicatif bar (hidden automatically when stderr is not a terminal).
#[derive(Debug)]
pub struct ProgressBar(indicatif::ProgressBar);

impl Default for ProgressBar {
    fn default() -> Self {
        let bar = indicatif::ProgressBar::new(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}",
        ) {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        Self(bar)
    }
}

impl Progress for ProgressBar {
    fn start(&self, total: usize) {
        self.0.set_length(u64::try_from(total).unwrap_or(u64::MAX));
    }

    fn begin(&self, id: &str) {
        self.0.set_message(id.to_owned());
    }

    fn end(&self, r: &ScenarioResult, verdict: Verdict) {
        if verdict != Verdict::Pass {
            self.0.println(format!("{:<34} {}", r.id, verdict.as_str()));
        }
        self.0.inc(1);
    }

    fn waiting(&self, id: &str, on: &str, waited: Duration, limit: Duration) {
        self.0.set_message(waiting_line(id, on, waited, limit));
    }

    fn finish(&self, _report: &Report) {
        self.0.finish_and_clear();
    }
}
