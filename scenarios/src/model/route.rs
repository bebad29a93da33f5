//! The `l7-traffic` vocabulary: how a harness-run HTTP instance answers (`Answer`, set in its
//! spec and changed live by an `instance` step), and the checks that send requests from the app
//! through an upstream's local listener (`request`, `spread`, `burst`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How an HTTP instance answers. The default: 200 at once, with what it received as the body.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// Answer this status instead of 200 (the body still says what the instance received).
    #[serde(default)]
    pub status: Option<u16>,
    /// With `status`: only for the first N attempts of each request (attempts of one request
    /// carry the same `x-conformance-request` header); later attempts get 200.
    #[serde(default)]
    pub first: Option<u32>,
    /// Wait this long (Go duration) before answering.
    #[serde(default)]
    pub delay: Option<String>,
    /// Reset the stream (HTTP/2) or close the connection (HTTP/1.1) instead of answering.
    #[serde(default)]
    pub reset: bool,
    /// Close every new connection before the TLS handshake (a connect failure for the proxy).
    #[serde(default)]
    pub refuse: bool,
    /// Never accept: the listen backlog is kept full so new connects stay pending (a connect
    /// timeout for the proxy). Only in `[[setup.instances]]`, not in an `instance` step.
    #[serde(default)]
    pub blackhole: bool,
}

/// How the app speaks to the upstream's local listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AppProtocol {
    /// Cleartext HTTP/1.1 (keep-alive).
    #[default]
    Http1,
    /// Cleartext HTTP/2 with prior knowledge.
    H2c,
    /// A unary gRPC call over h2c (`POST`, `application/grpc`); the check's `status` is the
    /// HTTP status and `grpc_status` the grpc-status.
    Grpc,
}

/// One request from the app through an upstream's local listener, with what must hold about
/// the answer and about what the instances received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestCheck {
    /// The upstream whose local listener the app calls.
    pub upstream: String,
    /// A connection opened by an `open-upstream` step (keep-alive / HTTP/2); default a new one.
    #[serde(default)]
    pub conn: Option<String>,
    /// How the app speaks (ignored with `conn`: the connection's own protocol).
    #[serde(default)]
    pub protocol: AppProtocol,
    /// Method (default GET; POST for grpc).
    #[serde(default)]
    pub method: Option<String>,
    /// Path with an optional query.
    pub path: String,
    /// Request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The status the app must get.
    pub status: u16,
    /// With `protocol = "grpc"`: the grpc-status the app must get (default 0 with a 200).
    #[serde(default)]
    pub grpc_status: Option<u32>,
    /// The instance that answered (its `x-conformance-served-by`) must be one of these; an empty
    /// list: the answer must come from the proxy itself (no instance answered).
    #[serde(default)]
    pub reach: Option<Vec<String>>,
    /// The path (with query) the answering instance received.
    #[serde(default)]
    pub received_path: Option<String>,
    /// Headers the answering instance received, with their values.
    #[serde(default)]
    pub received_headers: BTreeMap<String, String>,
    /// Headers the answering instance must not have received.
    #[serde(default)]
    pub received_without: Vec<String>,
    /// Response headers the app must get, with their values.
    #[serde(default)]
    pub response_headers: BTreeMap<String, String>,
    /// Response headers the app must not get.
    #[serde(default)]
    pub response_without: Vec<String>,
    /// How many attempts of this request the instances received, all together.
    #[serde(default)]
    pub attempts: Option<u32>,
    /// The answer must come within this many milliseconds of sending the request.
    #[serde(default)]
    pub max_ms: Option<u64>,
    /// ... and not before this many (a timeout the proxy must wait for).
    #[serde(default)]
    pub min_ms: Option<u64>,
}

/// Many requests (one keep-alive connection, or `concurrency` at once): every one must answer
/// 200, and the instances that answered must be spread as said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpreadCheck {
    /// The upstream whose local listener the app calls.
    pub upstream: String,
    /// How the app speaks.
    #[serde(default)]
    pub protocol: AppProtocol,
    /// Method (default GET).
    #[serde(default)]
    pub method: Option<String>,
    /// Path with an optional query.
    pub path: String,
    /// Request headers (on every request).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// How many requests.
    pub requests: u32,
    /// Requests in flight at once (default 1: one after another).
    #[serde(default)]
    pub concurrency: Option<u32>,
    /// Each instance's expected share in percent (the shares sum to 100; an instance not listed
    /// must get none). Each count must fall within the binomial bound `n·p ± 5·√(n·p·(1−p))`
    /// (outside with probability below 10⁻⁶ for a proxy that honours the shares).
    #[serde(default)]
    pub expect: BTreeMap<String, f64>,
    /// Each listed instance's minimum share in percent.
    #[serde(default)]
    pub at_least: BTreeMap<String, f64>,
    /// Request `i` carries this header with the value `key-<seed>-<i mod keys>`.
    #[serde(default)]
    pub vary_header: Option<String>,
    /// How many distinct values `vary_header` takes (default 16).
    #[serde(default)]
    pub keys: Option<u32>,
    /// Every value of `vary_header` must always reach the same instance, and the values must
    /// reach at least two instances.
    #[serde(default)]
    pub sticky: bool,
}

/// `requests` requests sent at once on one HTTP/2 (h2c) connection, each held by the instance
/// for its answer `delay`: exactly `ok` must answer 200 and the rest `rejected`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstCheck {
    /// The upstream whose local listener the app calls.
    pub upstream: String,
    /// Path.
    pub path: String,
    /// How many requests at once.
    pub requests: u32,
    /// How many must answer 200.
    pub ok: u32,
    /// The status the others must get (default 503).
    #[serde(default = "unavailable")]
    pub rejected: u16,
}

fn unavailable() -> u16 {
    503
}
