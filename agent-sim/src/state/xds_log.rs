//! The xDS log: what every stream did (opened with which node and token, each request, each
//! response with its resources and versions, ACKs, NACKs with Envoy's detail, how it closed), so
//! the harness can require every push ACKed and the token sent.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

use crate::state::seq_log::{SeqLog, Sequenced};

/// How many entries are kept by default; older ones are dropped (and counted).
pub const DEFAULT_CAPACITY: usize = 100_000;

/// One event of one stream.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct XdsLogEntry {
    /// Sequence number, from 1.
    pub seq: u64,
    /// Milliseconds since the sim started.
    pub at_ms: u64,
    /// The stream, numbered from 1 per sim.
    pub stream: u64,
    /// What happened.
    pub event: XdsEvent,
}

/// What happened on a stream.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum XdsEvent {
    /// A delta stream was opened (logged at its first request, which carries the node).
    Opened {
        /// `node.id` (the proxy service ID).
        node_id: String,
        /// The `x-consul-token` metadata, if any.
        token: Option<String>,
        /// The peer address.
        peer: Option<String>,
    },
    /// A request that is not an ACK or NACK (a subscription change or the first of a type).
    Request {
        /// The type URL.
        type_url: String,
        /// `resource_names_subscribe`.
        subscribe: Vec<String>,
        /// `resource_names_unsubscribe`.
        unsubscribe: Vec<String>,
        /// `initial_resource_versions` (a reconnect).
        initial_versions: BTreeMap<String, String>,
    },
    /// A response the server sent.
    Response {
        /// The type URL.
        type_url: String,
        /// Its nonce.
        nonce: String,
        /// (name, version) of every resource in it.
        resources: Vec<(String, String)>,
        /// `removed_resources`.
        removed: Vec<String>,
    },
    /// The client accepted the response with this nonce.
    Ack {
        /// The type URL.
        type_url: String,
        /// The nonce acknowledged.
        nonce: String,
    },
    /// The client rejected the response with this nonce.
    Nack {
        /// The type URL.
        type_url: String,
        /// The nonce rejected.
        nonce: String,
        /// `error_detail.code`.
        code: i32,
        /// `error_detail.message` (Envoy's reason).
        message: String,
    },
    /// The stream ended (client gone, server error, fault).
    Closed {
        /// gRPC status code (0 when the client ended it).
        code: i32,
        /// Why.
        reason: String,
    },
}

impl XdsEvent {
    /// A stable machine name of the event kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Opened { .. } => "opened",
            Self::Request { .. } => "request",
            Self::Response { .. } => "response",
            Self::Ack { .. } => "ack",
            Self::Nack { .. } => "nack",
            Self::Closed { .. } => "closed",
        }
    }
}

/// The log.
#[derive(Debug)]
pub struct XdsLog {
    log: SeqLog<XdsLogEntry>,
    next_stream: AtomicU64,
    builds: AtomicU64,
}

impl Sequenced for XdsLogEntry {
    fn seq(&self) -> u64 {
        self.seq
    }
}

impl Default for XdsLog {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl XdsLog {
    /// An empty log keeping at most `capacity` entries.
    pub fn new(capacity: usize) -> Self {
        Self {
            log: SeqLog::new(capacity),
            next_stream: AtomicU64::new(0),
            builds: AtomicU64::new(0),
        }
    }

    /// A fresh stream number.
    pub fn new_stream(&self) -> u64 {
        self.next_stream.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Records an event of `stream`; returns its sequence number.
    pub fn record(&self, stream: u64, event: XdsEvent) -> u64 {
        self.log.push(|seq, at_ms| XdsLogEntry {
            seq,
            at_ms,
            stream,
            event,
        })
    }

    /// Every kept entry.
    pub fn entries(&self) -> Vec<XdsLogEntry> {
        self.log.entries()
    }

    /// Entries with `seq > after`.
    pub fn since(&self, after: u64) -> Vec<XdsLogEntry> {
        self.log.since(after)
    }

    /// The last sequence number handed out.
    pub fn last_seq(&self) -> u64 {
        self.log.last_seq()
    }

    /// Counts one build of a proxy's resources by a stream.
    pub(crate) fn count_build(&self) {
        self.builds.fetch_add(1, Ordering::Relaxed);
    }

    /// How many times streams built their proxy's resources from the store (a cost measure
    /// for benchmarks: a change should cost about one build per affected stream).
    pub fn builds(&self) -> u64 {
        self.builds.load(Ordering::Relaxed)
    }

    /// How many entries were dropped for capacity.
    pub fn dropped(&self) -> u64 {
        self.log.dropped()
    }

    /// Waits until an entry satisfying `pred` exists, or the timeout passes.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        pred: impl Fn(&XdsLogEntry) -> bool,
    ) -> Option<XdsLogEntry> {
        self.log.wait_for(timeout, pred).await
    }

    /// Every response of every stream that was never ACKed or NACKed (see [`unanswered`]).
    pub fn unanswered(&self) -> Vec<(u64, String, String)> {
        self.log.with_entries(|e| unanswered(e))
    }

    /// Every NACK recorded.
    pub fn nacks(&self) -> Vec<XdsLogEntry> {
        self.log.with_entries(|e| {
            e.iter()
                .filter(|e| matches!(e.event, XdsEvent::Nack { .. }))
                .cloned()
                .collect()
        })
    }
}

/// Every response among `entries` that was never ACKed or NACKed, as (stream, type URL, nonce):
/// what the client still owes an answer for. A response on a stream that closed before
/// answering is included.
pub fn unanswered<'a>(
    entries: impl IntoIterator<Item = &'a XdsLogEntry>,
) -> Vec<(u64, String, String)> {
    let mut open: Vec<(u64, String, String)> = Vec::new();
    for e in entries {
        match &e.event {
            XdsEvent::Response {
                type_url, nonce, ..
            } => open.push((e.stream, type_url.clone(), nonce.clone())),
            XdsEvent::Ack { nonce, .. } | XdsEvent::Nack { nonce, .. } => {
                open.retain(|(s, _, n)| !(*s == e.stream && n == nonce));
            }
            _ => {}
        }
    }
    open
}
