//! Snapshot of the HTML page for the sample report, escaping of hostile text everywhere, and
//! self-containedness (no external resources).

use super::*;
use crate::fixture::sample_report;
use crate::model::{Artifact, CheckResult, ErrorInfo, EventKind, Requirement, TimelineEvent};

#[test]
fn sample_report_snapshot() {
    insta::assert_snapshot!(to_html(&sample_report()));
}

const EVIL: &str = "<script>alert(1)</script>";

/// The sample report with `EVIL` (and an attribute breakout attempt) in every text field.
fn hostile_report() -> Report {
    let mut r = sample_report();
    r.proxy.name = EVIL.into();
    r.proxy.version = Some(EVIL.into());
    r.proxy.command = format!("my-proxy {EVIL}");
    r.proxy.features.push(EVIL.into());
    r.proxy.bounds.insert(EVIL.into(), 1);
    r.harness.version = EVIL.into();
    r.started_at = EVIL.into();
    r.environment.hostname = Some(EVIL.into());
    r.environment.notes.push(EVIL.into());
    let s = &mut r.scenarios[2];
    s.id = format!("x\" onmouseover=\"alert(1){EVIL}");
    s.description = EVIL.into();
    s.features.push(EVIL.into());
    s.error = Some(ErrorInfo::new(EVIL, EVIL));
    s.checks.push(
        CheckResult::new(EVIL, Requirement::Must, Verdict::Fail, EVIL, EVIL)
            .at(100)
            .within(Some(50), 40),
    );
    s.timeline
        .push(TimelineEvent::new(50, EventKind::Step, EVIL).detail(EVIL));
    s.timeline.push(
        TimelineEvent::new(60, EventKind::Observation, EVIL)
            .detail(EVIL)
            .ok(false),
    );
    s.artifacts.push(Artifact {
        name: EVIL.into(),
        media_type: EVIL.into(),
        content: format!("{EVIL}\n</pre></details>\u{1b}[31mred"),
    });
    r.graded()
}

#[test]
fn hostile_text_is_escaped_everywhere() {
    let page = to_html(&hostile_report());
    assert!(
        !page.to_lowercase().contains("<script"),
        "a raw <script> got through"
    );
    assert!(!page.contains("\" onmouseover"), "attribute breakout");
    assert!(page.contains("x&quot; onmouseover=&quot;alert(1)&lt;script&gt;"));
    assert!(
        page.contains("&lt;/pre&gt;&lt;/details&gt;red"),
        "artifact escaped and cleaned"
    );
    assert!(!page.contains('\u{1b}'));
    // Every place that received it shows it as text.
    let shown = page
        .matches("&lt;script&gt;alert(1)&lt;/script&gt;")
        .count();
    assert!(shown >= 20, "only {shown} escaped occurrences");
}

#[test]
fn page_is_self_contained() {
    for page in [to_html(&sample_report()), to_html(&hostile_report())] {
        let lower = page.to_lowercase();
        for needle in [
            "http://",
            "src=",
            "url(",
            "@import",
            "<link",
            "<script",
            "<iframe",
            "<object",
            "<embed",
            "javascript:",
            "data:",
        ] {
            assert!(!lower.contains(needle), "page contains {needle}");
        }
        // Links point inside the page, to a catalogue file (a relative path) or to Consul's
        // documentation; nothing is loaded from outside.
        for (i, _) in lower.match_indices("href=\"") {
            let href = &lower[i + 6..];
            assert!(
                href.starts_with('#')
                    || href.starts_with("../scenarios/catalogue/")
                    || href.starts_with("https://developer.hashicorp.com/consul/"),
                "unexpected href at {i}: {}",
                &href[..href.len().min(60)]
            );
        }
        assert_eq!(
            lower.matches("https://").count(),
            lower.matches("href=\"https://").count()
        );
    }
}

#[test]
fn non_passing_scenarios_start_open() {
    let page = to_html(&sample_report());
    let opening = |verdict: &str| {
        page.lines()
            .filter(|l| l.starts_with(&format!("<details class=\"scenario b-{verdict}\"")))
            .map(|l| l.ends_with(" open>"))
            .collect::<Vec<_>>()
    };
    assert_eq!(opening("fail"), [true]);
    assert_eq!(opening("error"), [true]);
    assert_eq!(opening("non-strict"), [true]);
    assert_eq!(opening("pass"), [false; 4]);
    assert_eq!(opening("skipped"), [false]);
    assert_eq!(opening("not-supported"), [false]);
}

#[test]
fn badges_link_to_profiles_that_have_sections() {
    let page = to_html(&sample_report());
    assert!(
        page.contains(
            "<a href=\"#profile-core\" class=\"badge o-failure\">core <b>failure</b></a>"
        )
    );
    assert!(page.contains("<section id=\"profile-core\">"));
    // l7 has no scenario: a plain badge, no section, no dangling link.
    assert!(page.contains("<span class=\"badge o-not-run\">l7 <b>not-run</b></span>"));
    assert!(!page.contains("#profile-l7"));
}

#[test]
fn failures_come_first_with_reasons_fixes_and_an_interrupted_column() {
    let page = to_html(&sample_report());
    let attention = page
        .find("Needs attention")
        .expect("a needs-attention block");
    let profiles = page.find("<h2>Profiles</h2>").unwrap();
    let facts = page.find("Run details").unwrap();
    assert!(attention < facts && facts < profiles, "failures first");
    assert!(page.contains("<th>Interrupted</th>"));
}

#[test]
fn each_scenario_links_its_catalogue_file_and_consul_docs() {
    let page = to_html(&sample_report());
    assert!(
        page.contains(
            "<a href=\"../scenarios/catalogue/core/l4-allow-deny.toml\">catalogue: l4-allow-deny.toml</a>"
        ),
        "{page}"
    );
    assert!(
        page.contains(
            "<a href=\"https://developer.hashicorp.com/consul/docs/connect/intentions\" rel=\"noreferrer\">Consul: connect/intentions</a>"
        ),
        "{page}"
    );
    // A report from elsewhere cannot smuggle a script or an absolute file link in.
    let mut r = sample_report();
    r.scenarios[0].catalogue = Some("javascript:alert(1)".into());
    r.scenarios[0].docs = vec!["javascript:alert(1)".into(), "http://example.com/x".into()];
    let page = to_html(&r);
    assert!(!page.contains("javascript:"), "{page}");
    assert!(!page.contains("example.com"), "{page}");
}
