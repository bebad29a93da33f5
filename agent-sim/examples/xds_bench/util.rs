//! Shared helpers of the xDS benchmark: percentiles, the process's memory and CPU time, the fd
//! limit, and waiting on the sim's xDS log for a push and its ACK.

use std::collections::BTreeSet;
use std::time::Duration;

use agent_sim::xds::{XdsEvent, XdsLog, XdsLogEntry};
use anyhow::{Context, bail};
use tokio::time::Instant;

/// How long any single wait on the log may take before the run fails.
pub(crate) const WAIT: Duration = Duration::from_secs(120);

/// p50 / p99 / max of a sample, in milliseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Summary {
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
}

/// Nearest-rank percentiles of durations.
pub(crate) fn summarize(samples: &[Duration]) -> Summary {
    let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let rank = |p: f64| -> f64 {
        if ms.is_empty() {
            return f64::NAN;
        }
        let i = ((p * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1;
        ms[i]
    };
    Summary {
        p50: rank(0.50),
        p99: rank(0.99),
        max: ms.last().copied().unwrap_or(f64::NAN),
    }
}

/// A field of `/proc/self/status` in KiB (`VmRSS`, `VmHWM`).
pub(crate) fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// MiB from KiB.
pub(crate) fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// User + system CPU time of this process so far.
pub(crate) fn cpu_time() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_SELF).map_or(Duration::ZERO, |u| {
        let tv = |t: nix::sys::time::TimeVal| {
            Duration::from_secs(u64::try_from(t.tv_sec()).unwrap_or(0))
                + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap_or(0))
        };
        tv(u.user_time()) + tv(u.system_time())
    })
}

/// Raises the soft fd limit to the hard one (1,000 streams need 1,000 sockets per side).
pub(crate) fn raise_fd_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// The load average line, for the report.
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn is_response_of(e: &XdsLogEntry, stream: u64, t: &str) -> bool {
    e.stream == stream && matches!(&e.event, XdsEvent::Response { type_url, .. } if type_url == t)
}

/// Waits for the first response of `type_url` on `stream` after `after`, then for the client's
/// answer to it; returns when the push and the ACK were seen. A NACK fails the run.
pub(crate) async fn ack_of_next(
    log: &XdsLog,
    stream: u64,
    after: u64,
    type_url: &str,
) -> anyhow::Result<Seen> {
    let resp = log
        .wait_for(WAIT, |e| {
            e.seq > after && is_response_of(e, stream, type_url)
        })
        .await
        .with_context(|| format!("no {type_url} push on stream {stream}"))?;
    let pushed = Instant::now();
    let XdsEvent::Response { nonce, .. } = &resp.event else {
        bail!("not a response: {resp:?}");
    };
    let answer = log
        .wait_for(WAIT, |e| {
            e.seq > resp.seq
                && e.stream == stream
                && matches!(&e.event, XdsEvent::Ack { nonce: n, .. } | XdsEvent::Nack { nonce: n, .. } if n == nonce)
        })
        .await
        .with_context(|| format!("push {nonce} of {type_url} never answered"))?;
    let acked = Instant::now();
    if let XdsEvent::Nack { message, .. } = &answer.event {
        bail!("Envoy NACKed {type_url}: {message}");
    }
    Ok(Seen { pushed, acked })
}

/// When the sim's push (its log entry) and the client's ACK were seen.
pub(crate) struct Seen {
    pub(crate) pushed: Instant,
    pub(crate) acked: Instant,
}

/// What [`settle`] saw: when the first push was made and the last ACK arrived, and which types
/// were pushed.
pub(crate) struct Settled {
    pub(crate) first_push: Instant,
    pub(crate) last_ack: Instant,
    pub(crate) types: BTreeSet<String>,
}

/// Follows `stream` after `after` until at least one push was made, every push is ACKed, and no
/// new push comes for `quiet`: the time of the ACK of the last push a change caused.
pub(crate) async fn settle(
    log: &XdsLog,
    stream: u64,
    after: u64,
    quiet: Duration,
) -> anyhow::Result<Settled> {
    let mut cursor = after;
    let mut open: BTreeSet<String> = BTreeSet::new();
    let mut types = BTreeSet::new();
    let mut last_ack = None;
    let mut first_push = None;
    let deadline = Instant::now() + WAIT;
    loop {
        let wait = match last_ack {
            Some(_) if open.is_empty() => quiet,
            _ => deadline.saturating_duration_since(Instant::now()),
        };
        let Some(e) = log
            .wait_for(wait, |e| e.seq > cursor && e.stream == stream)
            .await
        else {
            match last_ack {
                Some(at) if open.is_empty() => {
                    return Ok(Settled {
                        first_push: first_push.unwrap_or(at),
                        last_ack: at,
                        types,
                    });
                }
                _ => bail!("stream {stream} did not settle: {open:?} unanswered"),
            }
        };
        cursor = e.seq;
        match e.event {
            XdsEvent::Response {
                type_url, nonce, ..
            } => {
                open.insert(nonce);
                types.insert(type_url);
                first_push.get_or_insert_with(Instant::now);
            }
            XdsEvent::Ack { nonce, .. } if open.remove(&nonce) => {
                last_ack = Some(Instant::now());
            }
            XdsEvent::Nack {
                type_url, message, ..
            } => bail!("NACK of {type_url}: {message}"),
            XdsEvent::Closed { reason, .. } => bail!("stream {stream} closed: {reason}"),
            _ => {}
        }
    }
}
