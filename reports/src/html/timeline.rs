//! The per-scenario SVG timeline: steps as labelled ticks across the chart, observed events as
//! coloured marks on one lane, and one lane per timed check with its bound window shaded, its
//! measured span, and the failing point highlighted by a red line across the whole chart.

use std::fmt::Write as _;

use crate::escape::html;
use crate::model::{CheckResult, EventKind, Requirement, ScenarioResult, TimelineEvent, Verdict};
use crate::text::{check_line, fmt_ms, is_failing};

const WIDTH: f64 = 960.0;
/// Left edge of the plot; lane labels live to its left.
const X0: f64 = 210.0;
const X1: f64 = 940.0;
const STEP_ROWS: usize = 3;
const STEP_ROW_H: f64 = 14.0;
const TOP: f64 = STEP_ROWS as f64 * STEP_ROW_H + 8.0;
const LANE_H: f64 = 22.0;
const AXIS_H: f64 = 26.0;
const LABEL_CHARS: usize = 32;

/// The SVG for `s`, or `None` when nothing in it has a time.
pub(crate) fn svg(s: &ScenarioResult) -> Option<String> {
    let timed: Vec<&CheckResult> = s.checks.iter().filter(|c| c.at_ms.is_some()).collect();
    let steps: Vec<&TimelineEvent> = s
        .timeline
        .iter()
        .filter(|e| e.kind == EventKind::Step)
        .collect();
    let marks: Vec<&TimelineEvent> = s
        .timeline
        .iter()
        .filter(|e| e.kind != EventKind::Step)
        .collect();
    if timed.is_empty() && s.timeline.is_empty() {
        return None;
    }
    let scale = Scale::new(end_ms(s));
    // The "observed" lane also carries the harness-error mark.
    let observed_lane = !marks.is_empty() || s.error.is_some();
    let lanes = usize::from(observed_lane) + timed.len();
    let lanes_bottom = TOP + lanes as f64 * LANE_H;
    let height = lanes_bottom + AXIS_H;

    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"timeline\" viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" \
         aria-label=\"timeline of {}\">",
        html(&s.id)
    );
    // Lane backgrounds first, so everything else draws over them.
    for i in 0..lanes {
        let y = TOP + i as f64 * LANE_H;
        let class = if i % 2 == 0 { "lane" } else { "lane alt" };
        let _ = write!(
            out,
            "<rect class=\"{class}\" x=\"0\" y=\"{y}\" width=\"{WIDTH}\" height=\"{LANE_H}\"/>"
        );
    }
    let ticks: Vec<(f64, String)> = steps
        .iter()
        .map(|e| (scale.x(e.at_ms), truncate(&e.label, LABEL_CHARS)))
        .collect();
    let placed = labels::place(&ticks, STEP_ROWS, WIDTH);
    for (e, p) in steps.iter().zip(&placed) {
        step(&mut out, &scale, p, e, lanes_bottom);
    }
    let mut lane_y = TOP;
    if observed_lane {
        lane_label(&mut out, lane_y, "observed", "events the harness observed");
        for e in &marks {
            mark(&mut out, &scale, lane_y + LANE_H / 2.0, e);
        }
        if let Some(e) = &s.error {
            let title = format!("harness error {}: {}", e.kind, e.message);
            let mark = FailMark {
                at_ms: s.duration_ms,
                class: "bad",
                title: &title,
                note: "harness error",
            };
            failing_point(&mut out, &scale, lane_y, lanes_bottom, &mark);
        }
        lane_y += LANE_H;
    }
    for c in &timed {
        check_lane(&mut out, &scale, lane_y, lanes_bottom, c);
        lane_y += LANE_H;
    }
    axis(&mut out, &scale, lanes_bottom);
    out.push_str("</svg>");
    Some(out)
}

/// The last instant anything in the scenario refers to (at least 1 ms).
fn end_ms(s: &ScenarioResult) -> u64 {
    let events = s.timeline.iter().map(|e| e.at_ms);
    let checks = s.checks.iter().flat_map(|c| {
        let window_end = c
            .window_start_ms()
            .zip(c.bound_ms)
            .map(|(start, bound)| start.saturating_add(bound));
        [c.at_ms, window_end].into_iter().flatten()
    });
    events
        .chain(checks)
        .chain([s.duration_ms, 1])
        .max()
        .unwrap_or(1)
}

/// Maps milliseconds onto the plot's x range.
struct Scale {
    end_ms: u64,
}

impl Scale {
    fn new(end_ms: u64) -> Self {
        Self {
            end_ms: end_ms.max(1),
        }
    }

    fn x(&self, ms: u64) -> f64 {
        let ms = ms.min(self.end_ms) as f64;
        X0 + ms / self.end_ms as f64 * (X1 - X0)
    }
}

fn step(out: &mut String, scale: &Scale, p: &labels::Placed, e: &TimelineEvent, bottom: f64) {
    let x = scale.x(e.at_ms);
    let label_y = STEP_ROW_H * (p.row as f64 + 1.0) - 3.0;
    let _ = write!(
        out,
        "<g class=\"step\"><title>{}</title>\
         <line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\"/>\
         <text x=\"{:.1}\" y=\"{label_y:.1}\">{}</text></g>",
        html(&event_title(e)),
        label_y - 10.0,
        p.x,
        html(&p.text)
    );
}

fn lane_label(out: &mut String, y: f64, label: &str, title: &str) {
    let _ = write!(
        out,
        "<text class=\"lane-label\" x=\"8\" y=\"{:.1}\"><title>{}</title>{}</text>",
        y + LANE_H / 2.0 + 4.0,
        html(title),
        html(&truncate(label, LABEL_CHARS))
    );
}

/// One non-step event on the "observed" lane.
fn mark(out: &mut String, scale: &Scale, cy: f64, e: &TimelineEvent) {
    let x = scale.x(e.at_ms);
    let state = match e.ok {
        Some(true) => "ok",
        Some(false) => "bad",
        None => "unknown",
    };
    let shape = match e.kind {
        EventKind::Observation | EventKind::Step => {
            format!("<circle class=\"{state}\" cx=\"{x:.1}\" cy=\"{cy:.1}\" r=\"5\"/>")
        }
        EventKind::Check => diamond(x, cy, 6.0, state),
        EventKind::Fault => format!(
            "<polygon class=\"fault\" points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\"/>",
            x,
            cy - 6.0,
            x - 6.0,
            cy + 5.0,
            x + 6.0,
            cy + 5.0
        ),
        EventKind::ProxyLog => format!(
            "<rect class=\"log\" x=\"{:.1}\" y=\"{:.1}\" width=\"7\" height=\"7\"/>",
            x - 3.5,
            cy - 3.5
        ),
    };
    let _ = write!(
        out,
        "<g class=\"mark\"><title>{}</title>{shape}</g>",
        html(&event_title(e))
    );
}

/// One lane for a timed check: bound window, measured span, decision marker, and for a failing
/// check a red line across the chart at the point it failed.
fn check_lane(out: &mut String, scale: &Scale, y: f64, bottom: f64, c: &CheckResult) {
    let Some(at) = c.at_ms else { return };
    lane_label(out, y, &c.name, &check_line(c));
    let cy = y + LANE_H / 2.0;
    let start = c.window_start_ms().unwrap_or(at);
    let _ = write!(
        out,
        "<g class=\"check v-{}\"><title>{}</title>",
        c.verdict,
        html(&check_line(c))
    );
    if let Some(bound) = c.bound_ms {
        let (x, w) = (
            scale.x(start),
            scale.x(start.saturating_add(bound)) - scale.x(start),
        );
        let _ = write!(
            out,
            "<rect class=\"window\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\"/>",
            y + 3.0,
            LANE_H - 6.0
        );
    }
    if let Some(took) = c.took_ms {
        let _ = write!(
            out,
            "<line class=\"took\" x1=\"{:.1}\" y1=\"{cy:.1}\" x2=\"{:.1}\" y2=\"{cy:.1}\"/>",
            scale.x(start),
            scale.x(start.saturating_add(took))
        );
    }
    let class = severity_class(c);
    if is_failing(c) {
        let note = match (c.took_ms, c.bound_ms) {
            (Some(took), Some(bound)) if took > bound => {
                format!("{} > {}", fmt_ms(took), fmt_ms(bound))
            }
            (None, Some(bound)) => format!("not within {}", fmt_ms(bound)),
            _ => c.verdict.as_str().to_owned(),
        };
        let title = check_line(c);
        let mark = FailMark {
            at_ms: at,
            class,
            title: &title,
            note: &note,
        };
        failing_point(out, scale, y, bottom, &mark);
    } else {
        out.push_str(&diamond(scale.x(at), cy, 6.0, class));
    }
    out.push_str("</g>");
}

/// A point where something failed, drawn highlighted.
struct FailMark<'a> {
    at_ms: u64,
    /// Colour class: `bad` or `warn`.
    class: &'a str,
    /// Full text for the tooltip.
    title: &'a str,
    /// Short text beside the mark.
    note: &'a str,
}

/// Draws `m`: a dashed line across all lanes (from `TOP` to `bottom`), a ring and a diamond on
/// the lane starting at `y`, and the note beside it.
fn failing_point(out: &mut String, scale: &Scale, y: f64, bottom: f64, m: &FailMark<'_>) {
    let x = scale.x(m.at_ms);
    let cy = y + LANE_H / 2.0;
    let (anchor, dx) = if x > X1 - 120.0 {
        ("end", -12.0)
    } else {
        ("start", 12.0)
    };
    let _ = write!(
        out,
        "<g class=\"failing {}\"><title>{}</title>\
         <line class=\"failline\" x1=\"{x:.1}\" y1=\"{TOP:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\"/>\
         <circle class=\"halo\" cx=\"{x:.1}\" cy=\"{cy:.1}\" r=\"9\"/>{}\
         <text class=\"failnote\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text></g>",
        m.class,
        html(m.title),
        diamond(x, cy, 6.0, m.class),
        x + dx,
        cy + 4.0,
        html(m.note)
    );
}

fn axis(out: &mut String, scale: &Scale, y: f64) {
    let _ = write!(
        out,
        "<g class=\"axis\"><line x1=\"{X0}\" y1=\"{y:.1}\" x2=\"{X1}\" y2=\"{y:.1}\"/>"
    );
    let step = tick_step(scale.end_ms);
    let mut t = 0;
    while t <= scale.end_ms {
        let x = scale.x(t);
        let _ = write!(
            out,
            "<line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            y + 4.0,
            y + 16.0,
            fmt_ms(t)
        );
        t += step;
    }
    out.push_str("</g>");
}

/// A round tick interval (1, 2 or 5 times a power of ten ms) giving at most ~8 ticks.
fn tick_step(end_ms: u64) -> u64 {
    let raw = end_ms.div_ceil(8).max(1);
    let mut magnitude = 1u64;
    while magnitude.saturating_mul(10) <= raw {
        magnitude *= 10;
    }
    [1, 2, 5, 10]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(magnitude * 10)
}

fn diamond(x: f64, y: f64, r: f64, class: &str) -> String {
    format!(
        "<polygon class=\"{class}\" points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\"/>",
        x,
        y - r,
        x + r,
        y,
        x,
        y + r,
        x - r,
        y
    )
}

/// Colour class of a check: a failed SHOULD (or a non-strict check) is a warning, not a failure.
fn severity_class(c: &CheckResult) -> &'static str {
    match (c.verdict, c.requirement) {
        (Verdict::Pass, _) => "ok",
        (Verdict::Error, _) | (Verdict::Fail, Requirement::Must) => "bad",
        (Verdict::NonStrict | Verdict::Flaky, _) | (Verdict::Fail, Requirement::Should) => "warn",
        (Verdict::Skipped | Verdict::NotSupported | Verdict::Interrupted, _) => "unknown",
    }
}

/// `label: detail (at 1.2 s)`.
fn event_title(e: &TimelineEvent) -> String {
    let mut t = format!("{} {}", kind_name(e.kind), e.label);
    if let Some(d) = &e.detail {
        t.push_str(": ");
        t.push_str(d);
    }
    match e.ok {
        Some(true) => t.push_str(" [ok]"),
        Some(false) => t.push_str(" [not ok]"),
        None => {}
    }
    let _ = write!(t, " (at {})", fmt_ms(e.at_ms));
    t
}

fn kind_name(k: EventKind) -> &'static str {
    match k {
        EventKind::Step => "step:",
        EventKind::Observation => "observed:",
        EventKind::Check => "check:",
        EventKind::Fault => "fault:",
        EventKind::ProxyLog => "proxy log:",
    }
}

/// At most `max` characters, with an ellipsis when cut.
fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

mod labels;

#[cfg(test)]
mod tests;
