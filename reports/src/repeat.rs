//! Plain-text phrasing of a repeated scenario's attempts, shared by the JUnit, Markdown and HTML
//! renderers: the attempt strip, the disagreeing checks, one line per attempt.

use crate::model::{Attempt, Report, ScenarioResult, Verdict};

/// Whether `s` ran more than once.
pub(crate) fn repeated(s: &ScenarioResult) -> bool {
    s.attempts.len() > 1
}

/// `pass, fail, pass` (every attempt's verdict, in run order).
pub(crate) fn strip(s: &ScenarioResult) -> String {
    s.attempts
        .iter()
        .map(|a| a.verdict.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `3 attempts: pass, fail, pass; disagreeing checks: web allowed` (the second part only when
/// some check disagreed).
pub(crate) fn summary(s: &ScenarioResult) -> String {
    let mut line = format!("{} attempts: {}", s.attempts.len(), strip(s));
    let disagreeing = s.disagreeing_checks();
    if !disagreeing.is_empty() {
        line.push_str("; disagreeing checks: ");
        line.push_str(&disagreeing.join(", "));
    }
    line
}

/// `attempt 2 of 3: fail in 1.2 s; harness error proxy_not_ready; not passing: web allowed
/// (fail)`.
pub(crate) fn attempt_line(a: &Attempt, n: usize, of: usize) -> String {
    let mut line = format!(
        "attempt {n} of {of}: {} in {}",
        a.verdict,
        crate::text::fmt_ms(a.duration_ms)
    );
    if let Some(kind) = &a.error_kind {
        line.push_str("; harness error ");
        line.push_str(kind);
    }
    let bad: Vec<String> = a
        .checks
        .iter()
        .filter(|c| c.verdict != Verdict::Pass)
        .map(|c| format!("{} ({})", c.name, c.verdict))
        .collect();
    if !bad.is_empty() {
        line.push_str("; not passing: ");
        line.push_str(&bad.join(", "));
    }
    line
}

/// Whether the profile tables get a Flaky column (a repeated run, or any flaky scenario).
pub(crate) fn flaky_column(r: &Report) -> bool {
    r.repeat > 1 || r.profiles.iter().any(|p| p.counts.flaky > 0)
}

#[cfg(test)]
mod tests;
