//! Snapshot of the JUnit rendering of the sample report, parsed back to check its structure.

use quick_junit::{NonSuccessKind, TestCaseStatus};

use super::*;
use crate::fixture::sample_report;
use crate::model::Artifact;

#[test]
fn sample_report_snapshot() {
    insta::assert_snapshot!(to_junit(&sample_report()));
}

#[test]
fn structure_parses_back() {
    let xml = to_junit(&sample_report());
    let parsed = quick_junit::Report::deserialize_from_str(&xml).unwrap();
    let suites: Vec<&str> = parsed.test_suites.iter().map(|s| s.name.as_str()).collect();
    // l7 has no scenario in the sample, so no suite.
    assert_eq!(suites, ["core", "extended", "transparent"]);
    let core = &parsed.test_suites[0];
    assert_eq!(
        (core.tests, core.failures, core.errors, core.skipped),
        (5, 1, 1, 0)
    );
    let case = |id: &str| {
        parsed
            .test_suites
            .iter()
            .flat_map(|s| &s.test_cases)
            .find(|c| c.name.as_str() == id)
            .unwrap_or_else(|| panic!("{id}"))
    };
    let ca = case("ca-rotation");
    assert_eq!(ca.classname.as_deref(), Some("core"));
    let TestCaseStatus::NonSuccess {
        kind,
        message,
        description,
        ..
    } = &ca.status
    else {
        panic!("{:?}", ca.status);
    };
    assert_eq!(*kind, NonSuccessKind::Failure);
    assert_eq!(
        message.as_deref(),
        Some("1 of 4 checks failed: new-root leaf served within T")
    );
    assert_eq!(
        description.as_deref(),
        Some(
            "[fail] new-root leaf served within T (must): expected: the proxy serves a leaf \
             signed by the new root within 3 s of the rotation; observed: old-root leaf served \
             until 4.21 s after the rotation; at 5.21 s; took 4.21 s, bound 3 s"
        )
    );
    let TestCaseStatus::NonSuccess { kind, ty, .. } = &case("index-reset").status else {
        panic!();
    };
    assert_eq!(
        (*kind, ty.as_deref()),
        (NonSuccessKind::Error, Some("agent_control_failed"))
    );
    let ps = case("persistent-connection");
    assert!(matches!(ps.status, TestCaseStatus::Success { .. }));
    assert!(ps.system_out.as_deref().unwrap().starts_with("non-strict:"));
    let TestCaseStatus::Skipped { message, .. } = &case("tproxy-outbound-virtual-ip").status else {
        panic!();
    };
    assert_eq!(
        message.as_deref(),
        Some("not-supported: not root (uid 1000)")
    );
}

#[test]
fn terminal_escapes_in_output_do_not_break_the_xml() {
    let mut r = sample_report();
    r.scenarios[2].artifacts.push(Artifact::text(
        "stderr",
        "\u{1b}[31mERROR\u{1b}[0m </system-err> & \u{0}",
    ));
    let xml = to_junit(&r);
    assert!(!xml.contains('\u{1b}') && !xml.contains('\u{0}'));
    assert!(xml.contains("ERROR &lt;/system-err&gt; &amp;"), "{xml}");
    quick_junit::Report::deserialize_from_str(&xml).unwrap();
}

#[test]
fn the_xds_tls_mode_is_a_suite_property_for_xds_proxies() {
    let mut r = sample_report();
    assert!(!to_junit(&r).contains("xds-tls-mode"));
    r.proxy.xds_tls_mode = Some("inline".into());
    assert!(to_junit(&r).contains(r#"<property name="xds-tls-mode" value="inline"/>"#));
}
