//! Timing and validation knobs read from the registration's merged `Proxy.Config`.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `protocol` | `tcp` | `http` switches the inbound side to L7 (callers over HTTP/1.1 or HTTP/2, told apart as Envoy's codec `AUTO` does; the local app over HTTP/1.1); `http2` and `grpc` to L7 over HTTP/2 (ALPN `h2`, the local app over h2c) |
//! | `reauthorize_interval_ms` | 1000 | re-check every open inbound connection this often (0 = only on change) |
//! | `max_connection_lifetime_ms` | 0 (off) | close inbound connections older than this |
//! | `local_connect_timeout_ms` | 1000 | dial timeout to the local application |
//! | `local_request_timeout_ms` | unset (none) | HTTP: time allowed for the local application's response headers; on expiry the caller gets Envoy's `504 upstream request timeout` (0 = none) |
//! | `max_inbound_connections` | unset (none) | open inbound connections allowed at once; the excess is closed right after accept, as Envoy's `connection_limit` filter does (0 = none) |
//! | `balance_inbound_connections` | unset | `exact_balance` accepted (one accept loop per listener hands connections to one work-stealing runtime, or round-robin to the connection workers of `-workers N`, so they are already spread evenly); other values are ignored with a warning, as Consul does |
//! | `handshake_timeout_ms` | 10000 | inbound TLS handshake timeout |
//! | `upstream_connect_timeout_ms` | chain `ConnectTimeout`, else 5000 | dial + handshake timeout per upstream endpoint |
//! | `verify_spiffe_uri` | true | false = accept any URI SAN with a `svc/<name>` segment (CA providers that cannot issue Consul SPIFFE IDs) |
//! | `verify_trust_domain` | false | true = the peer's trust domain must equal the roots' `TrustDomain` (Consul does not check it) |
//! | `drain_timeout_ms` | 5000 | on shutdown, wait this long for open connections |
//! | `request_headers_timeout_ms` | 300000 | L7 listeners over HTTP/1.1 (public and upstream): a request's headers must arrive within this (Envoy's `stream_idle_timeout` default, 5 min, closes a stream that stops sending) |
//! | `stream_idle_timeout_ms` | 300000 | L7 listeners (public and upstream): a request body silent this long fails the request with Envoy's `408 stream timeout` and closes the connection (Envoy's HCM `stream_idle_timeout` default, 5 min, which Consul leaves unset; 0 = none) |
//! | `tcp_idle_timeout_ms` | 3600000 | L4 relays (public listener, upstream listeners, permissive and transparent passthrough): a connection on which no byte has been sent or received either way this long is closed (Envoy's `tcp_proxy` `idle_timeout` default, 1 h, which Consul leaves unset; 0 = none) |
//! | `idle_timeout_ms` | 3600000 | L7 listeners (public and upstream): a connection on which no byte has moved this long is closed, e.g. an HTTP/2 caller stalled inside a header block or holding a connection with no stream (Envoy's HCM `common_http_protocol_options.idle_timeout` default, 1 h, which Consul leaves unset; 0 = none) |
//! | `local_idle_timeout_ms` | unset | Consul's key: the public listener route's `idle_timeout`, which replaces `stream_idle_timeout_ms` for requests to the local app (0 = none) |
//! | `metrics_bind_addr` | unset | `host:port` for a Prometheus text endpoint at `/metrics` |
//!
//! Numbers may be JSON numbers or numeric strings; bad values fall back to the default with a
//! warning.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Map, Value};

/// The application protocol of the proxied service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// Plain TCP: authorize per connection.
    #[default]
    Tcp,
    /// `http`: authorize per request, HTTP/1.1 on both sides.
    Http,
    /// `http2`: authorize per stream; HTTP/2 (or HTTP/1.1) inbound, h2c to the local app.
    Http2,
    /// `grpc`: as `http2`; refused gRPC calls get `grpc-status: 7`.
    Grpc,
}

impl Protocol {
    /// Maps Consul's protocol names; unknown or empty means TCP.
    pub fn parse(s: &str) -> Self {
        match s.to_ascii_lowercase().as_str() {
            "http" => Self::Http,
            "http2" => Self::Http2,
            "grpc" => Self::Grpc,
            _ => Self::Tcp,
        }
    }

    /// HTTP-based (L7): `http`, `http2` or `grpc`.
    pub fn is_http(self) -> bool {
        !matches!(self, Self::Tcp)
    }

    /// Carried over HTTP/2 (`http2`, `grpc`).
    pub fn is_h2(self) -> bool {
        matches!(self, Self::Http2 | Self::Grpc)
    }

    /// The ALPN protocols the inbound TLS listener offers, as Consul's Envoy public listener
    /// does (`getAlpnProtocols` in Consul's `agent/xds/listeners.go`): `h2` and `http/1.1` for
    /// `http2`/`grpc`, `http/1.1` for `http`, none for `tcp`.
    pub fn alpn(self) -> Vec<Vec<u8>> {
        match self {
            Self::Tcp => Vec::new(),
            Self::Http => vec![b"http/1.1".to_vec()],
            Self::Http2 | Self::Grpc => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        }
    }
}

/// Data-plane knobs (see the module docs for names and defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knobs {
    /// `protocol`.
    pub protocol: Protocol,
    /// `reauthorize_interval_ms` (zero = only on snapshot changes).
    pub reauthorize_interval: Duration,
    /// `max_connection_lifetime_ms` (None = unlimited).
    pub max_connection_lifetime: Option<Duration>,
    /// `local_connect_timeout_ms`.
    pub local_connect_timeout: Duration,
    /// `local_request_timeout_ms` (None = no limit).
    pub local_request_timeout: Option<Duration>,
    /// `max_inbound_connections` (None = no limit).
    pub max_inbound_connections: Option<u64>,
    /// `balance_inbound_connections = "exact_balance"`.
    pub exact_balance: bool,
    /// `handshake_timeout_ms`.
    pub handshake_timeout: Duration,
    /// `upstream_connect_timeout_ms`; None = the chain's ConnectTimeout, else 5 s.
    pub upstream_connect_timeout: Option<Duration>,
    /// `verify_spiffe_uri`.
    pub verify_spiffe_uri: bool,
    /// `verify_trust_domain`.
    pub verify_trust_domain: bool,
    /// `drain_timeout_ms`.
    pub drain_timeout: Duration,
    /// `metrics_bind_addr`.
    pub metrics_bind_addr: Option<SocketAddr>,
    /// `request_headers_timeout_ms`.
    pub request_headers_timeout: Duration,
    /// `stream_idle_timeout_ms` (None = no limit).
    pub stream_idle_timeout: Option<Duration>,
    /// `local_idle_timeout_ms` (Some(zero) = no limit; None = `stream_idle_timeout`).
    pub local_idle_timeout: Option<Duration>,
    /// `idle_timeout_ms`: an L7 connection with no byte moving this long is closed (None = no
    /// limit).
    pub idle_timeout: Option<Duration>,
    /// `tcp_idle_timeout_ms`: an L4 relay with no byte moving this long is closed (None = no
    /// limit).
    pub tcp_idle_timeout: Option<Duration>,
}

impl Default for Knobs {
    fn default() -> Self {
        Self {
            protocol: Protocol::Tcp,
            reauthorize_interval: Duration::from_millis(1000),
            max_connection_lifetime: None,
            local_connect_timeout: Duration::from_millis(1000),
            local_request_timeout: None,
            max_inbound_connections: None,
            exact_balance: false,
            handshake_timeout: Duration::from_millis(10_000),
            upstream_connect_timeout: None,
            verify_spiffe_uri: true,
            verify_trust_domain: false,
            drain_timeout: Duration::from_millis(5000),
            metrics_bind_addr: None,
            request_headers_timeout: Duration::from_millis(300_000),
            stream_idle_timeout: Some(Duration::from_millis(300_000)),
            local_idle_timeout: None,
            idle_timeout: Some(Duration::from_millis(3_600_000)),
            tcp_idle_timeout: Some(Duration::from_millis(3_600_000)),
        }
    }
}

fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => None,
        },
        Value::Number(n) => n.as_u64().map(|n| n != 0),
        _ => None,
    }
}

impl Knobs {
    /// How long a request body to the local application may stay silent: the route's
    /// `local_idle_timeout_ms` when set, else the connection manager's `stream_idle_timeout_ms`.
    pub fn inbound_idle_timeout(&self) -> Option<Duration> {
        match self.local_idle_timeout {
            Some(d) if d.is_zero() => None,
            Some(d) => Some(d),
            None => self.stream_idle_timeout,
        }
    }

    /// Reads knobs from `Proxy.Config` (absent keys keep their defaults).
    pub fn from_config(config: &Map<String, Value>) -> Self {
        let mut k = Self::default();
        let ms = |key: &str| -> Option<u64> {
            let v = config.get(key)?;
            let n = as_u64(v);
            if n.is_none() {
                tracing::warn!(key, value = %v, "ignoring non-numeric Proxy.Config value");
            }
            n
        };
        let flag = |key: &str| -> Option<bool> {
            let v = config.get(key)?;
            let b = as_bool(v);
            if b.is_none() {
                tracing::warn!(key, value = %v, "ignoring non-boolean Proxy.Config value");
            }
            b
        };
        if let Some(p) = config.get("protocol").and_then(Value::as_str) {
            k.protocol = Protocol::parse(p);
        }
        if let Some(v) = ms("reauthorize_interval_ms") {
            k.reauthorize_interval = Duration::from_millis(v);
        }
        if let Some(v) = ms("max_connection_lifetime_ms") {
            k.max_connection_lifetime = (v > 0).then(|| Duration::from_millis(v));
        }
        if let Some(v) = ms("local_connect_timeout_ms") {
            k.local_connect_timeout = Duration::from_millis(v);
        }
        if let Some(v) = ms("request_headers_timeout_ms").filter(|v| *v > 0) {
            k.request_headers_timeout = Duration::from_millis(v);
        }
        if let Some(v) = ms("stream_idle_timeout_ms") {
            k.stream_idle_timeout = (v > 0).then(|| Duration::from_millis(v));
        }
        if let Some(v) = ms("idle_timeout_ms") {
            k.idle_timeout = (v > 0).then(|| Duration::from_millis(v));
        }
        if let Some(v) = ms("tcp_idle_timeout_ms") {
            k.tcp_idle_timeout = (v > 0).then(|| Duration::from_millis(v));
        }
        if let Some(v) = ms("local_idle_timeout_ms") {
            k.local_idle_timeout = Some(Duration::from_millis(v));
        }
        if let Some(v) = ms("local_request_timeout_ms") {
            k.local_request_timeout = (v > 0).then(|| Duration::from_millis(v));
        }
        if let Some(v) = ms("max_inbound_connections") {
            k.max_inbound_connections = (v > 0).then_some(v);
        }
        match config
            .get("balance_inbound_connections")
            .and_then(Value::as_str)
        {
            None | Some("") => {}
            Some("exact_balance") => k.exact_balance = true,
            Some(other) => {
                tracing::warn!(value = other, "ignoring invalid connection balance option");
            }
        }
        if let Some(v) = ms("handshake_timeout_ms") {
            k.handshake_timeout = Duration::from_millis(v);
        }
        if let Some(v) = ms("upstream_connect_timeout_ms") {
            k.upstream_connect_timeout = (v > 0).then(|| Duration::from_millis(v));
        }
        if let Some(v) = ms("drain_timeout_ms") {
            k.drain_timeout = Duration::from_millis(v);
        }
        if let Some(b) = flag("verify_spiffe_uri") {
            k.verify_spiffe_uri = b;
        }
        if let Some(b) = flag("verify_trust_domain") {
            k.verify_trust_domain = b;
        }
        if let Some(v) = config.get("metrics_bind_addr") {
            match v.as_str().map(str::parse::<SocketAddr>) {
                Some(Ok(a)) => k.metrics_bind_addr = Some(a),
                _ => tracing::warn!(value = %v, "ignoring bad metrics_bind_addr"),
            }
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(Knobs::from_config(&Map::new()), Knobs::default());
        let cfg: Map<String, Value> = serde_json::from_str(
            r#"{"protocol":"HTTP","reauthorize_interval_ms":250,"max_connection_lifetime_ms":"3000",
                "local_connect_timeout_ms":2000.0,"verify_spiffe_uri":false,
                "upstream_connect_timeout_ms":0,"metrics_bind_addr":"127.0.0.1:9102",
                "handshake_timeout_ms":"soon"}"#,
        )
        .unwrap();
        let k = Knobs::from_config(&cfg);
        assert_eq!(k.protocol, Protocol::Http);
        assert_eq!(k.reauthorize_interval, Duration::from_millis(250));
        assert_eq!(k.max_connection_lifetime, Some(Duration::from_secs(3)));
        assert_eq!(k.local_connect_timeout, Duration::from_secs(2));
        assert!(!k.verify_spiffe_uri);
        assert_eq!(k.upstream_connect_timeout, None);
        assert_eq!(k.metrics_bind_addr, Some("127.0.0.1:9102".parse().unwrap()));
        assert_eq!(
            k.handshake_timeout,
            Duration::from_secs(10),
            "bad value keeps default"
        );
        assert_eq!(Protocol::parse("grpc"), Protocol::Grpc);
        assert_eq!(Protocol::parse("HTTP2"), Protocol::Http2);
        assert_eq!(Protocol::parse(""), Protocol::Tcp);
        assert!(Protocol::Grpc.is_http() && Protocol::Grpc.is_h2());
        assert!(Protocol::Http.is_http() && !Protocol::Http.is_h2());
        assert!(!Protocol::Tcp.is_http());
        assert_eq!(Protocol::Tcp.alpn(), Vec::<Vec<u8>>::new());
        assert_eq!(Protocol::Http.alpn(), vec![b"http/1.1".to_vec()]);
        assert_eq!(
            Protocol::Http2.alpn(),
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    #[test]
    fn inbound_limits_and_local_request_timeout() {
        let cfg: Map<String, Value> = serde_json::from_str(
            r#"{"max_inbound_connections":"2","local_request_timeout_ms":300,
                "balance_inbound_connections":"exact_balance"}"#,
        )
        .unwrap();
        let k = Knobs::from_config(&cfg);
        assert_eq!(k.max_inbound_connections, Some(2));
        assert_eq!(k.local_request_timeout, Some(Duration::from_millis(300)));
        assert!(k.exact_balance);
        let cfg: Map<String, Value> = serde_json::from_str(
            r#"{"max_inbound_connections":0,"local_request_timeout_ms":0,
                "balance_inbound_connections":"round_robin"}"#,
        )
        .unwrap();
        let k = Knobs::from_config(&cfg);
        assert_eq!(k.max_inbound_connections, None, "0 = no limit");
        assert_eq!(k.local_request_timeout, None, "0 = no timeout");
        assert!(!k.exact_balance, "unknown balance values are ignored");
    }

    #[test]
    fn idle_timeouts_follow_envoys_defaults_and_consuls_route_key() {
        let k = Knobs::default();
        assert_eq!(k.inbound_idle_timeout(), Some(Duration::from_secs(300)));
        let cfg = |j: &str| Knobs::from_config(&serde_json::from_str(j).unwrap());
        let k = cfg(r#"{"stream_idle_timeout_ms": 0}"#);
        assert_eq!(k.inbound_idle_timeout(), None, "0 = none");
        let k = cfg(r#"{"stream_idle_timeout_ms": 100, "local_idle_timeout_ms": 250}"#);
        assert_eq!(k.inbound_idle_timeout(), Some(Duration::from_millis(250)));
        let k = cfg(r#"{"stream_idle_timeout_ms": 100, "local_idle_timeout_ms": 0}"#);
        assert_eq!(k.inbound_idle_timeout(), None, "the route's 0 disables it");
        let hour = Some(Duration::from_secs(3600));
        assert_eq!(
            Knobs::default().tcp_idle_timeout,
            hour,
            "tcp_proxy's default"
        );
        assert_eq!(cfg(r#"{"tcp_idle_timeout_ms": 0}"#).tcp_idle_timeout, None);
        let k = cfg(r#"{"tcp_idle_timeout_ms": "250"}"#);
        assert_eq!(k.tcp_idle_timeout, Some(Duration::from_millis(250)));
        assert_eq!(k.idle_timeout, hour, "the L7 one is its own key");
    }
}
