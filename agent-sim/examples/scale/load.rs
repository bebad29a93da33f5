//! The write phases: registering services with sidecars (sequential, then concurrent), and
//! writing the intentions (service-intentions config entries, then the legacy intention API).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use serde_json::{Value, json};

/// Name of service `i`.
pub(crate) fn service(i: usize) -> String {
    format!("svc-{i:05}")
}

/// How many sources the `*` destination entry has.
pub(crate) const STAR_SOURCES: usize = 50;

/// Runs `job(i)` for `i in range` on `workers` concurrent workers; returns the elapsed time.
pub(crate) async fn run_jobs<F, Fut>(
    range: std::ops::Range<usize>,
    workers: usize,
    job: F,
) -> anyhow::Result<Duration>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send,
{
    let start = Instant::now();
    let next = Arc::new(AtomicUsize::new(range.start));
    let job = Arc::new(job);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers.max(1) {
        let (next, job, end) = (next.clone(), job.clone(), range.end);
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= end {
                    return Ok::<_, anyhow::Error>(());
                }
                job(i).await?;
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    Ok(start.elapsed())
}

/// Sends one request and fails unless it answers 200.
pub(crate) async fn send(req: reqwest::RequestBuilder) -> anyhow::Result<reqwest::Response> {
    let resp = req.send().await?;
    let status = resp.status();
    if !status.is_success() {
        let text = resp.text().await.unwrap_or_default();
        anyhow::bail!("HTTP {status}: {text}");
    }
    Ok(resp)
}

fn registration(i: usize) -> Value {
    json!({
        "Name": service(i),
        "ID": service(i),
        "Port": 8080,
        "Connect": {"SidecarService": {"Port": 20000 + (i % 40000)}},
    })
}

/// Registers `n` services with sidecars: the first half one at a time, the second half on
/// `workers` connections. Returns (sequential, concurrent) registrations per second.
pub(crate) async fn register(
    http: &reqwest::Client,
    base: &str,
    n: usize,
    workers: usize,
) -> anyhow::Result<(f64, f64)> {
    let url = format!("{base}/v1/agent/service/register");
    let half = n / 2;
    let job = |http: reqwest::Client, url: String| {
        move |i| {
            let req = http.put(&url).json(&registration(i));
            async move { send(req).await.map(drop) }
        }
    };
    let seq = run_jobs(0..half, 1, job(http.clone(), url.clone())).await?;
    let conc = run_jobs(half..n, workers, job(http.clone(), url)).await?;
    Ok((rate(half, seq), rate(n - half, conc)))
}

/// The sources of destination `d`'s entry: `per` of them, exact names of other services, and a
/// `*` (deny) source on every tenth destination. Actions alternate.
pub(crate) fn sources(d: usize, per: usize, services: usize) -> Vec<Value> {
    let mut out: Vec<Value> = (0..per)
        .map(|j| {
            let src = (d + 1 + j * 7) % services;
            let action = if (d + j).is_multiple_of(2) {
                "allow"
            } else {
                "deny"
            };
            json!({"Name": service(src), "Action": action})
        })
        .collect();
    // Sources must be distinct; with few services the stride can repeat a name.
    out.sort_by_key(|s| s["Name"].as_str().map(str::to_owned));
    out.dedup_by_key(|s| s["Name"].as_str().map(str::to_owned));
    if d.is_multiple_of(10) {
        out.push(json!({"Name": "*", "Action": "deny"}));
    }
    out
}

/// The `*` destination's sources (`extra` adds one more, for the watchers' wake-up write).
pub(crate) fn star_sources(services: usize, extra: Option<&str>) -> Vec<Value> {
    let mut out: Vec<Value> = (0..STAR_SOURCES.min(services))
        .map(|j| json!({"Name": service(j * 97 % services), "Action": "allow"}))
        .collect();
    out.sort_by_key(|s| s["Name"].as_str().map(str::to_owned));
    out.dedup_by_key(|s| s["Name"].as_str().map(str::to_owned));
    if let Some(name) = extra {
        out.push(json!({"Name": name, "Action": "allow"}));
    }
    out
}

/// Write counts and rates.
pub(crate) struct IntentionWrites {
    pub(crate) entries: usize,
    pub(crate) intentions: usize,
    pub(crate) entries_per_s: f64,
    pub(crate) intentions_per_s: f64,
    pub(crate) legacy: usize,
    pub(crate) legacy_per_s: f64,
}

/// Writes about `total` intentions as one service-intentions entry per service plus a `*`
/// destination entry (on `workers` connections), then `legacy` more through the legacy API (onto
/// destinations of their own).
pub(crate) async fn intentions(
    http: &reqwest::Client,
    base: &str,
    services: usize,
    total: usize,
    legacy: usize,
    workers: usize,
) -> anyhow::Result<IntentionWrites> {
    // Every tenth entry also has a `*` source.
    let per = (total.saturating_sub(STAR_SOURCES + services / 10) as f64 / services.max(1) as f64)
        .round()
        .max(1.0) as usize;
    let count: usize = (0..services)
        .map(|d| sources(d, per, services).len())
        .sum::<usize>()
        + star_sources(services, None).len();
    let url = format!("{base}/v1/config");
    let (h, u) = (http.clone(), url.clone());
    let elapsed = run_jobs(0..services + 1, workers, move |d| {
        let entry = if d == services {
            json!({"Kind": "service-intentions", "Name": "*",
                   "Sources": star_sources(services, None)})
        } else {
            json!({"Kind": "service-intentions", "Name": service(d),
                   "Sources": sources(d, per, services)})
        };
        let req = h.put(&u).json(&entry);
        async move { send(req).await.map(drop) }
    })
    .await?;
    let url = format!("{base}/v1/connect/intentions");
    let h = http.clone();
    let legacy_elapsed = run_jobs(0..legacy, workers, move |i| {
        let body = json!({
            "SourceName": format!("legacy-src-{i:05}"),
            // Destinations of their own: Consul refuses legacy writes to an entry written as a
            // config entry.
            "DestinationName": format!("legacy-dst-{:03}", i % 1000),
            "Action": "allow",
        });
        let req = h.post(&url).json(&body);
        async move {
            let v: Value = send(req).await?.json().await?;
            ensure!(v.get("ID").is_some(), "no ID in {v}");
            Ok(())
        }
    })
    .await
    .context("legacy intentions")?;
    Ok(IntentionWrites {
        entries: services + 1,
        intentions: count,
        entries_per_s: rate(services + 1, elapsed),
        intentions_per_s: rate(count, elapsed),
        legacy,
        legacy_per_s: rate(legacy, legacy_elapsed),
    })
}

pub(crate) fn rate(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64().max(1e-9)
}
