//! Markdown for repeated runs: the run fact, the attempt strip of a scenario and the checks on
//! which its attempts disagreed.

use std::fmt::Write as _;

use super::escape::text;
use super::verdict_icon;
use crate::model::{Report, ScenarioResult, Verdict};
use crate::repeat::{attempt_line, repeated};

/// `- **Repeat:** ...` in the run facts, when scenarios ran more than once.
pub(super) fn run_fact(out: &mut String, r: &Report) {
    if r.repeat <= 1 {
        return;
    }
    let flaky = if r.allow_flaky {
        "a flaky scenario was allowed (--allow-flaky): it does not by itself fail its profile"
    } else {
        "a flaky scenario fails its profile"
    };
    let _ = writeln!(
        out,
        "- **Repeat:** every scenario ran {} times; {flaky}",
        r.repeat
    );
}

/// The attempt strip and, for a flaky scenario, the disagreeing checks and every attempt.
pub(super) fn section(out: &mut String, r: &Report, s: &ScenarioResult) {
    if !repeated(s) {
        return;
    }
    let icons: Vec<&str> = s.attempts.iter().map(|a| verdict_icon(a.verdict)).collect();
    let _ = writeln!(
        out,
        "**Attempts ({}):** {} (details below are those of the first non-passing attempt, else \
         the first)\n",
        s.attempts.len(),
        icons.join(" ")
    );
    if s.verdict != Verdict::Flaky {
        return;
    }
    if r.allow_flaky {
        out.push_str(
            "**Flaky, allowed** (`--allow-flaky`): does not by itself fail the profile.\n\n",
        );
    }
    let disagreeing = s.disagreeing_checks();
    if !disagreeing.is_empty() {
        let names: Vec<String> = disagreeing.iter().map(|n| text(n)).collect();
        let _ = writeln!(out, "**Checks that disagreed:** {}\n", names.join(", "));
    }
    let of = s.attempts.len();
    for (i, a) in s.attempts.iter().enumerate() {
        let _ = writeln!(
            out,
            "- {} {}",
            verdict_icon(a.verdict),
            text(&attempt_line(a, i + 1, of))
        );
    }
    out.push('\n');
}

/// ` × 3` after a passing scenario that ran 3 times.
pub(super) fn times(s: &ScenarioResult) -> String {
    if repeated(s) {
        format!(" × {}", s.attempts.len())
    } else {
        String::new()
    }
}
