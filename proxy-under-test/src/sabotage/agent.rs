//! Agent-client sabotage: requests that are never sent again (the "once" family, ignored config
//! changes and discovery chains), tight polling, the missing token, `?cached` dropped, stalled
//! indexes, and the agent health the data plane's fail-closed / fail-open variants react to.
//! Also the synchronous `POST /v1/agent/connect/authorize` of `authorize-via-agent`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Method;
use serde::Deserialize;

use super::{Sabotage, Sabotages};
use crate::agent::{AgentClient, AgentError, Timing};
use crate::authz::Intention;

/// How often `tight-polling` polls each watch.
pub(crate) const TIGHT_POLL: Duration = Duration::from_millis(50);

/// The sabotage state an [`AgentClient`] carries (shared by its clones).
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientHooks {
    pub(crate) set: Sabotages,
    status: Arc<Status>,
}

#[derive(Debug, Default)]
struct Status {
    sent: AtomicU64,
    /// The last answered request failed: no answer, or a 5xx.
    failing: AtomicBool,
    /// The last request got no answer at all.
    unreachable: AtomicBool,
    /// `never-repoll-query`: a prepared query was executed once already.
    query_executed: AtomicBool,
    /// `stall-after-index-reset`: the highest index sent per request.
    highest: Mutex<HashMap<String, u64>>,
}

impl AgentClient {
    /// This client (and the proxy built on it) with the deliberately broken behaviours `set`.
    pub fn with_sabotage(self, set: Sabotages) -> Self {
        self.with_hooks(ClientHooks::new(set))
    }

    /// The sabotage set this client carries.
    pub fn sabotage(&self) -> Sabotages {
        self.hooks.set
    }
}

impl ClientHooks {
    /// The client hooks applying `set`, with a fresh request history.
    pub(crate) fn new(set: Sabotages) -> Self {
        Self {
            set,
            status: Arc::default(),
        }
    }

    fn has(&self, s: Sabotage) -> bool {
        self.set.contains(s)
    }

    /// Whether a request must never be sent: repeated reads of data fetched "once", the service
    /// watch under `ignore-config-changes`, any discovery chain under `ignore-discovery-chain`.
    fn parks(&self, path: &str, query: &[(&str, String)]) -> bool {
        if path.starts_with("/v1/query/") {
            // Prepared queries do not block: every execute after the first is a re-poll.
            return self.has(Sabotage::NeverRepollQuery)
                && self.status.query_executed.swap(true, Ordering::Relaxed);
        }
        let repeat = query.iter().any(|(k, _)| *k == "index" || *k == "hash");
        let once: &[Sabotage] = if path.starts_with("/v1/discovery-chain/") {
            return self.has(Sabotage::IgnoreDiscoveryChain);
        } else if path.starts_with("/v1/agent/service/") {
            &[Sabotage::IgnoreConfigChanges]
        } else if path == "/v1/connect/intentions/match" {
            &[Sabotage::CacheIntentionsForever]
        } else if path.starts_with("/v1/agent/connect/ca/leaf/") {
            &[Sabotage::LeafFetchedOnce, Sabotage::NeverRefreshCerts]
        } else if path == "/v1/agent/connect/ca/roots" {
            &[Sabotage::NeverRefreshCerts]
        } else if path.starts_with("/v1/health/connect/") {
            &[Sabotage::ResolveEndpointsOnce]
        } else {
            &[]
        };
        repeat && once.iter().any(|s| self.has(*s))
    }

    /// Runs before every request: may park it forever, pace it, strip query parameters or the
    /// token. Returns the query and token to send.
    pub(crate) async fn before_request<'a, 'q, 't>(
        &self,
        path: &str,
        query: &'a [(&'q str, String)],
        token: Option<&'t str>,
    ) -> (Cow<'a, [(&'q str, String)]>, Option<&'t str>) {
        if self.parks(path, query) {
            tracing::debug!(path, "sabotage: request never sent");
            std::future::pending::<()>().await;
        }
        let tight = self.has(Sabotage::TightPolling);
        if tight {
            tokio::time::sleep(TIGHT_POLL).await;
        }
        let uncached = self.has(Sabotage::DropStateOnError);
        let query: Vec<_> = query
            .iter()
            .filter(|(k, _)| !(tight && matches!(*k, "index" | "wait" | "hash")))
            .filter(|(k, _)| !(uncached && *k == "cached"))
            .cloned()
            .collect();
        let first = self.status.sent.fetch_add(1, Ordering::Relaxed) == 0;
        let token = token.filter(|_| first || !self.has(Sabotage::MissingToken));
        (Cow::Owned(query), token)
    }

    /// Records how a request went (for `fail-closed-agent-down`, `drop-state-on-error` and
    /// `fail-open-agent-down`).
    pub(crate) fn after_request(&self, result: &Result<reqwest::Response, reqwest::Error>) {
        let (failing, unreachable) = match result {
            Ok(resp) => (resp.status().is_server_error(), false),
            Err(_) => (true, true),
        };
        self.status.failing.store(failing, Ordering::Relaxed);
        self.status
            .unreachable
            .store(unreachable, Ordering::Relaxed);
    }

    /// `stall-after-index-reset`: the index to send instead of `index` (never lower than one
    /// already sent for the same request).
    pub(crate) fn blocking_index(&self, path: &str, query: &[(&str, String)], index: u64) -> u64 {
        if !self.has(Sabotage::StallAfterIndexReset) {
            return index;
        }
        let key = query
            .iter()
            .fold(path.to_owned(), |k, (n, v)| format!("{k}&{n}={v}"));
        let mut highest = self
            .status
            .highest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let h = highest.entry(key).or_insert(0);
        *h = (*h).max(index);
        *h
    }

    /// Whether the default policy watch wakes up when the agent answers again after failing;
    /// not under `policy-on-timer`.
    pub(crate) fn policy_follows_recoveries(&self) -> bool {
        !self.has(Sabotage::PolicyOnTimer)
    }

    /// Whether an L4-only proxy asks for its chains with `OverrideProtocol = "tcp"`; not under
    /// `no-protocol-override` (it gets the chain compiled for the service's own protocol and
    /// follows its splitter at L4).
    pub(crate) fn l4_override(&self) -> bool {
        !self.has(Sabotage::NoProtocolOverride)
    }

    /// `anonymous-on-403`: whether a request refused with 403 is sent again without the token.
    pub(crate) fn anonymous_on_403(&self) -> bool {
        self.has(Sabotage::AnonymousOn403)
    }

    /// `fail-open-on-403`: a token that may not read the intentions is taken to mean "no
    /// restrictions": `* -> service` allow.
    pub(crate) fn intentions_forbidden(&self, service: &str) -> Option<Vec<Intention>> {
        self.has(Sabotage::FailOpenOn403)
            .then(|| vec![Intention::l4("*", service, true)])
    }

    /// `tight-polling`: no token bucket worth the name, agent/self every 50 ms too.
    pub(crate) fn timing(&self, timing: Timing) -> Timing {
        if !self.has(Sabotage::TightPolling) {
            return timing;
        }
        Timing {
            rate_per_second: 1000.0,
            policy_refresh: TIGHT_POLL,
            ..timing
        }
    }

    pub(crate) fn failing(&self) -> bool {
        self.status.failing.load(Ordering::Relaxed)
    }

    pub(crate) fn unreachable(&self) -> bool {
        self.status.unreachable.load(Ordering::Relaxed)
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AuthorizeResponse {
    authorized: bool,
    #[serde(default)]
    reason: String,
}

/// `POST /v1/agent/connect/authorize` for `target`, as Consul's built-in proxy does. Returns
/// `(authorized, reason)`.
pub(crate) async fn authorize(
    client: &AgentClient,
    target: &str,
    client_cert_uri: &str,
    client_cert_serial: &str,
    timeout: Duration,
) -> Result<(bool, String), AgentError> {
    let body = serde_json::json!({
        "Target": target,
        "ClientCertURI": client_cert_uri,
        "ClientCertSerial": client_cert_serial,
    });
    let resp = client
        .send(
            Method::POST,
            "/v1/agent/connect/authorize",
            &[],
            Some(&body),
            timeout,
        )
        .await?;
    let got: AuthorizeResponse = AgentClient::decode(resp).await?;
    Ok((got.authorized, got.reason))
}
