//! The top of the HTML page, failures first: a "Needs attention" list of every scenario that
//! did not pass (worst first), each with its failed checks' verdicts (or why it did not run
//! and the fix) and a link to its section.

use std::fmt::Write as _;

use crate::escape::html;
use crate::model::{Report, ScenarioResult, Verdict};
use crate::text::{not_run_fix, not_run_reason};

/// Writes the "Needs attention" block; nothing when every scenario passed. `index_of` gives a
/// scenario's section anchor number.
pub(super) fn block(out: &mut String, r: &Report, index_of: &dyn Fn(&ScenarioResult) -> usize) {
    let mut attention: Vec<&ScenarioResult> = r
        .scenarios
        .iter()
        .filter(|s| s.verdict != Verdict::Pass)
        .collect();
    if attention.is_empty() {
        return;
    }
    attention.sort_by_key(|s| s.verdict.rank());
    out.push_str("<section class=\"attention\">\n<h2>Needs attention</h2>\n<ul>\n");
    for s in attention {
        let _ = write!(
            out,
            "<li>{} <a href=\"#scenario-{}\"><code>{}</code></a> <small>{}</small>",
            super::verdict_badge(s.verdict),
            index_of(s),
            html(&s.id),
            s.profile
        );
        let failed: Vec<String> = s
            .checks
            .iter()
            .filter(|c| !matches!(c.verdict, Verdict::Pass | Verdict::NotSupported))
            .map(|c| {
                format!(
                    "<li><b>{}</b> [{}]: expected {}; observed {}</li>",
                    html(&c.name),
                    c.verdict,
                    html(&c.expected),
                    html(&c.observed)
                )
            })
            .collect();
        if let Some(e) = &s.error {
            let _ = write!(
                out,
                "<br><span class=\"reason\">harness error <code>{}</code>: {}</span>",
                html(&e.kind),
                html(&e.message)
            );
        }
        if matches!(
            s.verdict,
            Verdict::Skipped | Verdict::NotSupported | Verdict::Interrupted
        ) {
            let _ = write!(
                out,
                "<br><span class=\"reason\">{}</span>",
                html(&not_run_reason(r, s))
            );
            if let Some(fix) = not_run_fix(r, s) {
                let _ = write!(out, "<br><span class=\"fix\">Fix: {}</span>", html(&fix));
            }
        } else if !failed.is_empty() {
            let _ = write!(out, "<ul class=\"failed\">{}</ul>", failed.join(""));
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n</section>\n");
}
