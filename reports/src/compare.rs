//! `conformance compare`: several proxies side by side, a matrix of scenarios (rows, grouped
//! by profile) × proxies (columns: name, version, xDS TLS mode), each cell the scenario's
//! verdict linking to its section in that proxy's `report.html`. Markdown and HTML.

use std::fmt::Write as _;

use crate::escape::html;
use crate::model::{Profile, Report, Verdict};
use crate::text::proxy_title;

/// One column: a report and where its `report.html` is, relative to the matrix's page.
#[derive(Debug, Clone)]
pub struct Column {
    /// The graded report.
    pub report: Report,
    /// The `report.html` next to it, as the matrix links to it (`None`: no links).
    pub html: Option<String>,
}

/// A column's heading: proxy name, version, and the xDS TLS mode when there is one.
fn heading(r: &Report) -> String {
    match &r.proxy.xds_tls_mode {
        Some(mode) => format!("{} ({mode})", proxy_title(r)),
        None => proxy_title(r),
    }
}

/// The section anchor of scenario `id` in its report's HTML page (sections are numbered in
/// profile order, as `to_html` writes them).
pub fn html_anchor(r: &Report, id: &str) -> Option<String> {
    Profile::ALL
        .iter()
        .flat_map(|p| r.scenarios.iter().filter(move |s| s.profile == *p))
        .position(|s| s.id == id)
        .map(|i| format!("scenario-{i}"))
}

/// Every scenario id of the columns, by profile then first appearance.
fn rows(columns: &[Column]) -> Vec<(Profile, String)> {
    let mut rows: Vec<(Profile, String)> = Vec::new();
    for p in Profile::ALL {
        for c in columns {
            for s in c.report.scenarios.iter().filter(|s| s.profile == p) {
                if !rows.iter().any(|(_, id)| *id == s.id) {
                    rows.push((p, s.id.clone()));
                }
            }
        }
    }
    rows
}

/// The verdict of `id` in `r` (`None`: not in that run).
fn verdict(r: &Report, id: &str) -> Option<Verdict> {
    r.scenarios.iter().find(|s| s.id == id).map(|s| s.verdict)
}

/// `r` reduced to what the matrix shows, small enough to commit: per scenario its verdict
/// (kept by the checks that decide it, their texts dropped), no timelines, artifacts,
/// descriptions or attempts. Re-graded, every verdict and outcome is the same.
pub fn slim(r: &Report) -> Report {
    let mut r = r.clone();
    r.environment.notes.clear();
    for s in &mut r.scenarios {
        s.description.clear();
        s.timeline.clear();
        s.artifacts.clear();
        s.attempts.clear();
        s.checks.retain(|c| c.verdict != Verdict::Pass);
        if s.checks.is_empty() && s.verdict == Verdict::Pass {
            s.checks.push(crate::model::CheckResult::new(
                "passed",
                crate::model::Requirement::Must,
                Verdict::Pass,
                "",
                "",
            ));
        }
        for c in &mut s.checks {
            c.expected.clear();
            if c.name != crate::ENVIRONMENT_CHECK {
                c.observed.clear();
            }
        }
        if let Some(e) = &mut s.error {
            e.message.clear();
        }
    }
    r.graded()
}

/// The matrix as GitHub-flavoured Markdown; with `catalogue` (a path prefix, e.g.
/// `../scenarios/catalogue`), each scenario id links to its catalogue file.
pub fn compare_markdown(columns: &[Column], catalogue: Option<&str>) -> String {
    let mut out = String::from("# Compatibility\n\n");
    out.push_str(
        "Each cell is the scenario's verdict in that proxy's run (a link to its details when \
         the run's report.html is at hand).\n\n",
    );
    out.push_str("| Scenario | Profile |");
    for c in columns {
        let _ = write!(out, " {} |", heading(&c.report).replace('|', "\\|"));
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(columns.len()));
    out.push('\n');
    for (profile, id) in rows(columns) {
        match catalogue {
            Some(base) => {
                let _ = write!(out, "| [`{id}`]({base}/{profile}/{id}.toml) | {profile} |");
            }
            None => {
                let _ = write!(out, "| `{id}` | {profile} |");
            }
        }
        for c in columns {
            let cell = match (verdict(&c.report, &id), &c.html) {
                (None, _) => "—".to_owned(),
                (Some(v), Some(page)) => match html_anchor(&c.report, &id) {
                    Some(a) => format!("[{v}]({page}#{a})"),
                    None => v.to_string(),
                },
                (Some(v), None) => v.to_string(),
            };
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out.push_str("\n| Profile |");
    for c in columns {
        let _ = write!(out, " {} |", heading(&c.report).replace('|', "\\|"));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(columns.len()));
    out.push('\n');
    for p in Profile::ALL {
        let _ = write!(out, "| {p} |");
        for c in columns {
            let o = c.report.profile(p).map_or("—", |r| r.outcome.as_str());
            let _ = write!(out, " {o} |");
        }
        out.push('\n');
    }
    out
}

/// The matrix as one self-contained HTML page.
pub fn compare_html(columns: &[Column]) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta \
         name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>Compatibility\
         </title>\n<style>\n",
    );
    out.push_str(crate::html::STYLE);
    out.push_str(
        "table.compare { display: block; overflow-x: auto; } table.compare td { white-space: \
         nowrap; }\n</style>\n</head>\n<body>\n<main>\n<h1>Compatibility</h1>\n<table \
         class=\"compare\">\n<thead><tr><th>Scenario</th><th>Profile</th>",
    );
    for c in columns {
        let _ = write!(out, "<th>{}</th>", html(&heading(&c.report)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (profile, id) in rows(columns) {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td>{profile}</td>",
            html(&id)
        );
        for c in columns {
            let cell = match verdict(&c.report, &id) {
                None => "—".to_owned(),
                Some(v) => {
                    let badge = format!("<span class=\"verdict v-{v}\">{v}</span>");
                    match (&c.html, html_anchor(&c.report, &id)) {
                        (Some(page), Some(a)) => {
                            format!("<a href=\"{}#{a}\">{badge}</a>", html(page))
                        }
                        _ => badge,
                    }
                }
            };
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</main>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_is_a_row_and_every_cell_links_to_its_details() {
        let a = crate::fixture::sample_report();
        let mut b = a.clone();
        b.proxy.name = "other".into();
        b.scenarios.truncate(1);
        let cols = [
            Column {
                report: a.clone(),
                html: Some("a/report.html".into()),
            },
            Column {
                report: b,
                html: None,
            },
        ];
        let md = compare_markdown(&cols, None);
        for s in &a.scenarios {
            assert!(md.contains(&format!("`{}`", s.id)), "{md}");
        }
        assert!(md.contains("(a/report.html#scenario-"), "{md}");
        assert!(md.contains("| other"), "{md}");
        assert!(md.contains("—"), "a scenario the second run lacks: {md}");
        let page = compare_html(&cols);
        let slim_a = slim(&a);
        for (x, y) in a.scenarios.iter().zip(&slim_a.scenarios) {
            assert_eq!(x.verdict, y.verdict, "{}", x.id);
        }
        assert_eq!(a.profiles, slim_a.profiles);
        assert!(compare_markdown(&cols, Some("../cat")).contains("](../cat/"));
        assert!(page.contains("href=\"a/report.html#scenario-0\""), "{page}");
    }
}
