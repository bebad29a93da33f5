//! Cancelling a run (SIGINT/SIGTERM): the [`Interrupt`] handle the CLI triggers and every
//! scenario watches, the marks an interrupted scenario gets (verdict `interrupted`, a timeline
//! event "interrupted by SIGINT ..."), and the board of finished results from which a report can
//! still be salvaged when the cleanup is cut short.

use std::sync::Arc;

use parking_lot::Mutex;
use reports::{EventKind, Report, ScenarioResult, TimelineEvent};
use tokio::sync::watch;

/// The signal that interrupted a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Ctrl-C.
    Int,
    /// A CI timeout or `kill`.
    Term,
}

/// Shared by the CLI and every scenario of a run: set once, by the first signal.
#[derive(Debug, Clone)]
pub struct Interrupt {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    signal: watch::Sender<Option<Signal>>,
    board: Mutex<Option<Board>>,
}

/// What `run_all` has so far: the report's header and one slot per planned scenario.
#[derive(Debug)]
struct Board {
    header: Report,
    /// When the run opened the board: a salvaged report's duration runs from here.
    opened: std::time::Instant,
    /// `Ok` = finished; `Err` = the blank result of one not finished (yet).
    slots: Vec<Result<ScenarioResult, ScenarioResult>>,
}

// === impl Signal ===

impl Signal {
    /// `SIGINT` or `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Int => "SIGINT",
            Self::Term => "SIGTERM",
        }
    }

    /// The shell's exit code for a process ended by this signal: 130 or 143.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Int => 130,
            Self::Term => 143,
        }
    }
}

// === impl Interrupt ===

impl Default for Interrupt {
    fn default() -> Self {
        Self {
            inner: Arc::new(Inner {
                signal: watch::Sender::new(None),
                board: Mutex::new(None),
            }),
        }
    }
}

impl Interrupt {
    /// Cancels the run (the first call wins; later ones change nothing).
    pub fn trigger(&self, signal: Signal) {
        self.inner.signal.send_if_modified(|s| {
            if s.is_some() {
                return false;
            }
            *s = Some(signal);
            true
        });
    }

    /// The signal that cancelled the run, if any.
    pub fn signal(&self) -> Option<Signal> {
        *self.inner.signal.borrow()
    }

    /// Resolves once the run is cancelled (at once if it already is).
    pub async fn cancelled(&self) -> Signal {
        let mut rx = self.inner.signal.subscribe();
        let seen = rx.wait_for(Option::is_some).await.ok().and_then(|s| *s);
        match seen {
            Some(s) => s,
            // The sender lives in `self`: it cannot be gone while we wait.
            None => std::future::pending().await,
        }
    }

    /// Starts the board: the report header (no scenarios) and the blank result of every
    /// planned scenario, in plan order.
    pub(crate) fn open_board(&self, header: Report, blanks: Vec<ScenarioResult>) {
        *self.inner.board.lock() = Some(Board {
            header,
            opened: std::time::Instant::now(),
            slots: blanks.into_iter().map(Err).collect(),
        });
    }

    /// Records the result of planned scenario `index`.
    pub(crate) fn post(&self, index: usize, result: &ScenarioResult) {
        if let Some(slot) = self
            .inner
            .board
            .lock()
            .as_mut()
            .and_then(|b| b.slots.get_mut(index))
        {
            *slot = Ok(result.clone());
        }
    }

    /// A graded report of what the board holds, every scenario not finished marked interrupted
    /// with `why` (for when the cleanup was cut short and `run_all` never returned). `None`
    /// before `run_all` opened the board.
    pub fn salvage(&self, why: &str) -> Option<Report> {
        let board = self.inner.board.lock();
        let board = board.as_ref()?;
        let signal = self.signal().unwrap_or(Signal::Int);
        let mut report = board.header.clone();
        // The run lasted until now, cut short or not (never the header's 0).
        report.duration_ms = u64::try_from(board.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        for slot in &board.slots {
            report.scenarios.push(match slot {
                Ok(done) => done.clone(),
                Err(blank) => {
                    let mut r = blank.clone();
                    let at = r.duration_ms;
                    mark(&mut r, signal, at, why);
                    r
                }
            });
        }
        report.environment.notes.push(format!(
            "run interrupted by {}; cleanup cut short ({why})",
            signal.name()
        ));
        report.grade();
        Some(report)
    }
}

/// Marks `result` interrupted by `signal` at `at_ms` (its own time axis), saying `detail`.
pub(crate) fn mark(result: &mut ScenarioResult, signal: Signal, at_ms: u64, detail: &str) {
    result.mark_interrupted();
    result.timeline.push(
        TimelineEvent::new(
            at_ms,
            EventKind::Step,
            format!("{}{}", reports::INTERRUPTED_LABEL, signal.name()),
        )
        .detail(detail),
    );
}

/// A scenario the run was cancelled before it started: no checks, the note on its timeline.
pub(crate) fn not_started(mut blank: ScenarioResult, signal: Signal) -> ScenarioResult {
    blank.mark_interrupted();
    blank.timeline.push(
        TimelineEvent::new(
            0,
            EventKind::Step,
            format!(
                "{}{} before it started",
                reports::INTERRUPTED_LABEL,
                signal.name()
            ),
        )
        .detail("the run was cancelled before this scenario started; nothing was run"),
    );
    blank
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blank(id: &str) -> ScenarioResult {
        ScenarioResult::new(id, "d", reports::Profile::Core, vec![])
    }

    #[tokio::test]
    async fn the_first_signal_wins_and_wakes_every_waiter() {
        let i = Interrupt::default();
        assert_eq!(i.signal(), None);
        let waiter = tokio::spawn({
            let i = i.clone();
            async move { i.cancelled().await }
        });
        i.trigger(Signal::Term);
        i.trigger(Signal::Int);
        assert_eq!(waiter.await.unwrap(), Signal::Term);
        assert_eq!(i.cancelled().await, Signal::Term);
        assert_eq!(Signal::Term.exit_code(), 143);
        assert_eq!(Signal::Int.exit_code(), 130);
    }

    #[test]
    fn salvage_keeps_finished_results_and_marks_the_rest() {
        let i = Interrupt::default();
        assert!(i.salvage("x").is_none());
        let proxy = reports::ProxyInfo {
            name: "p".into(),
            version: None,
            command: "p".into(),
            features: Vec::new(),
            bounds: Default::default(),
            xds_tls_mode: None,
        };
        let env = super::super::artifacts::environment();
        let header = Report::new(reports::Harness::new("0"), proxy, env, "", 1);
        i.open_board(header, vec![blank("a"), blank("b")]);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let mut done = blank("a");
        done.checks.push(reports::CheckResult::new(
            "c",
            reports::Requirement::Must,
            reports::Verdict::Pass,
            "e",
            "o",
        ));
        i.post(0, &done);
        i.trigger(Signal::Int);
        let r = i.salvage("a second signal").unwrap();
        assert!(
            r.duration_ms >= 5,
            "the run's duration is kept: {}",
            r.duration_ms
        );
        let verdicts: Vec<_> = r.scenarios.iter().map(|s| s.verdict).collect();
        assert_eq!(
            verdicts,
            [reports::Verdict::Pass, reports::Verdict::Interrupted]
        );
        assert_eq!(
            r.scenarios[1].timeline[0].label, "interrupted by SIGINT",
            "{:?}",
            r.scenarios[1].timeline
        );
        assert!(
            r.environment
                .notes
                .iter()
                .any(|n| n.contains("a second signal"))
        );
    }
}
