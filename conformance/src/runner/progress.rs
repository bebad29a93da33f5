//! Progress reporting while scenarios run: an indicatif bar on a terminal, plain lines on
//! stderr otherwise (CI logs), or nothing.

use std::sync::atomic::{AtomicUsize, Ordering};

use reports::{Report, ScenarioResult, Verdict};

/// Receives progress events (from several tasks at once).
pub trait Progress: Send + Sync {
    /// The run has `total` scenarios.
    fn start(&self, _total: usize) {}
    /// A scenario starts.
    fn begin(&self, _id: &str) {}
    /// A scenario ended with `verdict`.
    fn end(&self, _result: &ScenarioResult, _verdict: Verdict) {}
    /// The run is over.
    fn finish(&self, _report: &Report) {}
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
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
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

    fn finish(&self, _report: &Report) {
        self.0.finish_and_clear();
    }
}
