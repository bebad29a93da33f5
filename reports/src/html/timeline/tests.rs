//! Timeline geometry: tick steps, scale, truncation, extent, and failure highlighting.

use super::*;
use crate::fixture::sample_report;

#[test]
fn tick_steps_are_round() {
    for (end, want) in [
        (1, 1),
        (8, 1),
        (9, 2),
        (2100, 500),
        (9350, 2000),
        (12_400, 2000),
        (41_730, 10_000),
    ] {
        assert_eq!(tick_step(end), want, "{end}");
    }
}

#[test]
fn scale_spans_the_plot() {
    let s = Scale::new(2000);
    assert_eq!(s.x(0), X0);
    assert_eq!(s.x(1000), (X0 + X1) / 2.0);
    assert_eq!(s.x(2000), X1);
    assert_eq!(s.x(5000), X1, "clamped");
    assert_eq!(Scale::new(0).x(0), X0);
}

#[test]
fn truncates_by_characters() {
    assert_eq!(truncate("web→db", 6), "web→db");
    assert_eq!(truncate("web→db allow", 6), "web→d…");
}

#[test]
fn end_covers_late_windows() {
    let r = sample_report();
    let ca = r.scenarios.iter().find(|s| s.id == "ca-rotation").unwrap();
    assert_eq!(end_ms(ca), 9350);
    // persistent-connection's 10 s window starts at 2 s and ends after the scenario.
    let pc = r
        .scenarios
        .iter()
        .find(|s| s.id == "persistent-connection")
        .unwrap();
    assert_eq!(end_ms(pc), 12_400);
    let mut late = pc.clone();
    late.duration_ms = 0;
    assert_eq!(end_ms(&late), 2000 + 10_000);
}

#[test]
fn failing_checks_are_highlighted_at_their_point() {
    let r = sample_report();
    let ca = r.scenarios.iter().find(|s| s.id == "ca-rotation").unwrap();
    let drawn = svg(ca).unwrap();
    assert_eq!(drawn.matches("class=\"failline\"").count(), 1);
    let x = Scale::new(9350).x(5210);
    assert!(
        drawn.contains(&format!("<line class=\"failline\" x1=\"{x:.1}\"")),
        "{drawn}"
    );
    assert!(drawn.contains(">4.21 s &gt; 3 s</text>"), "{drawn}");
    // Two of its four timed checks have a bound: two shaded windows.
    assert_eq!(drawn.matches("class=\"window\"").count(), 2);
    let pass = r
        .scenarios
        .iter()
        .find(|s| s.id == "l4-allow-deny")
        .unwrap();
    assert!(!svg(pass).unwrap().contains("failline"));
}

#[test]
fn nothing_timed_draws_nothing() {
    let r = sample_report();
    let skipped = r
        .scenarios
        .iter()
        .find(|s| s.id == "agent-restart")
        .unwrap();
    assert_eq!(svg(skipped), None);
}

#[test]
fn failures_are_coloured_by_requirement_and_harness_errors_marked() {
    let r = sample_report();
    let find = |id: &str| r.scenarios.iter().find(|s| s.id == id).unwrap();
    // A failed SHOULD is highlighted as a warning, not as a failure.
    let pc = svg(find("persistent-connection")).unwrap();
    assert_eq!(pc.matches("<g class=\"failing warn\">").count(), 1);
    assert!(!pc.contains("failing bad"));
    assert!(pc.contains(">9.81 s &gt; 5 s</text>"), "{pc}");
    // A harness error is marked where the scenario ended.
    let ir = svg(find("index-reset")).unwrap();
    let x = Scale::new(2100).x(2100);
    assert!(ir.contains("<g class=\"failing bad\"><title>harness error agent_control_failed: "));
    assert!(
        ir.contains(&format!("<line class=\"failline\" x1=\"{x:.1}\"")),
        "{ir}"
    );
    assert!(ir.contains(">harness error</text>"));
    // Faults and proxy log lines are drawn on the observed lane.
    assert!(ir.contains("<polygon class=\"fault\""));
    assert!(ir.contains("<rect class=\"log\""));
}
