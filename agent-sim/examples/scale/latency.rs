//! Latency phases: sequential requests on one keep-alive connection, each timed by the client:
//! authorize for random (source, destination) pairs, intention match by destination and by
//! source, and a trivial endpoint as the floor of what the client and HTTP stack cost.

use std::time::{Duration, Instant};

use anyhow::ensure;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::load::{send, service};

/// Percentiles of a set of samples.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Percentiles {
    pub(crate) n: usize,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    pub(crate) max: Duration,
}

impl Percentiles {
    pub(crate) fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let at = |q: f64| {
            let i = ((samples.len() as f64 * q).ceil() as usize).saturating_sub(1);
            samples.get(i).copied().unwrap_or_default()
        };
        Self {
            n: samples.len(),
            p50: at(0.50),
            p99: at(0.99),
            max: samples.last().copied().unwrap_or_default(),
        }
    }

    pub(crate) fn cells(&self) -> String {
        format!(
            "p50 {} / p99 {} / max {} (n = {})",
            ms(self.p50),
            ms(self.p99),
            ms(self.max),
            self.n
        )
    }
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// Authorize results: latencies, and how many were allowed.
pub(crate) struct Authorize {
    pub(crate) latency: Percentiles,
    pub(crate) allowed: usize,
}

/// `n` authorize calls for random pairs of the `services` services.
pub(crate) async fn authorize(
    http: &reqwest::Client,
    base: &str,
    services: usize,
    n: usize,
) -> anyhow::Result<Authorize> {
    let roots: Value = send(http.get(format!("{base}/v1/agent/connect/ca/roots")))
        .await?
        .json()
        .await?;
    let td = roots["TrustDomain"].as_str().unwrap_or_default().to_owned();
    ensure!(!td.is_empty(), "no trust domain in {roots}");
    let url = format!("{base}/v1/agent/connect/authorize");
    let mut rng = StdRng::seed_from_u64(12);
    let mut samples = Vec::with_capacity(n);
    let mut allowed = 0;
    for _ in 0..n {
        let (src, dst) = (rng.random_range(0..services), rng.random_range(0..services));
        let body = json!({
            "Target": service(dst),
            "ClientCertURI": format!("spiffe://{td}/ns/default/dc/dc1/svc/{}", service(src)),
        });
        let t = Instant::now();
        let v: Value = send(http.post(&url).json(&body)).await?.json().await?;
        samples.push(t.elapsed());
        let Some(ok) = v["Authorized"].as_bool() else {
            anyhow::bail!("no decision in {v}");
        };
        allowed += usize::from(ok);
    }
    Ok(Authorize {
        latency: Percentiles::of(samples),
        allowed,
    })
}

/// `n` match calls `by` destination or source for random services; fails unless every
/// answer names the service asked for.
pub(crate) async fn matches(
    http: &reqwest::Client,
    base: &str,
    by: &str,
    services: usize,
    n: usize,
) -> anyhow::Result<Percentiles> {
    let mut rng = StdRng::seed_from_u64(13);
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let name = service(rng.random_range(0..services));
        let url = format!("{base}/v1/connect/intentions/match?by={by}&name={name}");
        let t = Instant::now();
        let v: Value = send(http.get(&url)).await?.json().await?;
        samples.push(t.elapsed());
        ensure!(v.get(&name).is_some(), "no {name} in the match answer");
    }
    Ok(Percentiles::of(samples))
}

/// `n` calls of a constant endpoint: what the client and the HTTP stack cost.
pub(crate) async fn floor(
    http: &reqwest::Client,
    base: &str,
    n: usize,
) -> anyhow::Result<Percentiles> {
    let url = format!("{base}/v1/status/leader");
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        send(http.get(&url)).await?.bytes().await?;
        samples.push(t.elapsed());
    }
    Ok(Percentiles::of(samples))
}
