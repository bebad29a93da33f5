//! Snapshot of the Markdown rendering of the sample report, and escaping of hostile text.

use super::*;
use crate::fixture::sample_report;
use crate::model::{Artifact, CheckResult, Requirement};

#[test]
fn sample_report_snapshot() {
    insta::assert_snapshot!(to_markdown(&sample_report()));
}

#[test]
fn lists_non_passing_worst_first_then_passing() {
    let md = to_markdown(&sample_report());
    let pos = |needle: &str| {
        md.find(needle)
            .unwrap_or_else(|| panic!("{needle} missing"))
    };
    assert!(pos("`index-reset` (core): error") < pos("`ca-rotation` (core): fail"));
    assert!(pos("`ca-rotation` (core): fail") < pos("`persistent-connection` (core): non-strict"));
    assert!(pos("(core): non-strict") < pos("`agent-restart` (extended): skipped"));
    assert!(
        pos("(extended): skipped")
            < pos("`tproxy-outbound-virtual-ip` (transparent): not-supported")
    );
    assert!(pos("## Passing") < pos("`l4-allow-deny` (core): 2 check(s)"));
}

#[test]
fn hostile_text_stays_text() {
    let mut r = sample_report();
    let s = &mut r.scenarios[2];
    s.checks.push(CheckResult::new(
        "x | y",
        Requirement::Must,
        Verdict::Fail,
        "<img src=x onerror=alert(1)>",
        "line one\n# not a heading\n| not | a row |",
    ));
    s.artifacts.push(Artifact::text(
        "<b>log</b>",
        "```\n</details><script>x</script>\n",
    ));
    let md = to_markdown(&r.graded());
    assert!(!md.contains("<img"), "{md}");
    assert!(!md.contains("<b>"), "{md}");
    assert!(md.contains("| x \\| y |"), "{md}");
    assert!(
        md.contains("line one<br>\\# not a heading<br>\\| not \\| a row \\|"),
        "{md}"
    );
    // The artifact sits in a fence longer than its own backtick run, so it cannot close it.
    assert!(
        md.contains("````text\n```\n</details><script>x</script>\n````\n"),
        "{md}"
    );
}

#[test]
fn the_xds_tls_mode_is_shown_only_for_xds_proxies() {
    let mut r = sample_report();
    assert!(!to_markdown(&r).contains("xDS TLS mode"));
    r.proxy.xds_tls_mode = Some("sds".into());
    assert!(to_markdown(&r).contains("- **xDS TLS mode:** sds\n"));
}
