//! `to_markdown`: a GitHub-flavoured Markdown summary (fits `$GITHUB_STEP_SUMMARY`): run facts,
//! a table per profile, one section per non-passing scenario with its checks, then a compact
//! list of the passing ones. All report text is escaped (it may come from the proxy).

mod attempts;
mod escape;

use std::fmt::Write as _;

use self::escape::{code, fenced, text};
use crate::escape::html;
use crate::model::{Outcome, Report, ScenarioResult, Verdict};
use crate::text::{fmt_ms, level, not_run_reason, proxy_title, timing};

/// Renders the report as GitHub-flavoured Markdown.
pub fn to_markdown(report: &Report) -> String {
    let mut out = String::new();
    header(&mut out, report);
    profiles(&mut out, report);
    let mut attention: Vec<&ScenarioResult> = report
        .scenarios
        .iter()
        .filter(|s| s.verdict != Verdict::Pass)
        .collect();
    attention.sort_by_key(|s| s.verdict.rank());
    if !attention.is_empty() {
        out.push_str("## Needs attention\n\n");
        for s in attention {
            scenario_section(&mut out, report, s);
        }
    }
    let passing: Vec<&ScenarioResult> = report
        .scenarios
        .iter()
        .filter(|s| s.verdict == Verdict::Pass)
        .collect();
    if !passing.is_empty() {
        out.push_str("## Passing\n\n");
        for s in passing {
            let _ = writeln!(
                out,
                "- {} {} ({}): {} check(s), {}{}",
                verdict_icon(s.verdict),
                code(&s.id),
                s.profile,
                s.checks.len(),
                fmt_ms(s.duration_ms),
                attempts::times(s)
            );
        }
    }
    out
}

fn header(out: &mut String, r: &Report) {
    let _ = writeln!(out, "# Conformance report: {}\n", text(&proxy_title(r)));
    let _ = writeln!(out, "- **Command:** {}", code(&r.proxy.command));
    let features = r.proxy.features.iter().map(|f| text(f)).collect::<Vec<_>>();
    let _ = writeln!(out, "- **Features:** {}", or_none(&features.join(", ")));
    let bounds = r
        .proxy
        .bounds
        .iter()
        .map(|(k, v)| format!("{} {}", text(k), fmt_ms(*v)))
        .collect::<Vec<_>>();
    let _ = writeln!(
        out,
        "- **Declared bounds:** {}",
        or_none(&bounds.join(", "))
    );
    if let Some(mode) = &r.proxy.xds_tls_mode {
        let _ = writeln!(out, "- **xDS TLS mode:** {}", text(mode));
    }
    let _ = writeln!(
        out,
        "- **Run:** started {}, took {}, seed {}",
        text(&r.started_at),
        fmt_ms(r.duration_ms),
        r.seed
    );
    let _ = writeln!(
        out,
        "- **Harness:** {} {}, report schema {}",
        text(&r.harness.name),
        text(&r.harness.version),
        text(&r.schema_version)
    );
    attempts::run_fact(out, r);
    let env = &r.environment;
    let mut facts = vec![
        format!("{}/{}", text(&env.os), text(&env.arch)),
        format!("{} CPU(s)", env.cpus),
    ];
    if let Some(host) = &env.hostname {
        facts.push(format!("host {}", text(host)));
    }
    if env.ci {
        facts.push("CI".to_owned());
    }
    let _ = writeln!(out, "- **Environment:** {}", facts.join(", "));
    for note in &env.notes {
        let _ = writeln!(out, "- **Note:** {}", text(note));
    }
}

fn profiles(out: &mut String, r: &Report) {
    out.push_str("\n## Profiles\n\n");
    let flaky = crate::repeat::flaky_column(r);
    out.push_str(
        "| Profile | Outcome | Pass | Fail | Non-strict | Skipped | Error | Not supported |",
    );
    out.push_str(if flaky { " Flaky |\n" } else { "\n" });
    out.push_str("|---|---|--:|--:|--:|--:|--:|--:|");
    out.push_str(if flaky { "--:|\n" } else { "\n" });
    for p in &r.profiles {
        let c = &p.counts;
        let _ = write!(
            out,
            "| {} | {} {} | {} | {} | {} | {} | {} | {} |",
            p.profile,
            outcome_icon(p.outcome),
            p.outcome,
            c.pass,
            c.fail,
            c.non_strict,
            c.skipped,
            c.error,
            c.not_supported
        );
        if flaky {
            let _ = write!(out, " {} |", c.flaky);
        }
        out.push('\n');
    }
    out.push('\n');
}

fn scenario_section(out: &mut String, r: &Report, s: &ScenarioResult) {
    let _ = writeln!(
        out,
        "### {} {} ({}): {}\n",
        verdict_icon(s.verdict),
        code(&s.id),
        s.profile,
        s.verdict
    );
    let mut facts = vec![format!("**What:** {}", text(&s.description))];
    if s.duration_ms > 0 {
        facts.push(format!("took {}", fmt_ms(s.duration_ms)));
    }
    if let Some(seed) = s.seed {
        facts.push(format!("seed {seed}"));
    }
    if !s.features.is_empty() {
        let f = s.features.iter().map(|f| text(f)).collect::<Vec<_>>();
        facts.push(format!("needs {}", f.join(", ")));
    }
    let _ = writeln!(out, "{}\n", facts.join(" · "));
    if let Some(e) = &s.error {
        let _ = writeln!(
            out,
            "**Harness error** {}: {}\n",
            code(&e.kind),
            text(&e.message)
        );
    }
    if matches!(
        s.verdict,
        Verdict::Skipped | Verdict::NotSupported | Verdict::Interrupted
    ) {
        let _ = writeln!(out, "**Reason:** {}\n", text(&not_run_reason(r, s)));
    }
    attempts::section(out, r, s);
    if !s.checks.is_empty() {
        out.push_str(
            "| | Check | Level | Expected | Observed | At | Timing |\n\
             |---|---|---|---|---|---|---|\n",
        );
        for c in &s.checks {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                verdict_icon(c.verdict),
                text(&c.name),
                level(c.requirement),
                text(&c.expected),
                text(&c.observed),
                c.at_ms.map(fmt_ms).unwrap_or_default(),
                timing(c)
            );
        }
        out.push('\n');
    }
    for a in &s.artifacts {
        let _ = writeln!(
            out,
            "<details><summary>{} ({})</summary>\n\n{}\n</details>\n",
            html(&a.name),
            html(&a.media_type),
            fenced(&a.content)
        );
    }
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { "none" } else { s }
}

fn verdict_icon(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "✅",
        Verdict::Fail => "❌",
        Verdict::NonStrict => "⚠️",
        Verdict::Skipped => "⏭️",
        Verdict::NotSupported => "➖",
        Verdict::Error => "💥",
        Verdict::Flaky => "🎲",
        Verdict::Interrupted => "⏹️",
    }
}

fn outcome_icon(o: Outcome) -> &'static str {
    match o {
        Outcome::Success => "✅",
        Outcome::Partial => "⚠️",
        Outcome::Failure => "❌",
        Outcome::NotRun => "➖",
    }
}

#[cfg(test)]
mod tests;
