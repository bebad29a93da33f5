//! Per-scenario results: the scenario, its checks, its timeline, its artifacts and its harness
//! error, plus small constructors the runner uses to fill them in.

use serde::{Deserialize, Serialize};

use super::attempt::Attempt;
use super::verdict::{Profile, Requirement, Verdict};

/// What one scenario showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioResult {
    /// Stable catalogue id, e.g. `ca-rotation`.
    pub id: String,
    pub description: String,
    pub profile: Profile,
    /// Features the scenario needs.
    pub features: Vec<String>,
    /// Before grading, the runner sets `skipped` or `not-supported` here for a scenario it did
    /// not run; `Report::grade` computes the final value from the checks.
    pub verdict: Verdict,
    pub checks: Vec<CheckResult>,
    pub duration_ms: u64,
    /// The scenario's own seed, for randomised scenarios.
    pub seed: Option<u64>,
    /// Steps and observed events on a time axis (ms since scenario start).
    pub timeline: Vec<TimelineEvent>,
    /// Proxy output tails, agent request log, ... (inline, truncated by the runner).
    pub artifacts: Vec<Artifact>,
    /// Set when the harness itself failed running the scenario.
    pub error: Option<ErrorInfo>,
    /// With `--repeat N` (N > 1): every attempt in run order, summarised; `checks`,
    /// `timeline`, `artifacts` and `error` are then those of the representative attempt (the
    /// first failing one, else the first). Empty for a single run (added in schema 1.2).
    #[serde(default)]
    pub attempts: Vec<Attempt>,
    /// Where the scenario is defined: a link to its catalogue file (relative to the report's
    /// directory where the file is on the machine that wrote the report, else the file's path
    /// in the repository, e.g. `scenarios/catalogue/core/l4-allow-deny.toml`). `None` when
    /// absent (added in schema 1.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalogue: Option<String>,
    /// The Consul documentation pages that define the behaviour the scenario tests (URLs).
    /// Empty when absent (added in schema 1.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub docs: Vec<String>,
}

/// One graded expectation of a scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    /// e.g. `web allowed`, `api refused`, `new-root leaf served within T`.
    pub name: String,
    pub verdict: Verdict,
    pub expected: String,
    pub observed: String,
    /// When it was decided (ms since scenario start).
    pub at_ms: Option<u64>,
    /// Measured time, for "within T" checks.
    pub took_ms: Option<u64>,
    /// The T it was held to.
    pub bound_ms: Option<u64>,
    pub requirement: Requirement,
}

/// A point on a scenario's time axis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEvent {
    /// ms since scenario start.
    pub at_ms: u64,
    pub kind: EventKind,
    pub label: String,
    pub detail: Option<String>,
    /// For observations and checks: whether what was seen is what a correct proxy shows.
    pub ok: Option<bool>,
}

/// What a timeline event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// Something the harness did (a scenario step).
    Step,
    /// Something the harness saw the proxy do.
    Observation,
    /// A check being decided.
    Check,
    /// A fault injected into the agent (down, hung, servers unreachable, ...).
    Fault,
    /// A line the proxy logged that the runner chose to place on the axis.
    ProxyLog,
}

/// A file-like attachment, inline (the runner truncates it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// e.g. `proxy-stderr`, `agent-requests`.
    pub name: String,
    /// e.g. `text/plain`, `application/json`.
    pub media_type: String,
    pub content: String,
}

/// A harness failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// Stable machine name, snake_case (e.g. `proxy_not_ready`).
    pub kind: String,
    pub message: String,
}

// === impl ScenarioResult ===

impl ScenarioResult {
    /// A scenario with no checks yet; its verdict is computed by `Report::grade`.
    pub fn new(
        id: impl Into<String>,
        description: impl Into<String>,
        profile: Profile,
        features: Vec<String>,
    ) -> Self {
        Self {
            id: id.into(),
            description: description.into(),
            profile,
            features,
            verdict: Verdict::Pass,
            checks: Vec::new(),
            duration_ms: 0,
            seed: None,
            timeline: Vec::new(),
            artifacts: Vec::new(),
            error: None,
            attempts: Vec::new(),
            catalogue: None,
            docs: Vec::new(),
        }
    }

    /// Marks a scenario that was not run because the user asked to skip it.
    pub fn mark_skipped(&mut self) -> &mut Self {
        self.verdict = Verdict::Skipped;
        self
    }

    /// Marks a scenario the run was interrupted in (or before): sticky, whatever its checks say.
    /// Record when and why as a timeline event labelled `interrupted by <SIGNAL>...`.
    pub fn mark_interrupted(&mut self) -> &mut Self {
        self.verdict = Verdict::Interrupted;
        self
    }

    /// Marks a scenario that was not run because the proxy or the environment cannot do it.
    /// Record the reason as a check with verdict `not-supported` whose `observed` says why.
    pub fn mark_not_supported(&mut self) -> &mut Self {
        self.verdict = Verdict::NotSupported;
        self
    }
}

// === impl CheckResult ===

impl CheckResult {
    /// A check with no timing information.
    pub fn new(
        name: impl Into<String>,
        requirement: Requirement,
        verdict: Verdict,
        expected: impl Into<String>,
        observed: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            verdict,
            expected: expected.into(),
            observed: observed.into(),
            at_ms: None,
            took_ms: None,
            bound_ms: None,
            requirement,
        }
    }

    /// Sets when the check was decided.
    pub fn at(mut self, at_ms: u64) -> Self {
        self.at_ms = Some(at_ms);
        self
    }

    /// Sets the bound a "within T" check was held to and, if measured, how long it took.
    pub fn within(mut self, took_ms: Option<u64>, bound_ms: u64) -> Self {
        self.took_ms = took_ms;
        self.bound_ms = Some(bound_ms);
        self
    }

    /// When the clock of a "within T" check started: `at - took`, or `at - bound` when nothing
    /// was measured (the harness gave up at the bound). `None` without `at_ms`.
    pub fn window_start_ms(&self) -> Option<u64> {
        let at = self.at_ms?;
        let span = self.took_ms.or(self.bound_ms).unwrap_or(0);
        Some(at.saturating_sub(span))
    }
}

// === impl TimelineEvent ===

impl TimelineEvent {
    /// An event with no detail and no ok flag.
    pub fn new(at_ms: u64, kind: EventKind, label: impl Into<String>) -> Self {
        Self {
            at_ms,
            kind,
            label: label.into(),
            detail: None,
            ok: None,
        }
    }

    /// Sets the detail text.
    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Sets whether what was seen is correct.
    pub fn ok(mut self, ok: bool) -> Self {
        self.ok = Some(ok);
        self
    }
}

// === impl Artifact ===

impl Artifact {
    /// A `text/plain` artifact.
    pub fn text(name: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            media_type: "text/plain".to_owned(),
            content: content.into(),
        }
    }
}

// === impl ErrorInfo ===

impl ErrorInfo {
    /// A harness error with a stable `kind`.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
        }
    }
}
