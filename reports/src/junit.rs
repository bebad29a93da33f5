//! `to_junit`: JUnit XML via quick-junit. One `<testsuite>` per profile that has scenarios,
//! one `<testcase>` per scenario (classname = profile, name = scenario id).
//!
//! Mapping: pass -> success; fail -> `<failure>` listing the failed checks (expected, observed,
//! when, took/bound); error -> `<error>` (type = the harness error kind); skipped and
//! not-supported -> `<skipped message="skipped: ..."/"not supported: ...">`; non-strict ->
//! success (JUnit has no "passed with warnings") with a `<system-out>` note naming the SHOULD
//! checks that failed; interrupted -> `<error type="interrupted">` with the reason and the checks
//! decided before the interruption. Artifacts of non-passing scenarios go to `<system-err>`.
//! Repeated scenarios (flaky ones included) carry their attempts as reruns (`junit/attempts.rs`).

mod attempts;

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};

use crate::model::{Profile, Report, ScenarioResult, Verdict};
use crate::text::{check_line, not_run_reason, offending_checks, proxy_title};

/// Renders the report as JUnit XML.
pub fn to_junit(report: &Report) -> String {
    let mut junit =
        quick_junit::Report::new(format!("{}: {}", report.harness.name, proxy_title(report)));
    junit.set_time(Duration::from_millis(report.duration_ms));
    for profile in Profile::ALL {
        let scenarios: Vec<&ScenarioResult> = report
            .scenarios
            .iter()
            .filter(|s| s.profile == profile)
            .collect();
        if scenarios.is_empty() {
            continue;
        }
        let mut suite = TestSuite::new(profile.as_str());
        suite.add_properties(suite_properties(report, profile));
        let time: u64 = scenarios.iter().map(|s| s.duration_ms).sum();
        suite.set_time(Duration::from_millis(time));
        suite.add_test_cases(scenarios.into_iter().map(|s| test_case(report, s)));
        junit.add_test_suite(suite);
    }
    // Serialising into memory cannot fail: quick-junit only reports writer errors, and
    // `XmlString` has already removed characters XML cannot carry.
    junit.to_string().unwrap_or_else(|e| {
        let e = crate::escape::html(&e.to_string());
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuites name=\"junit serialization failed: {e}\"/>\n"
        )
    })
}

fn suite_properties(report: &Report, profile: Profile) -> Vec<Property> {
    let mut props = vec![
        Property::new("proxy", proxy_title(report)),
        Property::new("proxy-command", &report.proxy.command),
        Property::new("proxy-features", report.proxy.features.join(",")),
        Property::new("seed", report.seed.to_string()),
        Property::new("started-at", &report.started_at),
        Property::new("schema-version", &report.schema_version),
    ];
    if let Some(mode) = &report.proxy.xds_tls_mode {
        props.push(Property::new("xds-tls-mode", mode));
    }
    if report.repeat > 1 {
        props.push(Property::new("repeat", report.repeat.to_string()));
        props.push(Property::new("allow-flaky", report.allow_flaky.to_string()));
    }
    if let Some(p) = report.profile(profile) {
        props.push(Property::new("outcome", p.outcome.as_str()));
    }
    props
}

fn test_case(report: &Report, s: &ScenarioResult) -> TestCase {
    let mut status = match s.verdict {
        Verdict::Pass | Verdict::NonStrict => TestCaseStatus::success(),
        Verdict::Fail => failure(s),
        Verdict::Error => error(s),
        Verdict::Flaky => attempts::flaky_status(report, s),
        Verdict::Interrupted => interrupted(report, s),
        Verdict::Skipped | Verdict::NotSupported => {
            let mut st = TestCaseStatus::skipped();
            st.set_message(format!("{}: {}", s.verdict, not_run_reason(report, s)));
            st.set_type(s.verdict.as_str());
            st
        }
    };
    if matches!(s.verdict, Verdict::Fail | Verdict::Error) {
        attempts::add_reruns(&mut status, s);
    }
    let mut case = TestCase::new(s.id.as_str(), status);
    case.set_classname(s.profile.as_str());
    case.set_time(Duration::from_millis(s.duration_ms));
    if let Some(seed) = s.seed {
        case.add_property(Property::new("seed", seed.to_string()));
    }
    if s.verdict == Verdict::NonStrict {
        let mut note = String::from(
            "non-strict: every MUST holds, but a SHOULD does not (reported as passed):\n",
        );
        for c in offending_checks(s) {
            note.push_str(&check_line(c));
            note.push('\n');
        }
        case.set_system_out(note);
    }
    if s.verdict == Verdict::Flaky && report.allow_flaky {
        case.set_system_out(attempts::allowed_note(s));
    }
    if matches!(
        s.verdict,
        Verdict::Fail | Verdict::Error | Verdict::NonStrict | Verdict::Flaky | Verdict::Interrupted
    ) && !s.artifacts.is_empty()
    {
        let err: Vec<String> = s
            .artifacts
            .iter()
            .map(|a| {
                let content = a.content.trim_end_matches('\n');
                format!("==> {} ({}) <==\n{content}", a.name, a.media_type)
            })
            .collect();
        case.set_system_err(err.join("\n\n"));
    }
    case
}

fn failure(s: &ScenarioResult) -> TestCaseStatus {
    let failed: Vec<&str> = offending_checks(s).map(|c| c.name.as_str()).collect();
    let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
    st.set_message(format!(
        "{} of {} checks failed: {}",
        failed.len(),
        s.checks.len(),
        failed.join(", ")
    ));
    st.set_type("fail");
    st.set_description(check_lines(s));
    st
}

fn error(s: &ScenarioResult) -> TestCaseStatus {
    let mut st = TestCaseStatus::non_success(NonSuccessKind::Error);
    match &s.error {
        Some(e) => {
            st.set_message(e.message.as_str());
            st.set_type(e.kind.as_str());
        }
        None => {
            let errored: Vec<&str> = s
                .checks
                .iter()
                .filter(|c| c.verdict == Verdict::Error)
                .map(|c| c.name.as_str())
                .collect();
            st.set_message(format!("harness error in check(s): {}", errored.join(", ")));
            st.set_type("check_error");
        }
    }
    let lines = check_lines(s);
    if !lines.is_empty() {
        st.set_description(lines);
    }
    st
}

/// An `<error type="interrupted">`: the scenario was not played to its end, so it neither
/// passed nor failed; the checks it decided so far are listed.
fn interrupted(report: &Report, s: &ScenarioResult) -> TestCaseStatus {
    let mut st = TestCaseStatus::non_success(NonSuccessKind::Error);
    st.set_message(format!("interrupted: {}", not_run_reason(report, s)));
    st.set_type("interrupted");
    let lines: Vec<String> = s.checks.iter().map(check_line).collect();
    if !lines.is_empty() {
        st.set_description(lines.join("\n"));
    }
    st
}

/// The offending checks, one per line.
fn check_lines(s: &ScenarioResult) -> String {
    offending_checks(s)
        .map(check_line)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests;
