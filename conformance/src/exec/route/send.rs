//! How `spread` and `burst` checks send their requests: many at once, over one HTTP/2
//! connection or several HTTP/1.1 ones, answers kept in request order.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use scenarios::AppProtocol;

use crate::probe::{L7Conn, L7Request, Reply};

/// Sends every request with `concurrency` in flight: over one HTTP/2 connection, or over that
/// many HTTP/1.1 connections. Answers come back in request order.
pub(super) async fn send_all(
    to: &crate::proxy::ListenAddr,
    protocol: AppProtocol,
    concurrency: u32,
    reqs: &[(Option<String>, L7Request)],
) -> Result<Vec<Result<Reply, String>>, String> {
    let reqs: Arc<Vec<L7Request>> = Arc::new(reqs.iter().map(|(_, r)| r.clone()).collect());
    let next = Arc::new(AtomicU32::new(0));
    let shared = if protocol == AppProtocol::Http1 {
        None
    } else {
        Some(L7Conn::open(to, protocol).await?)
    };
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (reqs, next) = (reqs.clone(), next.clone());
        let mut own = match &shared {
            Some(_) => None,
            None => Some(L7Conn::open(to, protocol).await?),
        };
        let handle = shared.as_ref().and_then(L7Conn::stream_handle);
        workers.spawn(async move {
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst) as usize;
                let Some(req) = reqs.get(i) else { break };
                let r = match (&mut own, &handle) {
                    (Some(c), _) => c.send(req).await,
                    (None, Some(h)) => h.clone().send(req).await,
                    (None, None) => Err("no connection".to_owned()),
                };
                out.push((i, r));
            }
            out
        });
    }
    let mut all: Vec<(usize, Result<Reply, String>)> = Vec::new();
    while let Some(r) = workers.join_next().await {
        all.extend(r.map_err(|e| format!("a sender failed: {e}"))?);
    }
    drop(shared);
    all.sort_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, r)| r).collect())
}
