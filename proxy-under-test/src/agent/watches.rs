//! One task per watch: a loop of blocking reads obeying the index rules, the rate limit and the
//! backoff, sending every changed result to the control plane. Errors never clear data: the
//! control plane keeps the last good value (fail static); after an error an index watch starts
//! over with a non-blocking read.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::blocking::{Backoff, RateLimiter, next_index};
use super::client::{AgentClient, Blocking};
use super::{AgentError, Timing, Update};
use crate::metrics::Metrics;

/// Runs an index-blocking watch until the receiver is gone. `fetch(index)` performs one read.
pub(crate) async fn index_watch<T, F, Fut>(
    name: &'static str,
    timing: Timing,
    metrics: Arc<Metrics>,
    tx: mpsc::Sender<Update>,
    wrap: impl Fn(T) -> Update,
    mut fetch: F,
) where
    F: FnMut(u64) -> Fut,
    Fut: Future<Output = Result<Blocking<T>, AgentError>>,
{
    let mut index = 0u64;
    let mut last_seen: Option<u64> = None;
    let mut backoff = Backoff::new(timing.backoff_base, timing.backoff_max);
    let mut limiter = RateLimiter::new(timing.rate_per_second, 2);
    loop {
        limiter.acquire().await;
        tracing::debug!(watch = name, index, "watch read");
        match fetch(index).await {
            Ok(got) => {
                metrics.agent_contact();
                if index > 0 {
                    // Only a blocking read that came back proves the agent healthy again; the
                    // non-blocking read after an error can be served from a stale cache.
                    backoff.reset();
                }
                let changed = last_seen != Some(got.index);
                if got.index < index {
                    tracing::info!(
                        watch = name,
                        old = index,
                        new = got.index,
                        "agent index went backwards; resetting"
                    );
                }
                index = next_index(index, got.index);
                last_seen = Some(got.index);
                if changed && tx.send(wrap(got.body)).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                metrics.watch_error(name);
                // Like Consul's watch plans: start over with a non-blocking read and forward its
                // result. An agent that restarted (or restored a snapshot) while the request was
                // failing may never reach our old index again, and a blocking read on it would
                // park the watch until `wait` expires.
                index = 0;
                last_seen = None;
                let delay = backoff.failure();
                if matches!(e, AgentError::Status { status: 403, .. }) {
                    // Without this data nothing it decides can be trusted to be current: the
                    // proxy keeps what it had (and, with nothing yet, never opens its listeners).
                    tracing::error!(watch = name, error = %e, retry_in = ?delay, "the proxy's ACL token may not read what this watch needs (403); failing closed: no new data until the token is granted it");
                } else {
                    tracing::warn!(watch = name, error = %e, retry_in = ?delay, failures = backoff.failures(), "agent watch failed; keeping last data");
                }
                if tx.is_closed() {
                    return;
                }
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// Polls a prepared query (Consul's execute endpoint does not block): one execute, then another
/// every `interval` (Consul's own proxies: 30 s, `agent/proxycfg/state.go`), sending each result.
/// Errors keep the last result and retry with the backoff.
pub(crate) async fn query_watch(
    client: AgentClient,
    key: super::assemble::QueryKey,
    interval: std::time::Duration,
    timing: Timing,
    metrics: Arc<Metrics>,
    tx: mpsc::Sender<Update>,
) {
    let mut backoff = Backoff::new(timing.backoff_base, timing.backoff_max);
    loop {
        let pause = match client.execute_query(&key.0, &key.1).await {
            Ok(got) => {
                metrics.agent_contact();
                backoff.reset();
                let update = Update::Query(key.clone(), Box::new(got.body));
                if tx.send(update).await.is_err() {
                    return;
                }
                interval
            }
            Err(e) => {
                metrics.watch_error("prepared_query");
                let delay = backoff.failure();
                tracing::warn!(watch = "prepared_query", query = %key.0, error = %e, retry_in = ?delay, "prepared query execute failed; keeping last endpoints");
                if tx.is_closed() {
                    return;
                }
                delay
            }
        };
        tokio::time::sleep(pause).await;
    }
}

/// Runs the hash-blocking watch of the proxy's own registration.
pub(crate) async fn service_watch(
    client: AgentClient,
    proxy_id: String,
    mut hash: String,
    timing: Timing,
    metrics: Arc<Metrics>,
    tx: mpsc::Sender<Update>,
) {
    let mut backoff = Backoff::new(timing.backoff_base, timing.backoff_max);
    let mut limiter = RateLimiter::new(timing.rate_per_second, 2);
    loop {
        limiter.acquire().await;
        match client.service(&proxy_id, Some(&hash), timing.wait).await {
            Ok((svc, new_hash)) => {
                metrics.agent_contact();
                backoff.reset();
                if new_hash != hash || new_hash.is_empty() {
                    hash = new_hash;
                    if tx.send(Update::Service(Box::new(svc))).await.is_err() {
                        return;
                    }
                }
            }
            Err(e) => {
                metrics.watch_error("service");
                let delay = backoff.failure();
                tracing::warn!(watch = "service", error = %e, retry_in = ?delay, "registration watch failed; keeping last configuration");
                if tx.is_closed() {
                    return;
                }
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// Re-reads the default policy from agent/self every `timing.policy_refresh`, and at once
/// whenever the agent answers again after any failed request (a restarted agent may come back
/// with another `default_intention_policy` or ACL default).
pub(crate) async fn policy_watch(
    client: AgentClient,
    timing: Timing,
    metrics: Arc<Metrics>,
    tx: mpsc::Sender<Update>,
) {
    let mut backoff = Backoff::new(timing.backoff_base, timing.backoff_max);
    let mut recoveries = client.recoveries();
    loop {
        // Recoveries before this read are covered by it.
        recoveries.borrow_and_update();
        let pause = match client.default_policy().await {
            Ok(p) => {
                metrics.agent_contact();
                backoff.reset();
                if tx.send(Update::Policy(p)).await.is_err() {
                    return;
                }
                timing.policy_refresh
            }
            Err(e) => {
                metrics.watch_error("agent_self");
                let delay = backoff.failure();
                tracing::warn!(watch = "agent_self", error = %e, retry_in = ?delay, "default policy read failed");
                if tx.is_closed() {
                    return;
                }
                delay
            }
        };
        if !client.hooks.policy_follows_recoveries() {
            tokio::time::sleep(pause).await;
            continue;
        }
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            changed = recoveries.changed() => {
                if changed.is_ok() {
                    tracing::info!(watch = "agent_self", "agent answers again; re-reading the default policy");
                } else {
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }
}

/// Transparent mode's two extra watches for `service`'s implicit upstreams: the intentions it
/// is the source of, and the catalog's service names.
pub(crate) fn implicit_watches(
    client: &AgentClient,
    service: &str,
    timing: Timing,
    metrics: &Arc<Metrics>,
    tx: &mpsc::Sender<Update>,
) -> [tokio::task::JoinHandle<()>; 2] {
    let (c1, c2, name) = (client.clone(), client.clone(), service.to_owned());
    let by_source = tokio::spawn(index_watch(
        "source_intentions",
        timing,
        metrics.clone(),
        tx.clone(),
        Update::SourceIntentions,
        move |i| {
            let (c, n) = (c1.clone(), name.clone());
            async move { c.source_intentions(&n, i, timing.wait).await }
        },
    ));
    let catalog = tokio::spawn(index_watch(
        "catalog_services",
        timing,
        metrics.clone(),
        tx.clone(),
        Update::CatalogServices,
        move |i| {
            let c = c2.clone();
            async move { c.catalog_services(i, timing.wait).await }
        },
    ));
    [by_source, catalog]
}
