//! HTML for repeated runs: the run fact, a strip with one coloured cell per attempt (its line as
//! tooltip), and for a flaky scenario the checks on which its attempts disagreed.

use std::fmt::Write as _;

use crate::escape::html;
use crate::model::{Report, ScenarioResult, Verdict};
use crate::repeat::{attempt_line, repeated};

/// The `Repeat` fact of the header, when scenarios ran more than once.
pub(super) fn run_fact(r: &Report) -> Option<String> {
    (r.repeat > 1).then(|| {
        let flaky = if r.allow_flaky {
            "flaky scenarios allowed (--allow-flaky): they do not by themselves fail a profile"
        } else {
            "a flaky scenario fails its profile"
        };
        format!("every scenario ran {} times · {flaky}", r.repeat)
    })
}

/// ` ×3` in a repeated scenario's summary line.
pub(super) fn times(s: &ScenarioResult) -> String {
    if repeated(s) {
        format!(" <span class=\"times\">×{}</span>", s.attempts.len())
    } else {
        String::new()
    }
}

/// The attempt strip and, for a flaky scenario, the disagreeing checks.
pub(super) fn strip(out: &mut String, r: &Report, s: &ScenarioResult) {
    if !repeated(s) {
        return;
    }
    out.push_str("<div class=\"attempts\"><span class=\"label\">Attempts</span>");
    let of = s.attempts.len();
    for (i, a) in s.attempts.iter().enumerate() {
        let _ = write!(
            out,
            "<span class=\"attempt v-{}\" title=\"{}\">{}</span>",
            a.verdict,
            html(&attempt_line(a, i + 1, of)),
            i + 1
        );
    }
    out.push_str(
        "<span class=\"note\">details below: the first non-passing attempt, else the \
         first</span></div>\n",
    );
    if s.verdict != Verdict::Flaky {
        return;
    }
    let allowed = if r.allow_flaky {
        " Allowed by <code>--allow-flaky</code>: it does not by itself fail the profile."
    } else {
        ""
    };
    let disagreeing = s.disagreeing_checks();
    let checks = if disagreeing.is_empty() {
        "the attempts' verdicts differ".to_owned()
    } else {
        let names: Vec<String> = disagreeing
            .iter()
            .map(|n| format!("<code>{}</code>", html(n)))
            .collect();
        format!("checks that disagreed: {}", names.join(", "))
    };
    let _ = writeln!(
        out,
        "<p class=\"flaky\"><b>Flaky</b>: {checks}.{allowed}</p>"
    );
    out.push_str("<ol class=\"attempt-lines\">");
    for (i, a) in s.attempts.iter().enumerate() {
        let _ = write!(out, "<li>{}</li>", html(&attempt_line(a, i + 1, of)));
    }
    out.push_str("</ol>\n");
}
