//! Plain-text phrasing shared by the JUnit, Markdown and HTML renderers: durations, check
//! timing, why a scenario was not run, and which checks made a scenario non-passing.

use crate::model::{CheckResult, Report, Requirement, ScenarioResult, Verdict};

/// `850 ms`, `4.21 s`, `2 min 5 s`: exact (no rounding), trailing zeros dropped.
pub(crate) fn fmt_ms(ms: u64) -> String {
    if ms < 1000 {
        return format!("{ms} ms");
    }
    let (min, rest) = (ms / 60_000, ms % 60_000);
    match (min, rest) {
        (0, _) => secs(rest),
        (_, 0) => format!("{min} min"),
        _ => format!("{min} min {}", secs(rest)),
    }
}

fn secs(ms: u64) -> String {
    let (whole, frac) = (ms / 1000, ms % 1000);
    if frac == 0 {
        return format!("{whole} s");
    }
    let frac = format!("{frac:03}");
    format!("{whole}.{} s", frac.trim_end_matches('0'))
}

/// `at 5.21 s` or empty.
pub(crate) fn when(c: &CheckResult) -> String {
    c.at_ms
        .map(|at| format!("at {}", fmt_ms(at)))
        .unwrap_or_default()
}

/// For "within T" checks: `took 4.21 s, bound 3 s` (or `not within 3 s` when nothing was
/// measured); empty otherwise.
pub(crate) fn timing(c: &CheckResult) -> String {
    match (c.took_ms, c.bound_ms) {
        (Some(took), Some(bound)) => format!("took {}, bound {}", fmt_ms(took), fmt_ms(bound)),
        (None, Some(bound)) => format!("not within {}", fmt_ms(bound)),
        (Some(took), None) => format!("took {}", fmt_ms(took)),
        (None, None) => String::new(),
    }
}

/// `when` and `timing` joined: `at 5.21 s; took 4.21 s, bound 3 s`.
pub(crate) fn when_and_timing(c: &CheckResult) -> String {
    [when(c), timing(c)]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// One line per check for plain-text contexts.
pub(crate) fn check_line(c: &CheckResult) -> String {
    let mut line = format!(
        "[{}] {} ({}): expected: {}; observed: {}",
        c.verdict, c.name, c.requirement, c.expected, c.observed
    );
    let t = when_and_timing(c);
    if !t.is_empty() {
        line.push_str("; ");
        line.push_str(&t);
    }
    line
}

/// The checks that kept the scenario from passing: errored, failed (MUST or SHOULD) and
/// non-strict ones.
pub(crate) fn offending_checks(s: &ScenarioResult) -> impl Iterator<Item = &CheckResult> {
    s.checks.iter().filter(|c| is_failing(c))
}

/// Whether this check's failure is the scenario's failing point (drawn highlighted).
pub(crate) fn is_failing(c: &CheckResult) -> bool {
    matches!(
        c.verdict,
        Verdict::Error | Verdict::Fail | Verdict::NonStrict
    )
}

/// Short label for a check's requirement level in tables: `MUST` / `SHOULD`.
pub(crate) fn level(r: Requirement) -> &'static str {
    match r {
        Requirement::Must => "MUST",
        Requirement::Should => "SHOULD",
    }
}

/// Why a skipped or not-supported scenario did not run: the `observed` text of its checks with
/// that verdict, else the features the proxy did not declare, else a generic phrase; for an
/// interrupted one, its last "interrupted by ..." timeline event.
/// The fix for a scenario this environment could not run, from the environment check's text
/// (conformance's wording: root, `ip`, `iptables`, network namespaces, a proxy image).
pub fn environment_fix(why: &str) -> &'static str {
    if why.contains("need root") {
        "run as root (e.g. `sudo -E conformance run ...`)"
    } else if why.contains("`iptables`") || why.contains("iptables does not work") {
        "`apt-get install iptables` (a kernel with the nat table)"
    } else if why.contains("`ip`") {
        "`apt-get install iproute2`"
    } else if why.contains("network namespace") {
        "run as root where network namespaces can be created (a privileged container)"
    } else if why.contains("proxy image") {
        "run the proxy as a local process (--proxy-cmd or --manifest, without --proxy-image)"
    } else {
        "see the scenario's environment check"
    }
}

/// How to make a scenario that did not run run: the environment's fix, or declaring the
/// missing features; `None` when it was skipped or interrupted.
pub(crate) fn not_run_fix(report: &Report, s: &ScenarioResult) -> Option<String> {
    if s.verdict != Verdict::NotSupported {
        return None;
    }
    if let Some(c) = s
        .checks
        .iter()
        .find(|c| c.name == crate::ENVIRONMENT_CHECK && c.verdict == Verdict::NotSupported)
    {
        return Some(environment_fix(&c.observed).to_owned());
    }
    let missing: Vec<&str> = s
        .features
        .iter()
        .filter(|f| !report.proxy.features.contains(f))
        .map(String::as_str)
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "if the proxy supports it, declare {} (--features or the manifest's features)",
            missing.join(", ")
        )
    })
}

/// The start of the timeline label of a scenario the run chose not to start (`--fail-fast`).
pub const NOT_STARTED_LABEL: &str = "not started: ";

pub(crate) fn not_run_reason(report: &Report, s: &ScenarioResult) -> String {
    let reasons: Vec<&str> = s
        .checks
        .iter()
        .filter(|c| c.verdict == s.verdict && !c.observed.is_empty())
        .map(|c| c.observed.as_str())
        .collect();
    if !reasons.is_empty() {
        return reasons.join("; ");
    }
    match s.verdict {
        // `conformance run --fail-fast` records why it did not start the scenario.
        Verdict::Skipped => s
            .timeline
            .iter()
            .find(|t| t.label.starts_with(NOT_STARTED_LABEL))
            .map_or_else(|| "asked to skip".to_owned(), |t| t.label.clone()),
        Verdict::NotSupported => {
            let missing: Vec<&str> = s
                .features
                .iter()
                .filter(|f| !report.proxy.features.contains(f))
                .map(String::as_str)
                .collect();
            if missing.is_empty() {
                "not supported by the proxy or the environment".to_owned()
            } else {
                format!(
                    "feature(s) not declared by the proxy: {}",
                    missing.join(", ")
                )
            }
        }
        Verdict::Interrupted => s
            .timeline
            .iter()
            .rev()
            .find(|e| e.label.starts_with(INTERRUPTED_LABEL))
            .map_or_else(
                || "the run was interrupted".to_owned(),
                |e| match &e.detail {
                    Some(d) => format!("{}: {d}", e.label),
                    None => e.label.clone(),
                },
            ),
        _ => String::new(),
    }
}

/// How the runner's timeline event on an interrupted scenario starts (`interrupted by SIGINT`,
/// `interrupted by SIGTERM before it started`, ...): the reason reports show.
pub const INTERRUPTED_LABEL: &str = "interrupted by ";

/// `proxy-under-test 0.1.0` (name alone without a version).
pub(crate) fn proxy_title(report: &Report) -> String {
    match &report.proxy.version {
        Some(v) => format!("{} {v}", report.proxy.name),
        None => report.proxy.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_exact_and_short() {
        let cases = [
            (0, "0 ms"),
            (999, "999 ms"),
            (1000, "1 s"),
            (1500, "1.5 s"),
            (4210, "4.21 s"),
            (4205, "4.205 s"),
            (60_000, "1 min"),
            (125_000, "2 min 5 s"),
            (60_500, "1 min 0.5 s"),
        ];
        for (ms, want) in cases {
            assert_eq!(fmt_ms(ms), want, "{ms}");
        }
    }

    #[test]
    fn timing_phrases() {
        let c = CheckResult::new("c", Requirement::Must, Verdict::Fail, "e", "o");
        assert_eq!(when_and_timing(&c), "");
        let c = c.at(5210);
        assert_eq!(when_and_timing(&c), "at 5.21 s");
        let gave_up = c.clone().within(None, 3000);
        assert_eq!(when_and_timing(&gave_up), "at 5.21 s; not within 3 s");
        let late = c.within(Some(4210), 3000);
        assert_eq!(when_and_timing(&late), "at 5.21 s; took 4.21 s, bound 3 s");
        assert_eq!(
            check_line(&late),
            "[fail] c (must): expected: e; observed: o; at 5.21 s; took 4.21 s, bound 3 s"
        );
    }

    #[test]
    fn every_rendering_shows_an_interrupted_scenario_and_why() {
        use crate::model::{EventKind, TimelineEvent};
        let mut r = crate::fixture::sample_report();
        let mut s = r.scenarios[0].clone();
        s.id = "cut-short".into();
        s.mark_interrupted();
        s.timeline.push(
            TimelineEvent::new(1234, EventKind::Step, "interrupted by SIGTERM")
                .detail("the run was cancelled while its steps ran"),
        );
        r.scenarios.push(s);
        r.grade();
        let cut = r.scenarios.last().unwrap();
        assert_eq!(cut.verdict, Verdict::Interrupted);
        assert_eq!(
            not_run_reason(&r, cut),
            "interrupted by SIGTERM: the run was cancelled while its steps ran"
        );
        let md = crate::to_markdown(&r);
        assert!(md.contains("⏹️"), "{md}");
        assert!(md.contains("**Reason:** interrupted by SIGTERM"), "{md}");
        let junit = crate::to_junit(&r);
        assert!(junit.contains("type=\"interrupted\""), "{junit}");
        assert!(
            junit.contains("interrupted: interrupted by SIGTERM"),
            "{junit}"
        );
        let html = crate::to_html(&r);
        assert!(html.contains("b-interrupted"), "{html}");
        assert!(html.contains("v-interrupted"), "{html}");
        let json = crate::to_json(&r);
        assert!(json.contains("\"verdict\": \"interrupted\""), "{json}");
        assert!(json.contains("\"interrupted\": 1"), "{json}");
    }
}
