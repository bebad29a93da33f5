//! What an HTTP instance (`protocol` http, http2 or grpc) does with a request: records it in
//! the scenario's request log (which instance, method, path and query, headers, the request id
//! of `x-conformance-request` and so the attempt number), then answers as its current
//! `Answer` says: after its delay, with its status (for the first N attempts), by resetting
//! the stream, or else normally: gRPC calls as `apps/h2.rs` answers them, other requests with
//! `200` and a JSON body of what was received. Every answer carries `x-conformance-served-by`
//! (the instance id), `x-conformance-attempt` and `x-conformance-extra: instance` (a header a
//! route can remove).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use parking_lot::Mutex;
use scenarios::Answer;

use super::super::apps::h2;

/// The header that names one logical request; its retries carry the same value.
pub(crate) const REQUEST_HEADER: &str = "x-conformance-request";
/// The answer header naming the instance.
pub(crate) const SERVED_BY: &str = "x-conformance-served-by";
/// The answer header carrying the attempt number the instance saw.
const ATTEMPT: &str = "x-conformance-attempt";
/// An answer header the instance always sends (for `ResponseHeaders.Remove`).
pub(crate) const EXTRA: (&str, &str) = ("x-conformance-extra", "instance");

/// One request an instance received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Received {
    /// The instance id.
    pub(crate) instance: String,
    /// Its `x-conformance-request`, if any.
    pub(crate) request: Option<String>,
    pub(crate) method: String,
    /// Path and query as received.
    pub(crate) path: String,
    /// Header names (lowercase) to values (repeated headers joined with `,`).
    pub(crate) headers: BTreeMap<String, String>,
}

/// Every request the scenario's HTTP instances received, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Log(Mutex<Vec<Received>>);

impl Log {
    /// Records `r`; returns its attempt number (how many requests with its id were received,
    /// this one included; 1 without an id).
    fn record(&self, r: Received) -> u32 {
        let mut log = self.0.lock();
        let n = match &r.request {
            Some(id) => log
                .iter()
                .filter(|x| x.request.as_deref() == Some(id))
                .count(),
            None => 0,
        };
        log.push(r);
        u32::try_from(n + 1).unwrap_or(u32::MAX)
    }

    /// Every attempt of request `id`, oldest first.
    pub(crate) fn attempts(&self, id: &str) -> Vec<Received> {
        self.0
            .lock()
            .iter()
            .filter(|x| x.request.as_deref() == Some(id))
            .cloned()
            .collect()
    }
}

/// One instance's HTTP side: who it is, how it answers now, where it records.
#[derive(Debug, Clone)]
pub(crate) struct HttpInstance {
    pub(crate) server: Arc<h2::Server>,
    pub(crate) answer: Arc<Mutex<Answer>>,
    pub(crate) log: Arc<Log>,
}

/// Why an instance reset a stream instead of answering.
#[derive(Debug)]
pub(crate) struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("reset as the instance's answer says")
    }
}

impl std::error::Error for Reset {}

impl HttpInstance {
    /// Answers one request (one stream).
    pub(crate) async fn handle(&self, req: Request<Incoming>) -> Result<Response<h2::Body>, Reset> {
        let headers: BTreeMap<String, String> = req
            .headers()
            .keys()
            .map(|k| (k.as_str().to_owned(), joined(&req, k)))
            .collect();
        let received = Received {
            instance: self.server.served_by.clone(),
            request: headers.get(REQUEST_HEADER).cloned(),
            method: req.method().to_string(),
            path: req
                .uri()
                .path_and_query()
                .map_or_else(|| req.uri().path().to_owned(), |p| p.as_str().to_owned()),
            headers,
        };
        let attempt = self.log.record(received.clone());
        let answer = self.answer.lock().clone();
        if let Some(d) = answer
            .delay
            .as_deref()
            .and_then(|d| scenarios::parse_go_duration(d).ok())
        {
            tokio::time::sleep(d.min(Duration::from_secs(60))).await;
        }
        if answer.reset {
            return Err(Reset);
        }
        let status = match (answer.status, answer.first) {
            (Some(s), Some(n)) if attempt <= n => s,
            (Some(s), None) => s,
            _ => 200,
        };
        let mut resp = if status == 200 && h2::is_grpc(req.headers()) {
            h2::answer(req, &self.server).await
        } else {
            let body = serde_json::json!({
                "instance": received.instance,
                "method": received.method,
                "path": received.path,
                "headers": received.headers,
                "attempt": attempt,
            });
            drop(req);
            Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(body.to_string())).boxed())
                .unwrap_or_default()
        };
        let h = resp.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&self.server.served_by) {
            h.insert(SERVED_BY, v);
        }
        h.insert(ATTEMPT, HeaderValue::from(attempt));
        h.insert(EXTRA.0, HeaderValue::from_static(EXTRA.1));
        Ok(resp)
    }
}

fn joined(req: &Request<Incoming>, k: &http::HeaderName) -> String {
    req.headers()
        .get_all(k)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect::<Vec<_>>()
        .join(",")
}
