//! Prometheus metrics: lock-free counters and gauges rendered as text exposition, and an optional
//! listener serving them at `/metrics`.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// Why a connection was refused (a label value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefuseReason {
    /// TLS handshake failed (no/untrusted/expired certificate, protocol error).
    Handshake,
    /// The handshake timed out.
    HandshakeTimeout,
    /// The peer's certificate does not name a Consul service.
    Identity,
    /// Intentions or the default policy deny it.
    Denied,
    /// The local application could not be reached.
    LocalConnect,
    /// No healthy upstream endpoint accepted the connection.
    NoEndpoint,
    /// Closed after re-authorization denied it.
    Reauthorization,
    /// Closed at the maximum lifetime.
    Lifetime,
    /// Closed at once: `max_inbound_connections` were already open.
    ConnectionLimit,
    /// Transparent mode: the original destination is not in the mesh (and passthrough is off),
    /// is the outbound listener itself, or could not be read.
    UnknownDestination,
}

const REASONS: [RefuseReason; 10] = [
    RefuseReason::Handshake,
    RefuseReason::HandshakeTimeout,
    RefuseReason::Identity,
    RefuseReason::Denied,
    RefuseReason::LocalConnect,
    RefuseReason::NoEndpoint,
    RefuseReason::Reauthorization,
    RefuseReason::Lifetime,
    RefuseReason::UnknownDestination,
    RefuseReason::ConnectionLimit,
];

impl RefuseReason {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Handshake => "handshake",
            Self::HandshakeTimeout => "handshake_timeout",
            Self::Identity => "identity",
            Self::Denied => "denied",
            Self::LocalConnect => "local_connect",
            Self::NoEndpoint => "no_endpoint",
            Self::Reauthorization => "reauthorization",
            Self::Lifetime => "lifetime",
            Self::UnknownDestination => "unknown_destination",
            Self::ConnectionLimit => "connection_limit",
        }
    }
}

/// Which agent watch failed (a label value).
pub const WATCHES: [&str; 7] = [
    "service",
    "leaf",
    "roots",
    "intentions",
    "agent_self",
    "discovery_chain",
    "health",
];

/// All proxy metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    inbound_accepted: AtomicU64,
    outbound_accepted: AtomicU64,
    refused: [AtomicU64; REASONS.len()],
    authz_allow: AtomicU64,
    authz_deny: AtomicU64,
    watch_errors: [AtomicU64; WATCHES.len()],
    leaf_not_after: AtomicI64,
    last_agent_contact: AtomicI64,
}

fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Metrics {
    /// A fresh set.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// An accepted inbound (`true`) or outbound connection.
    pub fn accepted(&self, inbound: bool) {
        let c = if inbound {
            &self.inbound_accepted
        } else {
            &self.outbound_accepted
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// A refused or cut connection.
    pub fn refused(&self, reason: RefuseReason) {
        if let Some(i) = REASONS.iter().position(|r| *r == reason) {
            self.refused[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// One authorization decision (connection or request).
    pub fn decision(&self, allowed: bool) {
        let c = if allowed {
            &self.authz_allow
        } else {
            &self.authz_deny
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// A failed agent request of watch `watch` (one of [`WATCHES`]).
    pub fn watch_error(&self, watch: &str) {
        if let Some(i) = WATCHES.iter().position(|w| *w == watch) {
            self.watch_errors[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A successful agent response (staleness resets).
    pub fn agent_contact(&self) {
        self.last_agent_contact.store(now_unix(), Ordering::Relaxed);
    }

    /// The current leaf's expiry.
    pub fn leaf_expiry(&self, not_after_unix: i64) {
        self.leaf_not_after.store(not_after_unix, Ordering::Relaxed);
    }

    /// Prometheus text exposition (format 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::new();
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP proxy_connections_accepted_total Connections accepted."
        );
        let _ = writeln!(out, "# TYPE proxy_connections_accepted_total counter");
        for (dir, v) in [
            ("inbound", get(&self.inbound_accepted)),
            ("outbound", get(&self.outbound_accepted)),
        ] {
            let _ = writeln!(
                out,
                "proxy_connections_accepted_total{{direction=\"{dir}\"}} {v}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP proxy_connections_refused_total Connections refused or closed, by reason."
        );
        let _ = writeln!(out, "# TYPE proxy_connections_refused_total counter");
        for (r, c) in REASONS.iter().zip(&self.refused) {
            let _ = writeln!(
                out,
                "proxy_connections_refused_total{{reason=\"{}\"}} {}",
                r.as_str(),
                get(c)
            );
        }
        let _ = writeln!(
            out,
            "# HELP proxy_authorization_decisions_total Authorization decisions."
        );
        let _ = writeln!(out, "# TYPE proxy_authorization_decisions_total counter");
        for (d, c) in [("allow", &self.authz_allow), ("deny", &self.authz_deny)] {
            let _ = writeln!(
                out,
                "proxy_authorization_decisions_total{{decision=\"{d}\"}} {}",
                get(c)
            );
        }
        let _ = writeln!(
            out,
            "# HELP proxy_agent_watch_errors_total Failed agent requests, by watch."
        );
        let _ = writeln!(out, "# TYPE proxy_agent_watch_errors_total counter");
        for (w, c) in WATCHES.iter().zip(&self.watch_errors) {
            let _ = writeln!(
                out,
                "proxy_agent_watch_errors_total{{watch=\"{w}\"}} {}",
                get(c)
            );
        }
        let now = now_unix();
        let leaf = self.leaf_not_after.load(Ordering::Relaxed);
        if leaf != 0 {
            let _ = writeln!(
                out,
                "# HELP proxy_leaf_expiry_seconds Seconds until the leaf certificate expires."
            );
            let _ = writeln!(out, "# TYPE proxy_leaf_expiry_seconds gauge");
            let _ = writeln!(out, "proxy_leaf_expiry_seconds {}", leaf - now);
        }
        let contact = self.last_agent_contact.load(Ordering::Relaxed);
        if contact != 0 {
            let _ = writeln!(
                out,
                "# HELP proxy_agent_staleness_seconds Seconds since the last successful agent response."
            );
            let _ = writeln!(out, "# TYPE proxy_agent_staleness_seconds gauge");
            let _ = writeln!(
                out,
                "proxy_agent_staleness_seconds {}",
                (now - contact).max(0)
            );
        }
        out
    }
}

/// Serves `GET /metrics` (any path, in fact) on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>) {
    loop {
        let tcp = match listener.accept().await {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning on the error.
                tracing::warn!(error = %e, "metrics accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |_req| {
                let body = metrics.render();
                async move {
                    http::Response::builder()
                        .header("content-type", "text/plain; version=0.0.4")
                        .body(Full::new(Bytes::from(body)))
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}

/// Binds `addr` for metrics.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters() {
        let m = Metrics::new();
        m.accepted(true);
        m.refused(RefuseReason::Denied);
        m.refused(RefuseReason::Denied);
        m.decision(false);
        m.watch_error("roots");
        let text = m.render();
        assert!(text.contains("proxy_connections_accepted_total{direction=\"inbound\"} 1\n"));
        assert!(text.contains("proxy_connections_refused_total{reason=\"denied\"} 2\n"));
        assert!(text.contains("proxy_authorization_decisions_total{decision=\"deny\"} 1\n"));
        assert!(text.contains("proxy_agent_watch_errors_total{watch=\"roots\"} 1\n"));
        assert!(!text.contains("proxy_leaf_expiry_seconds"), "no leaf yet");
    }
}
