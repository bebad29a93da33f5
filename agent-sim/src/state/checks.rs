//! Running the local agent's health checks: TCP checks dial their target every interval, TTL
//! checks turn critical when not updated in time, alias checks mirror the aliased service.
//! A status is written only when it changes, so idle agents do not churn indexes.

use std::collections::HashMap;
use std::time::Duration;

use time::OffsetDateTime;
use tokio::time::Instant;

use crate::model::service::{self, HealthCheck};
use crate::state::control::Control;
use crate::state::store::{CheckUpdate, NodeKey};

const DEFAULT_TCP_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// When each TCP check last ran.
pub(crate) type Schedule = parking_lot::Mutex<HashMap<NodeKey, Instant>>;

/// Runs every check of the agent's node that is due.
pub(crate) async fn run_due(c: &Control, now: OffsetDateTime) {
    let node = c.store.cfg.node_name.clone();
    let (checks, touched) = c.store.read(|st| {
        let checks: Vec<HealthCheck> = st
            .checks
            .iter()
            .filter(|((n, _), _)| *n == node)
            .map(|(_, ch)| ch.clone())
            .collect();
        (checks, st.ttl_touched.clone())
    });
    let mut updates = Vec::new();
    for check in &checks {
        let key = (check.node.clone(), check.check_id.clone());
        if let Some(ttl) = check.ttl {
            let last = touched.get(&key).copied().unwrap_or(now);
            if now - last > ttl.to_std() && check.status != service::HEALTH_CRITICAL {
                updates.push(update(
                    check,
                    service::HEALTH_CRITICAL,
                    "TTL expired".into(),
                ));
            }
        } else if !check.tcp.is_empty() {
            if let Some(u) = run_tcp(c, check, &key).await {
                updates.push(u);
            }
        } else if !check.alias_service.is_empty() {
            let targets: Vec<&HealthCheck> = checks
                .iter()
                .filter(|o| o.service_id == check.alias_service && o.alias_service.is_empty())
                .collect();
            let status = if targets.is_empty() {
                service::HEALTH_PASSING
            } else {
                service::aggregated_status(&targets)
            };
            let output = if targets.is_empty() {
                "No checks found."
            } else {
                "All checks passing."
            };
            let output = if status == service::HEALTH_PASSING {
                output.to_owned()
            } else {
                format!("Aliased service is {status}")
            };
            if check.status != status || check.output != output {
                updates.push(update(check, status, output));
            }
        }
    }
    for u in updates {
        if let Err(e) = c.store.update_check(u) {
            tracing::debug!(error = ?e, "check update raced a deregistration");
        }
    }
}

async fn run_tcp(c: &Control, check: &HealthCheck, key: &NodeKey) -> Option<CheckUpdate> {
    let interval = check.definition.interval.to_std();
    let interval = if interval.is_zero() {
        DEFAULT_INTERVAL
    } else {
        interval
    };
    {
        let mut sched = c.checks.lock();
        let now = Instant::now();
        if sched
            .get(key)
            .is_some_and(|last| now.duration_since(*last) < interval)
        {
            return None;
        }
        sched.insert(key.clone(), now);
    }
    let timeout = check.definition.timeout.to_std();
    let timeout = if timeout.is_zero() {
        DEFAULT_TCP_TIMEOUT
    } else {
        timeout
    };
    let target = check.tcp.clone();
    let (status, output) =
        match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(&target)).await {
            Ok(Ok(_)) => (
                service::HEALTH_PASSING,
                format!("TCP connect {target}: Success"),
            ),
            Ok(Err(e)) => (
                service::HEALTH_CRITICAL,
                format!("dial tcp {target}: connect: {}", go_errno(&e)),
            ),
            Err(_) => (
                service::HEALTH_CRITICAL,
                format!("dial tcp {target}: i/o timeout"),
            ),
        };
    (check.status != status || check.output != output).then(|| update(check, status, output))
}

fn go_errno(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        _ => e.to_string(),
    }
}

fn update(check: &HealthCheck, status: &str, output: String) -> CheckUpdate {
    CheckUpdate {
        node: Some(check.node.clone()),
        check_id: check.check_id.clone(),
        status: status.into(),
        output: Some(output),
    }
}
