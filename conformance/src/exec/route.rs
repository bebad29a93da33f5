//! `l7-traffic`: the `instance` and `open-upstream` steps, and what `request`, `spread` and
//! `burst` checks observe: requests from the app through an upstream's local listener, judged
//! by the answers the app got and the request log of the HTTP instances (which instance, what
//! it received, how many attempts).
//!
//! A `spread` check's shares are judged with a binomial bound: with `n` requests and an expected
//! share `p`, an instance's count must lie within `n·p ± (Z·√(n·p·(1−p)) + 0.5)`, `Z = 5` (a
//! proxy honouring the shares falls outside with probability below 10⁻⁶ per count, so `--repeat
//! 20` over the profile stays green, while 90/10 read as 50/50 over 200 requests misses by 19σ).

pub(super) mod expected;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use reports::EventKind;
use scenarios::{Answer, AppProtocol, BurstCheck, RequestCheck, SpreadCheck};

use super::Exec;
use super::wait::Observation;
use crate::error::Error;
use crate::probe::{self, L7Conn, L7Request, Reply};
use crate::world::{REQUEST_HEADER, SERVED_BY};

/// The binomial bound's width in standard deviations.
const Z: f64 = 5.0;

impl Exec<'_> {
    /// `instance`: from now on the instance answers as `answer` says.
    pub(super) fn set_answer(&mut self, instance: &str, answer: &Answer) -> Result<(), Error> {
        match self.world.instances.get(instance) {
            Some(i) => i.set_answer(answer),
            None => return Err(Error::Step(format!("no instance {instance:?}"))),
        }
        self.event(EventKind::Step, format!("{instance} answers {answer:?}"));
        Ok(())
    }

    /// `open-upstream`: a kept connection from the app to the upstream's listener.
    pub(super) async fn open_upstream(
        &mut self,
        conn: &str,
        upstream: &str,
        protocol: AppProtocol,
    ) -> Result<(), Error> {
        let opened = match self.world.upstream_addr(upstream) {
            Some(to) => L7Conn::open(&to, protocol).await,
            None => Err(format!("no upstream {upstream}")),
        };
        let label = format!("open {conn} to the {upstream} listener ({protocol:?})");
        match opened {
            Ok(c) => {
                self.upstream_conns.insert(conn.to_owned(), (c, protocol));
                self.event(EventKind::Step, label).ok = Some(true);
            }
            Err(e) => {
                let ev = self.event(EventKind::Step, label);
                ev.detail = Some(format!("not established: {e}"));
                ev.ok = Some(false);
            }
        }
        Ok(())
    }

    pub(super) async fn observe_request(&mut self, c: &RequestCheck) -> Observation {
        let id = probe::token();
        let protocol = match &c.conn {
            Some(name) => match self.upstream_conns.get(name) {
                Some((_, p)) => *p,
                None => return Observation::new(false, format!("{name} was never established")),
            },
            None => c.protocol,
        };
        let req = request(
            c.method.as_deref(),
            &c.path,
            &c.headers,
            protocol,
            Some(&id),
        );
        let reply = match &c.conn {
            Some(name) => match self.upstream_conns.get_mut(name) {
                Some((conn, _)) => conn.send(&req).await,
                None => Err(format!("{name} was never established")),
            },
            None => match self.world.upstream_addr(&c.upstream) {
                None => Err("no such upstream".to_owned()),
                Some(to) => match L7Conn::open(&to, protocol).await {
                    Ok(mut conn) => conn.send(&req).await,
                    Err(e) => Err(e),
                },
            },
        };
        let reply = match reply {
            Ok(r) => r,
            Err(e) => return Observation::new(false, e),
        };
        let attempts = self.world.instances.log().attempts(&id);
        let served = reply.headers.get(SERVED_BY).cloned();
        let mut problems = Vec::new();
        let mut text = format!("HTTP {}", reply.status);
        if let Some(g) = reply.grpc_status {
            text.push_str(&format!(" grpc-status {g}"));
        }
        text.push_str(&format!(
            " from {} in {} ms after {} attempt(s)",
            served.as_deref().unwrap_or("the proxy"),
            reply.elapsed.as_millis(),
            attempts.len()
        ));
        if reply.status != c.status {
            problems.push(format!("status {}, not {}", reply.status, c.status));
        }
        let want_grpc = c
            .grpc_status
            .or((protocol == AppProtocol::Grpc && c.status == 200).then_some(0));
        if let Some(g) = want_grpc
            && reply.grpc_status != Some(g)
        {
            problems.push(format!("grpc-status {:?}, not {g}", reply.grpc_status));
        }
        match (&c.reach, &served) {
            (Some(r), None) if !r.is_empty() => {
                problems.push(format!("no instance of {r:?} answered"));
            }
            (Some(r), Some(s)) if r.is_empty() => {
                problems.push(format!("{s} answered, not the proxy"));
            }
            (Some(r), Some(s)) if !r.contains(s) => {
                problems.push(format!("{s} is not one of {r:?}"));
            }
            _ => {}
        }
        if let Some(n) = c.attempts
            && attempts.len() != n as usize
        {
            let by: Vec<&str> = attempts.iter().map(|a| a.instance.as_str()).collect();
            problems.push(format!("{} attempt(s) ({by:?}), not {n}", attempts.len()));
        }
        // What the answering instance received (its last attempt).
        let got = attempts
            .iter()
            .rev()
            .find(|a| Some(&a.instance) == served.as_ref())
            .or(attempts.last());
        let wants_received = c.received_path.is_some()
            || !c.received_headers.is_empty()
            || !c.received_without.is_empty();
        match got {
            None if wants_received => problems.push("no instance received the request".into()),
            None => {}
            Some(got) => {
                if let Some(p) = &c.received_path
                    && &got.path != p
                {
                    problems.push(format!("{} received {}, not {p}", got.instance, got.path));
                }
                problems.extend(headers_problems(
                    "received",
                    &got.headers,
                    &c.received_headers,
                    &c.received_without,
                ));
            }
        }
        problems.extend(headers_problems(
            "answer has",
            &reply.headers,
            &c.response_headers,
            &c.response_without,
        ));
        let ms = u64::try_from(reply.elapsed.as_millis()).unwrap_or(u64::MAX);
        if let Some(max) = c.max_ms
            && ms > max
        {
            problems.push(format!("answered after {ms} ms, more than {max}"));
        }
        if let Some(min) = c.min_ms
            && ms < min
        {
            problems.push(format!("answered after {ms} ms, less than {min}"));
        }
        judge(text, &problems)
    }

    pub(super) async fn observe_spread(&mut self, c: &SpreadCheck) -> Observation {
        let Some(to) = self.world.upstream_addr(&c.upstream) else {
            return Observation::new(false, "no such upstream");
        };
        let keys = c.keys.unwrap_or(16);
        let seed = self.world.seed;
        let reqs: Vec<(Option<String>, L7Request)> = (0..c.requests)
            .map(|i| {
                let key = c
                    .vary_header
                    .as_ref()
                    .map(|_| format!("key-{seed:x}-{}", i % keys));
                let mut headers = c.headers.clone();
                if let (Some(h), Some(k)) = (&c.vary_header, &key) {
                    headers.insert(h.clone(), k.clone());
                }
                (
                    key,
                    request(c.method.as_deref(), &c.path, &headers, c.protocol, None),
                )
            })
            .collect();
        let replies = match send_all(&to, c.protocol, c.concurrency.unwrap_or(1), &reqs).await {
            Ok(r) => r,
            Err(e) => return Observation::new(false, e),
        };
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        let mut by_key: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        let mut failed = Vec::new();
        for (i, r) in replies.iter().enumerate() {
            match r {
                Ok(r) if r.status == 200 => {
                    let who = r
                        .headers
                        .get(SERVED_BY)
                        .cloned()
                        .unwrap_or_else(|| "?".into());
                    *counts.entry(who.clone()).or_default() += 1;
                    if let Some(k) = &reqs[i].0 {
                        by_key.entry(k.as_str()).or_default().insert(who);
                    }
                }
                Ok(r) => failed.push(format!("#{}: HTTP {}", i + 1, r.status)),
                Err(e) => failed.push(format!("#{}: {e}", i + 1)),
            }
        }
        let text = format!("{} requests: {counts:?}", c.requests);
        let mut problems = Vec::new();
        if !failed.is_empty() {
            let shown: Vec<&String> = failed.iter().take(3).collect();
            problems.push(format!("{} not answered 200 ({shown:?}...)", failed.len()));
        }
        let n = f64::from(c.requests);
        if !c.expect.is_empty() {
            let ids: BTreeSet<&String> = c.expect.keys().chain(counts.keys()).collect();
            for id in ids {
                let p = c.expect.get(id).copied().unwrap_or(0.0) / 100.0;
                let k = f64::from(counts.get(id).copied().unwrap_or(0));
                let slack = Z * (n * p * (1.0 - p)).sqrt() + 0.5;
                if (k - n * p).abs() > slack {
                    problems.push(format!(
                        "{id}: {k} of {n}, expected {:.1} ± {slack:.1}",
                        n * p
                    ));
                }
            }
        }
        for (id, min) in &c.at_least {
            let k = f64::from(counts.get(id).copied().unwrap_or(0));
            if k * 100.0 / n < *min {
                problems.push(format!("{id}: {k} of {n}, less than {min}%"));
            }
        }
        if c.sticky {
            let moved: Vec<&&str> = by_key
                .iter()
                .filter(|(_, s)| s.len() > 1)
                .map(|(k, _)| k)
                .collect();
            if !moved.is_empty() {
                problems.push(format!(
                    "{} key(s) reached several instances, e.g. {:?}",
                    moved.len(),
                    by_key.get(*moved[0])
                ));
            }
            let used: BTreeSet<&String> = by_key.values().flatten().collect();
            if used.len() < 2 {
                problems.push(format!("{keys} keys all reached {used:?} (no spread)"));
            }
        }
        judge(text, &problems)
    }

    pub(super) async fn observe_burst(&mut self, c: &BurstCheck) -> Observation {
        let Some(to) = self.world.upstream_addr(&c.upstream) else {
            return Observation::new(false, "no such upstream");
        };
        let reqs: Vec<(Option<String>, L7Request)> = (0..c.requests)
            .map(|_| {
                (
                    None,
                    request(None, &c.path, &BTreeMap::new(), AppProtocol::H2c, None),
                )
            })
            .collect();
        let replies = match send_all(&to, AppProtocol::H2c, c.requests, &reqs).await {
            Ok(r) => r,
            Err(e) => return Observation::new(false, e),
        };
        let statuses: Vec<String> = replies
            .iter()
            .map(|r| {
                r.as_ref()
                    .map_or_else(|e| e.clone(), |r| r.status.to_string())
            })
            .collect();
        let ok = replies
            .iter()
            .filter(|r| matches!(r, Ok(r) if r.status == 200))
            .count();
        let rejected = replies
            .iter()
            .filter(|r| matches!(r, Ok(r) if r.status == c.rejected))
            .count();
        let text = format!("statuses {statuses:?}");
        let mut problems = Vec::new();
        if ok != c.ok as usize || ok + rejected != replies.len() {
            problems.push(format!(
                "{ok} answered 200 and {rejected} {}, not {} and {}",
                c.rejected,
                c.ok,
                c.requests - c.ok
            ));
        }
        judge(text, &problems)
    }
}

fn judge(text: String, problems: &[String]) -> Observation {
    if problems.is_empty() {
        Observation::new(true, text)
    } else {
        Observation::new(false, format!("{text} [{}]", problems.join("; ")))
    }
}

fn request(
    method: Option<&str>,
    path: &str,
    headers: &BTreeMap<String, String>,
    protocol: AppProtocol,
    id: Option<&str>,
) -> L7Request {
    let grpc = protocol == AppProtocol::Grpc;
    let default = if grpc { "POST" } else { "GET" };
    let mut h: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(id) = id {
        h.push((REQUEST_HEADER.to_owned(), id.to_owned()));
    }
    L7Request {
        method: method.unwrap_or(default).to_owned(),
        path: path.to_owned(),
        headers: h,
        grpc,
    }
}

fn headers_problems(
    what: &str,
    got: &BTreeMap<String, String>,
    want: &BTreeMap<String, String>,
    without: &[String],
) -> Vec<String> {
    let mut p = Vec::new();
    for (k, v) in want {
        match got.get(&k.to_ascii_lowercase()) {
            Some(g) if g == v => {}
            Some(g) => p.push(format!("{what} {k}: {g}, not {v}")),
            None => p.push(format!("{what} no {k}")),
        }
    }
    for k in without {
        if let Some(g) = got.get(&k.to_ascii_lowercase()) {
            p.push(format!("{what} {k}: {g}"));
        }
    }
    p
}

/// Sends every request with `concurrency` in flight: over one HTTP/2 connection, or over that
/// many HTTP/1.1 connections. Answers come back in request order.
async fn send_all(
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
