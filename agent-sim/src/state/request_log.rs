//! The request log: every request a client makes (method, path, query, token, blocking or not,
//! when, how it ended), so tests can judge how a proxy uses the agent.

use std::time::Duration;

use serde::Serialize;

use crate::state::seq_log::{SeqLog, Sequenced};

/// Where the request's token came from (reference §11: first found wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenSource {
    /// `?token=` (deprecated).
    Query,
    /// `X-Consul-Token`.
    Header,
    /// `Authorization: Bearer`.
    Bearer,
    /// None given: the agent's default token or anonymous.
    None,
}

/// How many entries are kept; older ones are dropped (and counted).
pub const DEFAULT_CAPACITY: usize = 200_000;

/// One request.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LogEntry {
    /// Sequence number, from 1.
    pub seq: u64,
    /// Milliseconds since the sim started.
    pub at_ms: u64,
    /// HTTP method.
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// Raw query string.
    pub query: String,
    /// The token the request carried, if any.
    pub token: Option<String>,
    /// Where the token came from.
    pub token_source: TokenSource,
    /// An index- or hash-blocking request (`index` > 0 or `hash` given).
    pub blocking: bool,
    /// `?index=`.
    pub index: Option<u64>,
    /// `?hash=`.
    pub hash: Option<String>,
    /// `?wait=` as sent.
    pub wait: Option<String>,
    /// Response status, once answered.
    pub status: Option<u16>,
    /// Milliseconds from arrival to answer, once answered.
    pub duration_ms: Option<u64>,
}

/// What is known about a request when it arrives.
#[derive(Debug, Clone)]
pub struct Arrival {
    /// HTTP method.
    pub method: String,
    /// Path.
    pub path: String,
    /// Raw query.
    pub query: String,
    /// Token.
    pub token: Option<String>,
    /// Token source.
    pub token_source: TokenSource,
    /// `?index=`.
    pub index: Option<u64>,
    /// `?hash=`.
    pub hash: Option<String>,
    /// `?wait=`.
    pub wait: Option<String>,
}

/// The log.
#[derive(Debug)]
pub struct RequestLog {
    log: SeqLog<LogEntry>,
    /// The bodies of `POST /v1/agent/connect/authorize` calls, in arrival order.
    authorize: std::sync::Mutex<Vec<AuthorizeCall>>,
}

/// What one `POST /v1/agent/connect/authorize` asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuthorizeCall {
    /// `Target`.
    pub target: String,
    /// `ClientCertURI`.
    pub client_cert_uri: String,
    /// `ClientCertSerial` (empty when the caller left it out).
    pub client_cert_serial: String,
}

impl Sequenced for LogEntry {
    fn seq(&self) -> u64 {
        self.seq
    }
}

impl RequestLog {
    /// Records the body of an authorize call.
    pub fn record_authorize(&self, call: AuthorizeCall) {
        self.authorize
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(call);
    }

    /// Every authorize call so far.
    pub fn authorize_calls(&self) -> Vec<AuthorizeCall> {
        self.authorize
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// An empty log keeping at most `capacity` entries.
    pub fn new(capacity: usize) -> Self {
        Self {
            log: SeqLog::new(capacity),
            authorize: std::sync::Mutex::default(),
        }
    }

    /// Records an arrival; returns its sequence number.
    pub fn arrive(&self, a: Arrival) -> u64 {
        let blocking =
            a.index.is_some_and(|i| i > 0) || a.hash.as_deref().is_some_and(|h| !h.is_empty());
        self.log.push(|seq, at_ms| LogEntry {
            seq,
            at_ms,
            method: a.method,
            path: a.path,
            query: a.query,
            token: a.token,
            token_source: a.token_source,
            blocking,
            index: a.index,
            hash: a.hash,
            wait: a.wait,
            status: None,
            duration_ms: None,
        })
    }

    /// Records the answer to request `seq`.
    pub fn finish(&self, seq: u64, status: u16, took: Duration) {
        self.log.update(seq, |e| {
            e.status = Some(status);
            e.duration_ms = Some(millis(took));
        });
    }

    /// Every kept entry.
    pub fn entries(&self) -> Vec<LogEntry> {
        self.log.entries()
    }

    /// Entries with `seq > after`.
    pub fn since(&self, after: u64) -> Vec<LogEntry> {
        self.log.since(after)
    }

    /// The last sequence number handed out.
    pub fn last_seq(&self) -> u64 {
        self.log.last_seq()
    }

    /// How many entries were dropped for capacity.
    pub fn dropped(&self) -> u64 {
        self.log.dropped()
    }

    /// Forgets every entry (sequence numbers keep counting).
    pub fn clear(&self) {
        self.log.clear();
    }

    /// Waits until an entry satisfying `pred` exists, or the timeout passes.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        pred: impl Fn(&LogEntry) -> bool,
    ) -> Option<LogEntry> {
        self.log.wait_for(timeout, pred).await
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival(path: &str, index: Option<u64>) -> Arrival {
        Arrival {
            method: "GET".into(),
            path: path.into(),
            query: String::new(),
            token: Some("t".into()),
            token_source: TokenSource::Header,
            index,
            hash: None,
            wait: None,
        }
    }

    #[tokio::test]
    async fn records_arrival_and_answer() {
        let log = RequestLog::new(10);
        let a = log.arrive(arrival("/v1/agent/connect/ca/roots", Some(5)));
        let b = log.arrive(arrival("/v1/agent/self", None));
        log.finish(a, 200, Duration::from_millis(3));
        let e = log.entries();
        assert_eq!(e.len(), 2);
        assert!(e[0].blocking && !e[1].blocking);
        assert_eq!((e[0].status, e[0].duration_ms), (Some(200), Some(3)));
        assert_eq!(e[1].status, None, "still in flight");
        assert_eq!(
            log.since(a).iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![b]
        );
        let found = log
            .wait_for(Duration::from_secs(1), |e| e.path == "/v1/agent/self")
            .await;
        assert_eq!(found.map(|e| e.seq), Some(b));
    }

    #[test]
    fn capacity_drops_oldest() {
        let log = RequestLog::new(2);
        for _ in 0..5 {
            log.arrive(arrival("/x", None));
        }
        assert_eq!(
            log.entries().iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![4, 5]
        );
        assert_eq!(log.dropped(), 3);
        log.finish(5, 404, Duration::ZERO);
        log.finish(1, 200, Duration::ZERO); // dropped: ignored, no panic
        assert_eq!(log.entries()[1].status, Some(404));
    }
}
