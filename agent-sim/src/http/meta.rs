//! Response metadata and JSON bodies: `X-Consul-*` headers (`setMeta`), agent-cache headers
//! (`X-Cache`, `Age`), `?pretty`, and the empty-body answers of writes. The shared [`Body`] itself
//! is state (`crate::state::body`), re-exported here.

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

pub use crate::state::body::{Body, BodyDigest, SharedBody};

/// What `setMeta` writes for a server-backed read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryMeta {
    /// `X-Consul-Index` (never 0 on the wire).
    pub index: u64,
    /// `X-Consul-KnownLeader`.
    pub known_leader: bool,
    /// `X-Consul-LastContact` in ms.
    pub last_contact_ms: u64,
    /// `X-Consul-Effective-Consistency`, only on health, discovery chain and intention match.
    pub consistency: Option<&'static str>,
}

impl QueryMeta {
    /// Metadata of a read answered by the leader.
    pub fn leader(index: u64) -> Self {
        Self {
            index,
            known_leader: true,
            last_contact_ms: 0,
            consistency: None,
        }
    }

    /// Adds `X-Consul-Effective-Consistency` for a request with these flags.
    pub fn with_consistency(mut self, stale: bool, consistent: bool) -> Self {
        self.consistency = Some(if consistent {
            "consistent"
        } else if stale {
            "stale"
        } else {
            "leader"
        });
        self
    }

    /// Writes the headers.
    pub fn apply(&self, headers: &mut HeaderMap) {
        set(headers, "x-consul-index", &self.index.max(1).to_string());
        set(
            headers,
            "x-consul-knownleader",
            if self.known_leader { "true" } else { "false" },
        );
        set(
            headers,
            "x-consul-lastcontact",
            &self.last_contact_ms.to_string(),
        );
        set_static(headers, "x-consul-query-backend", "blocking-query");
        if let Some(c) = self.consistency {
            set(headers, "x-consul-effective-consistency", c);
        }
    }
}

/// Agent-cache headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMeta {
    /// `X-Cache: MISS`.
    Miss,
    /// `X-Cache: HIT` with `Age` in seconds.
    Hit {
        /// Seconds since the value was known good.
        age_secs: u64,
    },
}

impl CacheMeta {
    /// Writes the headers.
    pub fn apply(&self, headers: &mut HeaderMap) {
        match self {
            Self::Miss => set_static(headers, "x-cache", "MISS"),
            Self::Hit { age_secs } => {
                set_static(headers, "x-cache", "HIT");
                set(headers, "age", &age_secs.to_string());
            }
        }
    }
}

/// Sets a header to a constant value (no allocation).
pub fn set_static(headers: &mut HeaderMap, name: &'static str, value: &'static str) {
    headers.insert(
        HeaderName::from_static(name),
        HeaderValue::from_static(value),
    );
}

/// Sets a header whose value we produced ourselves.
pub fn set(headers: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(HeaderName::from_static(name), v);
    }
}

/// A 200 JSON body as Go's encoder writes it; indented with a trailing newline when `pretty`.
pub fn json(value: &Value, pretty: bool) -> Response {
    let body = if pretty {
        crate::go::gojson::pretty(value)
    } else {
        crate::go::gojson::compact(value)
    };
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A 200 JSON body with query and cache metadata.
pub fn json_with(
    body: &Body,
    pretty: bool,
    meta: Option<QueryMeta>,
    cache: Option<CacheMeta>,
) -> Response {
    let mut resp = if pretty {
        json(body.value(), true)
    } else {
        let mut r = (StatusCode::OK, body.compact()).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        r
    };
    if let Some(m) = meta {
        m.apply(resp.headers_mut());
    }
    if let Some(c) = cache {
        c.apply(resp.headers_mut());
    }
    resp
}

/// The empty 200 of register/deregister (Content-Type still JSON, as Consul's wrapper sets it).
pub fn empty_ok() -> Response {
    let mut resp = StatusCode::OK.into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_headers() {
        let mut h = HeaderMap::new();
        QueryMeta::leader(0)
            .with_consistency(true, false)
            .apply(&mut h);
        CacheMeta::Hit { age_secs: 3 }.apply(&mut h);
        assert_eq!(h["x-consul-index"], "1", "0 is rewritten to 1");
        assert_eq!(h["x-consul-knownleader"], "true");
        assert_eq!(h["x-consul-lastcontact"], "0");
        assert_eq!(h["x-consul-query-backend"], "blocking-query");
        assert_eq!(h["x-consul-effective-consistency"], "stale");
        assert_eq!(
            (&h["x-cache"], &h["age"]),
            (
                &HeaderValue::from_static("HIT"),
                &HeaderValue::from_static("3")
            )
        );
    }

    #[test]
    fn pretty_json_ends_with_newline() {
        let r = json(&serde_json::json!({"a": 1}), true);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
    }
}
