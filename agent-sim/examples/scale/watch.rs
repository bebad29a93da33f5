//! The blocked watchers: a mix of leaf-certificate, intention-match and health/connect blocking
//! queries, each re-armed with the index of its last answer; a wake-up measurement sends one
//! write and times the answers it causes (expected ones, and spurious ones).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::load::{send, service};

/// What a watcher blocks on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `GET /v1/agent/connect/ca/leaf/:service` (its own service).
    Leaf,
    /// `GET /v1/connect/intentions/match?by=destination&name=:service` (its own service).
    Match,
    /// `GET /v1/health/connect/:upstream` (one of a few upstreams, shared by many watchers).
    Health,
}

/// One watcher: its kind and the service it watches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Watcher {
    pub(crate) kind: Kind,
    pub(crate) service: usize,
}

impl Watcher {
    fn path(&self) -> String {
        let s = service(self.service);
        match self.kind {
            Kind::Leaf => format!("/v1/agent/connect/ca/leaf/{s}?"),
            Kind::Match => format!("/v1/connect/intentions/match?by=destination&name={s}&"),
            Kind::Health => format!("/v1/health/connect/{s}?"),
        }
    }
}

/// `n` watchers: thirds of each kind; leaf and match watchers on distinct services, health
/// watchers spread over `upstreams` upstream services.
pub(crate) fn plan(n: usize, services: usize, upstreams: usize) -> Vec<Watcher> {
    (0..n)
        .map(|i| {
            let (kind, k) = match i % 3 {
                0 => (Kind::Leaf, i / 3 % services),
                1 => (Kind::Match, i / 3 % services),
                _ => (Kind::Health, i / 3 % upstreams.max(1)),
            };
            Watcher { kind, service: k }
        })
        .collect()
}

/// One answer to a blocked query.
#[derive(Debug)]
struct Event {
    id: usize,
    at: Instant,
    /// The index did not move (an answer with nothing new).
    same_index: bool,
    error: Option<String>,
}

/// The running watchers.
pub(crate) struct Watchers {
    plan: Vec<Watcher>,
    rx: mpsc::UnboundedReceiver<Event>,
    in_flight: Arc<AtomicUsize>,
    tasks: JoinSet<()>,
    base: String,
    http: reqwest::Client,
}

/// What one write woke.
#[derive(Debug, Default)]
pub(crate) struct Wake {
    /// Watchers the write concerns.
    pub(crate) expected: usize,
    /// Of those, how many answered.
    pub(crate) answered: usize,
    /// Time from the write's start to the last expected answer.
    pub(crate) last: Option<Duration>,
    /// Answers from watchers the write does not concern, or with an unchanged index.
    pub(crate) spurious: usize,
    /// Errors the watchers saw.
    pub(crate) errors: usize,
}

/// The answer's index; the body is read to the end so the connection is reused.
async fn header_index(resp: reqwest::Response) -> anyhow::Result<u64> {
    let index = resp
        .headers()
        .get("x-consul-index")
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .context("no X-Consul-Index")?;
    resp.bytes().await?;
    Ok(index)
}

impl Watchers {
    /// Starts every watcher and returns once all are blocked in the sim (its request log shows
    /// them waiting), with how long that took.
    pub(crate) async fn start(
        http: &reqwest::Client,
        base: &str,
        plan: Vec<Watcher>,
    ) -> anyhow::Result<(Self, Duration)> {
        // The settle check counts unanswered blocking requests in the request log: start it empty.
        send(http.delete(format!("{base}/_sim/log"))).await?;
        let started = Instant::now();
        let (tx, rx) = mpsc::unbounded_channel();
        let in_flight = Arc::new(AtomicUsize::new(0));
        let mut tasks = JoinSet::new();
        for (id, w) in plan.iter().enumerate() {
            let url = format!("{base}{}", w.path());
            let (http, tx, in_flight) = (http.clone(), tx.clone(), in_flight.clone());
            tasks.spawn(async move {
                let report = |error: Option<String>, same_index: bool| {
                    let _ = tx.send(Event {
                        id,
                        at: Instant::now(),
                        same_index,
                        error,
                    });
                };
                let mut index = 0;
                loop {
                    let blocking = index > 0;
                    if blocking {
                        in_flight.fetch_add(1, Ordering::SeqCst);
                    }
                    let r = send(http.get(format!("{url}index={index}&wait=600s"))).await;
                    if blocking {
                        in_flight.fetch_sub(1, Ordering::SeqCst);
                    }
                    let new = match r {
                        Ok(resp) => header_index(resp).await,
                        Err(e) => Err(e),
                    };
                    match new {
                        Ok(new) => {
                            if blocking {
                                report(None, new <= index);
                            }
                            index = new;
                        }
                        Err(e) => {
                            report(Some(e.to_string()), false);
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                    }
                }
            });
        }
        let mut me = Self {
            plan,
            rx,
            in_flight,
            tasks,
            base: base.to_owned(),
            http: http.clone(),
        };
        me.settle(Duration::from_secs(180)).await?;
        Ok((me, started.elapsed()))
    }

    /// Waits until every watcher is blocked: the client has a request out for each, and the
    /// sim's request log shows as many blocking requests unanswered.
    async fn settle(&mut self, limit: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + limit;
        let n = self.plan.len();
        while self.in_flight.load(Ordering::SeqCst) < n {
            if let Ok(e) = self.rx.try_recv()
                && let Some(err) = e.error
            {
                bail!("watcher {}: {err}", e.id);
            }
            if Instant::now() > deadline {
                bail!(
                    "only {} of {n} watchers sent",
                    self.in_flight.load(Ordering::SeqCst)
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        loop {
            let log: Value = send(self.http.get(format!("{}/_sim/log", self.base)))
                .await?
                .json()
                .await?;
            let open = log["Entries"].as_array().map_or(0, |es| {
                es.iter()
                    .filter(|e| e["blocking"] == true && e["status"].is_null())
                    .count()
            });
            if open >= n {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("only {open} of {n} watchers blocked in the sim");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Sends `write`, then collects answers until every watcher `concerned` answered (or 30 s),
    /// and `quiet` longer to catch spurious ones; then waits until all are blocked again.
    pub(crate) async fn wake(
        &mut self,
        concerned: impl Fn(&Watcher) -> bool,
        quiet: Duration,
        write: impl Future<Output = anyhow::Result<()>>,
    ) -> anyhow::Result<Wake> {
        while self.rx.try_recv().is_ok() {}
        let expected: Vec<bool> = self.plan.iter().map(&concerned).collect();
        let mut out = Wake {
            expected: expected.iter().filter(|c| **c).count(),
            ..Wake::default()
        };
        let mut seen: HashMap<usize, Instant> = HashMap::new();
        let t0 = Instant::now();
        write.await?;
        let mut deadline = t0 + Duration::from_secs(30);
        let mut quiet_from = None;
        loop {
            if quiet_from.is_none() && out.answered == out.expected {
                quiet_from = Some(Instant::now());
                deadline = Instant::now() + quiet;
            }
            let Ok(Some(e)) = tokio::time::timeout_at(deadline.into(), self.rx.recv()).await else {
                break;
            };
            if e.error.is_some() {
                out.errors += 1;
                continue;
            }
            let first = !seen.contains_key(&e.id);
            if expected[e.id] && first && !e.same_index {
                out.answered += 1;
                seen.insert(e.id, e.at);
                out.last = out.last.max(Some(e.at - t0));
            } else {
                out.spurious += 1;
            }
        }
        self.settle(Duration::from_secs(60)).await?;
        Ok(out)
    }

    pub(crate) fn stop(mut self) {
        self.tasks.abort_all();
    }
}
