//! Report facts the runner gathers: per-scenario artifacts (proxy output tails, a summary of the
//! agent request log) and the run's environment and start time.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use agent_sim::request_log::LogEntry;
use reports::{Artifact, Environment, EventKind, TimelineEvent};

use crate::proxy::OutputRing;

/// Requests listed one by one at the end of the request-log artifact.
const LOG_TAIL: usize = 150;

/// Proxy stdout/stderr (when not empty) and the agent request log summary.
pub(super) fn collect(stdout: &OutputRing, stderr: &OutputRing, log: &[LogEntry]) -> Vec<Artifact> {
    let mut out = Vec::new();
    for (name, ring) in [("proxy-stdout", stdout), ("proxy-stderr", stderr)] {
        if !ring.is_empty() {
            out.push(Artifact::text(name, ring.render()));
        }
    }
    out.push(Artifact::text("agent-requests", request_summary(log)));
    out
}

/// Proxy log lines placed on the timeline, at most.
const MAX_LOG_EVENTS: usize = 30;

/// The proxy's warnings and errors as timeline events; `spawned_ms` is when the proxy started
/// on the scenario's axis.
pub(super) fn log_events(
    stdout: &OutputRing,
    stderr: &OutputRing,
    spawned_ms: u64,
) -> Vec<TimelineEvent> {
    stdout
        .lines()
        .into_iter()
        .chain(stderr.lines())
        .filter(|(_, l)| notable(l))
        .take(MAX_LOG_EVENTS)
        .map(|(at, line)| {
            let label: String = without_timestamp(&line).chars().take(80).collect();
            TimelineEvent::new(spawned_ms + at, EventKind::ProxyLog, label).detail(line)
        })
        .collect()
}

/// A warning or error: a `WARN`/`ERROR` level among the first words (most log formats), or a
/// line starting with `error`, `fatal` or a Rust panic.
fn notable(line: &str) -> bool {
    let first: Vec<&str> = line.split_whitespace().take(3).collect();
    let level = |w: &&str| {
        let w = w.trim_matches(|c: char| !c.is_ascii_alphabetic());
        ["WARN", "WARNING", "ERROR", "ERR", "FATAL", "PANIC"].contains(&w)
            || w.eq_ignore_ascii_case("warn")
            || w.eq_ignore_ascii_case("warning")
            || w.eq_ignore_ascii_case("error")
            || w.eq_ignore_ascii_case("critical")
    };
    let lower = line.trim_start().to_ascii_lowercase();
    first.iter().any(level)
        || lower.starts_with("error")
        || lower.starts_with("fatal")
        || lower.starts_with("thread '")
}

/// The line without a leading RFC 3339 timestamp (the timeline already has the time).
fn without_timestamp(line: &str) -> &str {
    let trimmed = line.trim_start();
    match trimmed.split_once(char::is_whitespace) {
        Some((first, rest)) if first.len() >= 20 && first.as_bytes().get(10) == Some(&b'T') => {
            rest.trim_start()
        }
        _ => trimmed,
    }
}

/// Counts by endpoint and status, then the last requests.
pub(crate) fn request_summary(log: &[LogEntry]) -> String {
    let mut by_endpoint: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    let mut by_status: BTreeMap<String, u64> = BTreeMap::new();
    for e in log {
        let slot = by_endpoint
            .entry((e.method.clone(), e.path.clone()))
            .or_default();
        slot.0 += 1;
        slot.1 += u64::from(e.blocking);
        let status = e
            .status
            .map_or_else(|| "pending".to_owned(), |s| s.to_string());
        *by_status.entry(status).or_default() += 1;
    }
    let blocking = log.iter().filter(|e| e.blocking).count();
    let mut out = format!("{} requests ({blocking} blocking); status:", log.len());
    for (s, n) in &by_status {
        let _ = write!(out, " {s}×{n}");
    }
    out.push_str("\n\nby endpoint (count, blocking):\n");
    for ((method, path), (n, b)) in &by_endpoint {
        let _ = writeln!(out, "  {method:6} {path}  {n} ({b} blocking)");
    }
    let skip = log.len().saturating_sub(LOG_TAIL);
    let _ = writeln!(
        out,
        "\nlast {} requests (seq, ms since agent start):",
        log.len() - skip
    );
    for e in log.iter().skip(skip) {
        let q = if e.query.is_empty() {
            String::new()
        } else {
            format!("?{}", e.query)
        };
        let token = if e.token.is_some() {
            "token"
        } else {
            "NO TOKEN"
        };
        let status = e.status.map_or_else(|| "…".to_owned(), |s| s.to_string());
        let took = e
            .duration_ms
            .map_or_else(String::new, |d| format!(" {d}ms"));
        let _ = writeln!(
            out,
            "  #{} {:>7} {} {}{q} [{token}] {status}{took}",
            e.seq, e.at_ms, e.method, e.path
        );
    }
    out
}

/// Where the run happens.
pub(crate) fn environment() -> Environment {
    let cpus = std::thread::available_parallelism()
        .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
        .unwrap_or(1);
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty());
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
    Environment {
        os: std::env::consts::OS.into(),
        arch: std::env::consts::ARCH.into(),
        cpus,
        hostname,
        ci,
        notes: Vec::new(),
    }
}

/// The current time, RFC 3339, UTC.
pub(crate) fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

#[cfg(test)]
mod tests {
    use agent_sim::http::query::TokenSource;

    use super::*;
    use crate::proxy::ProxyProcess;

    #[test]
    fn summary_counts_and_lists() {
        let e = |seq, path: &str, blocking, token: Option<&str>| LogEntry {
            seq,
            at_ms: seq,
            method: "GET".into(),
            path: path.into(),
            query: if blocking {
                "index=3".into()
            } else {
                String::new()
            },
            token: token.map(str::to_owned),
            token_source: TokenSource::Header,
            blocking,
            index: blocking.then_some(3),
            hash: None,
            wait: None,
            status: Some(200),
            duration_ms: Some(2),
        };
        let log = [
            e(1, "/v1/agent/connect/ca/roots", false, Some("t")),
            e(2, "/v1/agent/connect/ca/roots", true, None),
        ];
        let text = request_summary(&log);
        assert!(
            text.starts_with("2 requests (1 blocking); status: 200×2\n"),
            "{text}"
        );
        assert!(
            text.contains("GET    /v1/agent/connect/ca/roots  2 (1 blocking)"),
            "{text}"
        );
        assert!(
            text.contains("#2       2 GET /v1/agent/connect/ca/roots?index=3 [NO TOKEN] 200 2ms"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn warnings_and_errors_go_on_the_timeline() {
        let cmd = crate::proxy::ProxyCommand {
            argv: vec![
                "sh".into(),
                "-c".into(),
                "echo 'INFO fine error=none'; echo '2026-11-21T22:53:03.194263Z  WARN agent slow' >&2; \
                 echo 'ERROR boom'; echo 'error: cannot start'; \
                 echo '2026-11-24T11:00:00.123 info [main] all good'; \
                 echo '2026-11-24T11:00:00.124 warning [config] deprecated field'"
                    .into(),
            ],
            ..Default::default()
        };
        let mut p = ProxyProcess::spawn(&cmd).unwrap();
        while p.exited().is_none() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        p.teardown(std::time::Duration::from_secs(2)).await;
        let mut events = log_events(p.stdout(), p.stderr(), 1000);
        events.sort_by(|a, b| a.label.cmp(&b.label));
        let labels: Vec<&str> = events.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "ERROR boom",
                "WARN agent slow",
                "error: cannot start",
                "warning [config] deprecated field"
            ]
        );
        assert!(
            events
                .iter()
                .all(|e| e.kind == EventKind::ProxyLog && e.at_ms >= 1000)
        );
    }

    #[test]
    fn rfc3339_now() {
        let t = now_rfc3339();
        assert!(
            time::OffsetDateTime::parse(&t, &time::format_description::well_known::Rfc3339).is_ok(),
            "{t}"
        );
    }
}
