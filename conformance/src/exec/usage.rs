//! Judging how a proxy used the agent, from the sim's request log: tokens on every request,
//! blocking queries per endpoint family, request rate while idle, and index-reset handling.
//! Pure functions over log entries; and which checks read that log (not supported for a proxy
//! configured over xDS, which never calls the HTTP API).

use std::collections::BTreeMap;
use std::time::Duration;

use agent_sim::request_log::LogEntry;
use scenarios::{Check, Step};

use super::wait::Observation;

/// Endpoint families an `agent-usage` check can name.
pub(crate) const FAMILIES: [&str; 6] =
    ["roots", "leaf", "intentions", "service", "health", "chain"];

/// The family of a request path, if it is one a sidecar watches.
pub(crate) fn family(path: &str) -> Option<&'static str> {
    if path == "/v1/agent/connect/ca/roots" || path == "/v1/connect/ca/roots" {
        Some("roots")
    } else if path.starts_with("/v1/agent/connect/ca/leaf/") {
        Some("leaf")
    } else if path.starts_with("/v1/connect/intentions")
        || path.starts_with("/v1/config/service-intentions")
    {
        Some("intentions")
    } else if path.starts_with("/v1/agent/service/")
        && !path.starts_with("/v1/agent/service/register")
        && !path.starts_with("/v1/agent/service/deregister")
    {
        Some("service")
    } else if path.starts_with("/v1/health/") {
        Some("health")
    } else if path.starts_with("/v1/discovery-chain/") {
        Some("chain")
    } else {
        None
    }
}

/// Why a request-log check is not supported for an xDS proxy.
pub(crate) const NOT_FOR_XDS: &str = "not supported for a proxy configured over xDS: the check \
    reads the agent's HTTP request log (blocking queries, tokens, indexes), and such a proxy gets \
    its configuration over gRPC instead (the token on its xDS streams is checked separately)";

/// Whether `check` judges the agent's HTTP request log.
pub(crate) fn reads_request_log(check: &Check) -> bool {
    matches!(check, Check::AgentUsage { .. } | Check::IndexResetHonoured)
}

/// Whether every `expect` of `steps` reads the request log (and there is one): for an xDS
/// proxy such a scenario verifies nothing and is not supported as a whole.
pub(crate) fn only_request_log_checks(steps: &[Step]) -> bool {
    let mut checks = steps.iter().filter_map(|s| match s {
        Step::Expect(e) => Some(&e.check),
        _ => None,
    });
    let first = checks.next();
    first.is_some_and(reads_request_log) && checks.all(reads_request_log)
}

/// What an `agent-usage` check asks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UsageSpec<'a> {
    pub(crate) token_on_every_request: bool,
    pub(crate) blocking: &'a [String],
    pub(crate) max_requests_per_minute: Option<u32>,
}

fn describe(e: &LogEntry) -> String {
    if e.query.is_empty() {
        format!("#{} {} {}", e.seq, e.method, e.path)
    } else {
        format!("#{} {} {}?{}", e.seq, e.method, e.path, e.query)
    }
}

/// Judges the requests after `since_seq` (a window of `window`), plus, for tokens and
/// blocking, the latest request of each path before it (still in flight while idle).
pub(crate) fn agent_usage(
    log: &[LogEntry],
    since_seq: u64,
    window: Duration,
    token: &str,
    spec: UsageSpec<'_>,
) -> Observation {
    let in_window: Vec<&LogEntry> = log.iter().filter(|e| e.seq > since_seq).collect();
    let mut in_flight: BTreeMap<&str, &LogEntry> = BTreeMap::new();
    for e in log.iter().filter(|e| e.seq <= since_seq) {
        in_flight.insert(e.path.as_str(), e);
    }
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    if spec.token_on_every_request {
        let checked: Vec<&LogEntry> = in_window
            .iter()
            .copied()
            .chain(in_flight.values().copied())
            .collect();
        let bad: Vec<&&LogEntry> = checked
            .iter()
            .filter(|e| e.token.as_deref() != Some(token))
            .collect();
        match bad.first() {
            Some(first) => problems.push(format!(
                "{} of {} requests did not carry the proxy's token (e.g. {})",
                bad.len(),
                checked.len(),
                describe(first)
            )),
            None => notes.push(format!("token on all {} requests", checked.len())),
        }
    }
    for fam in spec.blocking {
        if !FAMILIES.contains(&fam.as_str()) {
            problems.push(format!("unknown endpoint family {fam:?}"));
            continue;
        }
        let of_family = |e: &LogEntry| family(&e.path) == Some(fam.as_str());
        let Some(latest) = log.iter().rfind(|e| of_family(e)) else {
            problems.push(format!("{fam}: never requested"));
            continue;
        };
        let non_blocking: Vec<&&LogEntry> = in_window
            .iter()
            .filter(|e| of_family(e) && !e.blocking)
            .collect();
        if let Some(first) = non_blocking.first() {
            problems.push(format!(
                "{fam}: {} non-blocking requests in the window (e.g. {})",
                non_blocking.len(),
                describe(first)
            ));
        } else if !latest.blocking {
            problems.push(format!(
                "{fam}: latest request is not blocking ({})",
                describe(latest)
            ));
        }
    }
    if !spec.blocking.is_empty() && problems.is_empty() {
        notes.push(format!("blocking: {}", spec.blocking.join(", ")));
    }
    let ms = window.as_millis().max(1);
    let rate = u128::try_from(in_window.len()).unwrap_or(u128::MAX) * 60_000 / ms;
    if let Some(max) = spec.max_requests_per_minute
        && rate > u128::from(max)
    {
        problems.push(format!("{rate} requests/min, above the bound of {max}"));
    }
    let summary = format!("{} requests in {ms} ms ({rate}/min)", in_window.len());
    if problems.is_empty() {
        notes.insert(0, summary);
        Observation::new(true, notes.join("; "))
    } else {
        problems.push(summary);
        Observation::new(false, problems.join("; "))
    }
}

/// Whether, after `since_seq`, the proxy sent some path an index smaller than one it had
/// already used there (it noticed the reset) and that path's latest request is blocking.
pub(crate) fn index_reset_honoured(log: &[LogEntry], since_seq: u64) -> Observation {
    let mut max: BTreeMap<&str, u64> = BTreeMap::new();
    let mut noticed: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    for e in log {
        let index = e.index.unwrap_or(0);
        let prev = max.get(e.path.as_str()).copied().unwrap_or(0);
        if e.seq > since_seq && index < prev {
            noticed
                .entry(e.path.as_str())
                .or_insert((prev, index, e.seq));
        }
        if index > prev {
            max.insert(e.path.as_str(), index);
        }
    }
    let mut stalled = Vec::new();
    for (path, (from, to, seq)) in &noticed {
        let latest = log.iter().rfind(|e| e.path == *path);
        match latest {
            Some(l) if l.blocking => {
                return Observation::new(
                    true,
                    format!(
                        "{path}: index went back from {from} to {to} at #{seq}; latest request \
                         blocking ({})",
                        describe(l)
                    ),
                );
            }
            Some(l) => stalled.push(format!(
                "{path} reset but its latest request is not blocking ({})",
                describe(l)
            )),
            None => {}
        }
    }
    if stalled.is_empty() {
        let since = log.iter().filter(|e| e.seq > since_seq).count();
        Observation::new(
            false,
            format!("no request after the reset used a smaller index ({since} requests since)"),
        )
    } else {
        Observation::new(false, stalled.join("; "))
    }
}

#[cfg(test)]
mod tests;
