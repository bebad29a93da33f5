//! The default policy follows an agent that comes back with another policy at once, not on the
//! next refresh (60 s here): a fake agent serves `deny`, fails (5xx) while another watch reads,
//! then serves `allow`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::sync::mpsc;

use super::AgentHealth;
use crate::agent::watches::policy_watch;
use crate::agent::{AgentClient, Timing, Update};
use crate::metrics::Metrics;

const DENY: u8 = 0;
const DOWN: u8 = 1;
const ALLOW: u8 = 2;

/// A fake agent whose agent/self says `deny` or `allow`, or whose every answer is a 500.
async fn agent(phase: Arc<AtomicU8>) -> String {
    let app = Router::new().fallback(move |uri: Uri| {
        let phase = phase.load(Ordering::SeqCst);
        async move {
            if phase == DOWN {
                return (StatusCode::INTERNAL_SERVER_ERROR, "agent restarting").into_response();
            }
            if uri.path() != "/v1/agent/self" {
                let roots = json!({"ActiveRootID": "", "TrustDomain": "", "Roots": []});
                return ([("X-Consul-Index", "1")], roots.to_string()).into_response();
            }
            let policy = if phase == ALLOW { "allow" } else { "deny" };
            let body =
                json!({"DebugConfig": {"DefaultIntentionPolicy": policy, "ACLsEnabled": false}});
            Response::new(body.to_string().into())
        }
    });
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await });
    addr.to_string()
}

fn timing() -> Timing {
    Timing {
        wait: Duration::from_secs(1),
        backoff_base: Duration::from_millis(20),
        backoff_max: Duration::from_millis(100),
        rate_per_second: 50.0,
        policy_refresh: Duration::from_secs(60),
    }
}

async fn next_policy(rx: &mut mpsc::Receiver<Update>, within: Duration) -> Option<bool> {
    match tokio::time::timeout(within, rx.recv()).await {
        Ok(Some(Update::Policy(p))) => Some(p.allow),
        Ok(other) => panic!("unexpected update {other:?}"),
        Err(_) => None,
    }
}

/// Runs the policy watch through deny → failure seen by another read → allow; returns what
/// the watch reported within `within` after the agent answered again. (Also run by the
/// `policy-on-timer` sabotage's test.)
pub(crate) async fn after_restart(
    client: impl FnOnce(&str) -> AgentClient,
    within: Duration,
) -> Option<bool> {
    let phase = Arc::new(AtomicU8::new(DENY));
    let addr = agent(phase.clone()).await;
    let client = client(&addr);
    let (tx, mut rx) = mpsc::channel(8);
    let task = tokio::spawn(policy_watch(client.clone(), timing(), Metrics::new(), tx));
    let first = next_policy(&mut rx, Duration::from_secs(10)).await;
    assert_eq!(first, Some(false), "deny at start");
    // The agent fails while a blocking watch reads (the policy watch is asleep for 60 s)...
    phase.store(DOWN, Ordering::SeqCst);
    assert!(client.roots(0, Duration::from_secs(1)).await.is_err());
    // ...and comes back with another default policy; the next read of any watch answers.
    phase.store(ALLOW, Ordering::SeqCst);
    assert!(client.roots(0, Duration::from_secs(1)).await.is_ok());
    let got = next_policy(&mut rx, within).await;
    task.abort();
    got
}

#[tokio::test]
async fn the_default_policy_is_re_read_as_soon_as_the_agent_answers_again() {
    let client = |addr: &str| AgentClient::new(addr, None).unwrap();
    assert_eq!(
        after_restart(client, Duration::from_secs(10)).await,
        Some(true),
        "allow followed well before the 60 s refresh"
    );
}

#[test]
fn only_an_answer_after_a_failure_counts_as_a_recovery() {
    let h = AgentHealth::default();
    let mut rx = h.recoveries();
    h.observe(true);
    assert!(!rx.has_changed().unwrap());
    h.observe(false);
    h.observe(false);
    assert!(!rx.has_changed().unwrap());
    h.observe(true);
    assert_eq!(*rx.borrow_and_update(), 1);
    h.observe(true);
    assert!(!rx.has_changed().unwrap());
}
