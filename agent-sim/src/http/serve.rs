//! Serving a server-backed read the way a client agent does: straight from the servers, or from
//! the agent cache (`X-Cache`), blocking on an index until something newer exists, with Consul's
//! spurious-wakeup suppression, and failing static while the servers are unreachable.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::error::ApiError;
use super::meta::{Body, CacheMeta, QueryMeta, SharedBody};
use super::query::QueryOpts;
use crate::blocking::wait_for;
use crate::store::{State, Store, View};

/// How long a blocking request waits before it learns that the cache could not refresh while the
/// servers are unreachable (the real agent's cache retries with backoff before failing).
const OUTAGE_ERROR_DELAY: Duration = Duration::from_secs(2);

/// How a query is served.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReadSpec {
    /// The agent-cache key when the agent answers from its cache (`?cached`, or always for roots),
    /// `None` for a direct RPC.
    pub(crate) cache_key: Option<String>,
    /// Keep blocking while the result is unchanged (intention match, discovery chain).
    pub(crate) suppress_unchanged: bool,
    /// A cheap way to read just the result's index (it must equal the index the evaluation
    /// returns), so a blocked query renders its body only when it may return (the roots
    /// endpoint with thousands of watchers; with `suppress_unchanged`, once the first body is
    /// kept for the comparison).
    pub(crate) index_of: Option<fn(&State) -> u64>,
}

/// A read's answer.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) body: Arc<Body>,
    pub(crate) meta: QueryMeta,
    pub(crate) cache: Option<CacheMeta>,
}

/// Evaluates `eval` (returning the result index and body) per `spec` and the blocking options.
pub(crate) async fn server_read<F, B>(
    store: &Store,
    opts: &QueryOpts,
    spec: ReadSpec,
    eval: F,
) -> Result<Answer, ApiError>
where
    F: Fn(&State) -> Result<(u64, B), ApiError>,
    B: Into<SharedBody>,
{
    let eval = |st: &State| eval(st).map(|(index, body)| (index, body.into().0));
    let cached = spec.cache_key.is_some();
    let key = spec.cache_key.clone().unwrap_or_default();
    let view = store
        .view(&key, cached)
        .map_err(|()| ApiError::no_servers())?;
    let hit = match view {
        View::Live { hit } => hit,
        View::Cached { state, age_secs } => {
            let (index, body) = eval(&state)?;
            if opts.min_index > 0 && opts.min_index >= index {
                // A blocked reader waits on a cache refresh, and the refresh fails.
                tokio::time::sleep(OUTAGE_ERROR_DELAY).await;
                return Err(ApiError::no_servers());
            }
            let cache = Some(CacheMeta::Hit { age_secs });
            return Ok(Answer {
                body,
                meta: QueryMeta::leader(index),
                cache,
            });
        }
    };
    let cache = cached.then_some(if hit {
        CacheMeta::Hit { age_secs: 0 }
    } else {
        CacheMeta::Miss
    });
    if opts.min_index == 0 {
        let (index, body) = store.read(eval)?;
        return Ok(Answer {
            body,
            meta: QueryMeta::leader(index),
            cache,
        });
    }
    let timeout = store.with_rng(|r| store.cfg.blocking.server_timeout(opts.wait, r));
    let deadline = Instant::now() + timeout;
    let mut changes = store.subscribe();
    let abandon = store.subscribe_abandon();
    let abandon_at_start = *abandon.borrow();
    let mut first_body: Option<Arc<Body>> = None;
    let result = wait_for(&mut changes, deadline, |force| {
        let abandoned = *abandon.borrow() != abandon_at_start;
        if abandoned && store.servers_down() {
            return Some(Err(ApiError::no_servers()));
        }
        if let (Some(index_of), false) = (spec.index_of, spec.suppress_unchanged) {
            let newer = store.read(index_of) > opts.min_index;
            if !(force || abandoned || newer) {
                return None;
            }
            return Some(store.read(eval));
        }
        if let (Some(index_of), Some(_), false) = (spec.index_of, &first_body, force || abandoned) {
            // Not newer: the evaluation could only keep blocking.
            if store.read(index_of) <= opts.min_index {
                return None;
            }
        }
        let (index, body) = match store.read(eval) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let newer = index > opts.min_index;
        let unchanged = spec.suppress_unchanged && first_body.as_ref().is_some_and(|b| *b == body);
        if force || abandoned || (newer && !unchanged) {
            return Some(Ok((index, body)));
        }
        if first_body.is_none() {
            first_body = Some(body);
        }
        None
    })
    .await;
    let (index, body) = result?;
    Ok(Answer {
        body,
        meta: QueryMeta::leader(index),
        cache,
    })
}
