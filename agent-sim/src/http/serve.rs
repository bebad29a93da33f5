//! Serving a server-backed read the way a client agent does: straight from the servers, or from
//! the agent cache (`X-Cache`), blocking on an index until something newer exists, with Consul's
//! spurious-wakeup suppression, and failing static while the servers are unreachable.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::error::ApiError;
use super::meta::{Body, BodyDigest, CacheMeta, QueryMeta, SharedBody};
use super::query::QueryOpts;
use crate::state::blocking::wait_for;
use crate::state::store::{State, Store, View};

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
    read(store, opts, spec, None, eval).await
}

/// `server_read` for a `suppress_unchanged` query with an `index_of` whose answer is a function
/// of `memo_key` and that index alone: the digests of its answers are remembered in the store
/// (`digest_memo`), so a query blocking on the index of an answer just given does not render it
/// again to digest it.
pub(crate) async fn server_read_memo<F, B>(
    store: &Store,
    opts: &QueryOpts,
    spec: ReadSpec,
    memo_key: &str,
    eval: F,
) -> Result<Answer, ApiError>
where
    F: Fn(&State) -> Result<(u64, B), ApiError>,
    B: Into<SharedBody>,
{
    let memo = (spec.suppress_unchanged && spec.index_of.is_some()).then_some(memo_key);
    read(store, opts, spec, memo, eval).await
}

async fn read<F, B>(
    store: &Store,
    opts: &QueryOpts,
    spec: ReadSpec,
    memo: Option<&str>,
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
    // The first answer's digest, not the answer: thousands of blocked queries each kept theirs.
    let mut first_body: Option<BodyDigest> = None;
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
        if let (Some(index_of), false) = (spec.index_of, force || abandoned) {
            let now = store.read(index_of);
            if first_body.is_none()
                && now <= opts.min_index
                && let Some(key) = memo
            {
                // Blocking starts at `now`, and the answer at `now` was rendered before: its
                // digest is all blocking needs.
                first_body = store.digests.get(key, abandon_at_start, now);
            }
            // Not newer: the evaluation could only keep blocking.
            if first_body.is_some() && now <= opts.min_index {
                return None;
            }
        }
        let (index, body) = match store.read(eval) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let digest = spec.suppress_unchanged.then(|| body.digest());
        if let (Some(key), Some(d), false) = (memo, digest, abandoned) {
            store.digests.put(key, abandon_at_start, index, d);
        }
        let newer = index > opts.min_index;
        let unchanged = first_body.is_some() && first_body == digest;
        if force || abandoned || (newer && !unchanged) {
            return Some(Ok((index, body)));
        }
        if first_body.is_none() {
            first_body = digest;
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
