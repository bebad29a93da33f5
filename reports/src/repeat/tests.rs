//! Snapshots of every rendering of a repeated run (flaky not allowed, then allowed), and what
//! each must say about attempts.

use crate::fixture::repeated_report;
use crate::{Report, Verdict, to_html, to_json, to_junit, to_markdown};

#[test]
fn repeated_sample_is_graded_as_meant() {
    let r = repeated_report(false);
    let verdicts: Vec<(&str, Verdict)> = r
        .scenarios
        .iter()
        .map(|s| (s.id.as_str(), s.verdict))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("l4-allow-deny", Verdict::Pass),
            ("intention-change", Verdict::Flaky),
            ("ca-rotation", Verdict::Fail),
            ("index-reset", Verdict::Flaky),
        ]
    );
    assert_eq!(r.profiles[0].counts.flaky, 2);
}

#[test]
fn json_round_trips_attempts() {
    let r = repeated_report(true);
    let json = to_json(&r);
    insta::assert_snapshot!(json);
    assert_eq!(Report::from_json(&json).unwrap(), r);
}

#[test]
fn junit_snapshot() {
    let xml = to_junit(&repeated_report(false));
    assert!(xml.contains("<flakyFailure"), "{xml}");
    assert!(xml.contains("<flakyError"), "{xml}");
    assert!(xml.contains("<rerunFailure"), "{xml}");
    insta::assert_snapshot!(xml);
}

#[test]
fn junit_allowed_snapshot() {
    let xml = to_junit(&repeated_report(true));
    assert!(xml.contains("allowed by --allow-flaky"), "{xml}");
    insta::assert_snapshot!(xml);
}

#[test]
fn markdown_snapshot() {
    let md = to_markdown(&repeated_report(false));
    assert!(
        md.contains("**Checks that disagreed:** refused within T"),
        "{md}"
    );
    assert!(md.contains("| Flaky |"), "{md}");
    insta::assert_snapshot!(md);
}

#[test]
fn markdown_allowed_snapshot() {
    let md = to_markdown(&repeated_report(true));
    assert!(md.contains("**Flaky, allowed**"), "{md}");
    insta::assert_snapshot!(md);
}

#[test]
fn html_snapshot() {
    let page = to_html(&repeated_report(false));
    assert!(page.contains("class=\"attempt v-fail\""), "{page}");
    assert!(
        page.contains("checks that disagreed: <code>refused within T</code>"),
        "{page}"
    );
    insta::assert_snapshot!(page);
}
