//! The xDS checks of a proxy configured over gRPC (Envoy), from the sim's xDS log: every push
//! ACKed (a NACK is a harness `error` carrying Envoy's `error_detail`: the sim sent something
//! Envoy rejects, which says nothing about the proxy), no push left unanswered on an open stream,
//! and the proxy's token on every stream. Plus the log's summary artifact.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

use agent_sim::xds::{XdsEvent, XdsLog, XdsLogEntry};
use reports::{
    Artifact, CheckResult, EventKind, Requirement, ScenarioResult, TimelineEvent, Verdict,
};
use tokio::time::Instant;

use crate::error::Error;

/// Name of the check that every push was ACKed.
pub(crate) const ACKED_CHECK: &str = "every xDS push ACKed";
/// Name of the check that every stream carried the proxy's token.
pub(crate) const TOKEN_CHECK: &str = "token on every xDS stream";

/// Events listed one by one at the end of the xDS log artifact.
const LOG_TAIL: usize = 150;

/// A response nobody answered: (stream, type URL, nonce).
type Pending = (u64, String, String);

/// Responses never ACKed or NACKed, split by whether their stream is still open.
fn pending(entries: &[XdsLogEntry]) -> (Vec<Pending>, Vec<Pending>) {
    let closed: BTreeSet<u64> = entries
        .iter()
        .filter(|e| matches!(e.event, XdsEvent::Closed { .. }))
        .map(|e| e.stream)
        .collect();
    agent_sim::xds::log::unanswered(entries)
        .into_iter()
        .partition(|(s, _, _)| !closed.contains(s))
}

/// The last path segment of a type URL (`Cluster`, `Listener`, ...).
fn short(type_url: &str) -> &str {
    type_url.rsplit('.').next().unwrap_or(type_url)
}

fn describe(p: &[Pending]) -> String {
    let list: Vec<String> = p
        .iter()
        .map(|(s, t, n)| format!("{} nonce {n} on stream {s}", short(t)))
        .collect();
    list.join(", ")
}

/// Waits, at most `timeout`, until no open stream owes an answer. Returns whether it settled,
/// and the entries that decided it (judge those: a push sent a moment later, e.g. by a leaf
/// renewal timer while the proxy is being stopped, is not owed an answer yet).
pub(crate) async fn settle(log: &XdsLog, timeout: Duration) -> (bool, Vec<XdsLogEntry>) {
    let deadline = Instant::now() + timeout;
    loop {
        let entries = log.entries();
        if pending(&entries).0.is_empty() {
            return (true, entries);
        }
        let last = entries.last().map_or(0, |e| e.seq);
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || log.wait_for(left, |e| e.seq > last).await.is_none() {
            let entries = log.entries();
            return (pending(&entries).0.is_empty(), entries);
        }
    }
}

/// Marks a scenario whose checks all read the HTTP request log as not supported.
pub(crate) fn not_supported(result: &mut ScenarioResult) {
    result.mark_not_supported();
    result.checks.push(CheckResult::new(
        "xds",
        Requirement::Must,
        Verdict::NotSupported,
        "checks a proxy that reads the agent's HTTP API",
        crate::exec::NOT_FOR_XDS,
    ));
}

/// The timeline event after the post-readiness [`settle`].
pub(crate) fn answered_event(at_ms: u64, settled: bool) -> TimelineEvent {
    TimelineEvent::new(at_ms, EventKind::Observation, "xDS configuration answered")
        .detail(if settled {
            "every push so far ACKed or NACKed"
        } else {
            "pushes still unanswered after the ready timeout"
        })
        .ok(settled)
}

/// Records the judgement of `entries` (the settled snapshot) in `result`, and the whole log as
/// an artifact; returns the harness error, if any.
pub(crate) fn record(
    result: &mut ScenarioResult,
    entries: &[XdsLogEntry],
    log: &XdsLog,
    token: &str,
    at_ms: u64,
) -> Option<Error> {
    result
        .artifacts
        .push(summary(&log.entries(), log.dropped()));
    let judged = judge(entries, token, at_ms);
    result.checks.extend(judged.checks);
    judged.error
}

/// What the xDS log says about one scenario.
#[derive(Debug)]
pub(crate) struct Judgement {
    /// The ACK check and the token check.
    pub(crate) checks: Vec<CheckResult>,
    /// The harness error to report (a NACK, or a push never answered), if any.
    pub(crate) error: Option<Error>,
}

/// Judges `entries` (taken before the proxy was stopped, so its streams still count as open)
/// against the proxy's `token`; `at_ms` is when, on the scenario's axis.
pub(crate) fn judge(entries: &[XdsLogEntry], token: &str, at_ms: u64) -> Judgement {
    let mut checks = Vec::new();
    let mut error = None;

    let responses = entries
        .iter()
        .filter(|e| matches!(e.event, XdsEvent::Response { .. }))
        .count();
    let nacks: Vec<String> = entries
        .iter()
        .filter_map(|e| match &e.event {
            XdsEvent::Nack {
                type_url,
                nonce,
                code,
                message,
            } => Some(format!(
                "{} nonce {nonce} on stream {} (code {code}): {message}",
                short(type_url),
                e.stream
            )),
            _ => None,
        })
        .collect();
    let (unanswered, cut) = pending(entries);
    let expected = "every response the agent pushes is ACKed (a NACK means the simulated agent \
                    sent configuration the proxy rejects: a harness error)";
    let (verdict, observed) = if !nacks.is_empty() {
        let text = format!("NACKed: {}", nacks.join("; "));
        error = Some(Error::XdsNack(nacks.join("; ")));
        (Verdict::Error, text)
    } else if !unanswered.is_empty() {
        let text = describe(&unanswered);
        error = Some(Error::XdsUnanswered(text.clone()));
        (
            Verdict::Error,
            format!("never answered on an open stream: {text}"),
        )
    } else {
        let mut text = format!("{responses} responses, all ACKed");
        if !cut.is_empty() {
            let _ = write!(
                text,
                " (unanswered when their stream was cut: {})",
                describe(&cut)
            );
        }
        (Verdict::Pass, text)
    };
    checks.push(
        CheckResult::new(ACKED_CHECK, Requirement::Must, verdict, expected, observed).at(at_ms),
    );

    let opened: Vec<(u64, Option<&str>)> = entries
        .iter()
        .filter_map(|e| match &e.event {
            XdsEvent::Opened { token, .. } => Some((e.stream, token.as_deref())),
            _ => None,
        })
        .collect();
    let bad: Vec<String> = opened
        .iter()
        .filter(|(_, t)| *t != Some(token))
        .map(|(s, t)| match t {
            None => format!("stream {s} sent no token"),
            Some(_) => format!("stream {s} sent another token"),
        })
        .collect();
    let (verdict, observed) = match (opened.len(), bad.is_empty()) {
        (0, _) => (Verdict::Fail, "no xDS stream was opened".to_owned()),
        (n, true) => (
            Verdict::Pass,
            format!("the proxy's token on all {n} streams"),
        ),
        (n, false) => (
            Verdict::Fail,
            format!("{} of {n} streams: {}", bad.len(), bad.join(", ")),
        ),
    };
    checks.push(
        CheckResult::new(
            TOKEN_CHECK,
            Requirement::Must,
            verdict,
            "every xDS stream carries the proxy's ACL token (x-consul-token metadata)",
            observed,
        )
        .at(at_ms),
    );
    Judgement { checks, error }
}

/// The xDS log as an artifact: counts, one line per stream, then the last events.
pub(crate) fn summary(entries: &[XdsLogEntry], dropped: u64) -> Artifact {
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    let mut streams: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for e in entries {
        *kinds.entry(e.event.kind()).or_default() += 1;
        let line = match &e.event {
            XdsEvent::Opened {
                node_id,
                token,
                peer,
            } => Some(format!(
                "opened by {node_id} from {} ({})",
                peer.as_deref().unwrap_or("?"),
                if token.is_some() { "token" } else { "NO TOKEN" }
            )),
            XdsEvent::Closed { code, reason } => Some(format!("closed: code {code}, {reason}")),
            _ => None,
        };
        streams.entry(e.stream).or_default().extend(line);
    }
    let count = |k: &str| kinds.get(k).copied().unwrap_or(0);
    let mut out = format!(
        "{} streams, {} requests, {} responses, {} ACKs, {} NACKs",
        streams.len(),
        count("request"),
        count("response"),
        count("ack"),
        count("nack")
    );
    if dropped > 0 {
        let _ = write!(out, " ({dropped} older events dropped)");
    }
    out.push_str("\n\nstreams:\n");
    for (s, lines) in &streams {
        let _ = writeln!(out, "  #{s}: {}", lines.join("; "));
    }
    let skip = entries.len().saturating_sub(LOG_TAIL);
    let _ = writeln!(
        out,
        "\nlast {} events (seq, ms since agent start, stream):",
        entries.len() - skip
    );
    for e in entries.iter().skip(skip) {
        let _ = writeln!(
            out,
            "  #{} {:>7} s{} {}",
            e.seq,
            e.at_ms,
            e.stream,
            event(&e.event)
        );
    }
    Artifact::text("xds-log", out)
}

fn event(ev: &XdsEvent) -> String {
    match ev {
        XdsEvent::Opened { node_id, .. } => format!("opened {node_id}"),
        XdsEvent::Request {
            type_url,
            subscribe,
            unsubscribe,
            initial_versions,
        } => format!(
            "request {} +{:?} -{:?} initial {}",
            short(type_url),
            subscribe,
            unsubscribe,
            initial_versions.len()
        ),
        XdsEvent::Response {
            type_url,
            nonce,
            resources,
            removed,
        } => {
            let names: Vec<&str> = resources.iter().map(|(n, _)| n.as_str()).collect();
            format!(
                "response {} nonce {nonce} [{}] removed {:?}",
                short(type_url),
                names.join(", "),
                removed
            )
        }
        XdsEvent::Ack { type_url, nonce } => format!("ACK {} nonce {nonce}", short(type_url)),
        XdsEvent::Nack {
            type_url,
            nonce,
            message,
            ..
        } => format!("NACK {} nonce {nonce}: {message}", short(type_url)),
        XdsEvent::Closed { code, reason } => format!("closed code {code}: {reason}"),
    }
}

#[cfg(test)]
mod tests;
