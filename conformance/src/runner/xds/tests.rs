//! Tests of the xDS judgement with hand-written logs, and of waiting for answers on a live log.

use std::time::Duration;

use agent_sim::xds::types::{CLUSTER, LISTENER};

use super::*;

const TOKEN: &str = "proxy-token";

fn opened(token: Option<&str>) -> XdsEvent {
    XdsEvent::Opened {
        node_id: "db-sidecar-proxy".into(),
        token: token.map(str::to_owned),
        peer: Some("127.0.0.1:40000".into()),
    }
}

fn response(type_url: &str, nonce: &str) -> XdsEvent {
    XdsEvent::Response {
        type_url: type_url.into(),
        nonce: nonce.into(),
        resources: vec![("public_listener:127.0.0.1:21000".into(), "abc".into())],
        removed: vec![],
    }
}

fn ack(type_url: &str, nonce: &str) -> XdsEvent {
    XdsEvent::Ack {
        type_url: type_url.into(),
        nonce: nonce.into(),
    }
}

fn log(events: Vec<(u64, XdsEvent)>) -> Vec<XdsLogEntry> {
    events
        .into_iter()
        .zip(1..)
        .map(|((stream, event), seq)| XdsLogEntry {
            seq,
            at_ms: seq * 10,
            stream,
            event,
        })
        .collect()
}

fn verdicts(j: &Judgement) -> Vec<(&str, Verdict)> {
    j.checks
        .iter()
        .map(|c| (c.name.as_str(), c.verdict))
        .collect()
}

#[test]
fn all_acked_with_the_token_passes() {
    let entries = log(vec![
        (1, opened(Some(TOKEN))),
        (1, response(CLUSTER, "1")),
        (1, ack(CLUSTER, "1")),
        (1, response(LISTENER, "2")),
        (1, ack(LISTENER, "2")),
    ]);
    let j = judge(&entries, TOKEN, 500);
    assert!(j.error.is_none(), "{:?}", j.error);
    assert_eq!(
        verdicts(&j),
        [(ACKED_CHECK, Verdict::Pass), (TOKEN_CHECK, Verdict::Pass)]
    );
    assert_eq!(j.checks[0].observed, "2 responses, all ACKed");
    assert_eq!(j.checks[1].at_ms, Some(500));
}

#[test]
fn a_nack_is_a_harness_error_carrying_envoys_message() {
    let entries = log(vec![
        (1, opened(Some(TOKEN))),
        (1, response(LISTENER, "7")),
        (
            1,
            XdsEvent::Nack {
                type_url: LISTENER.into(),
                nonce: "7".into(),
                code: 13,
                message: "Proto constraint validation failed: stat_prefix: length < 1".into(),
            },
        ),
    ]);
    let j = judge(&entries, TOKEN, 0);
    assert_eq!(j.checks[0].verdict, Verdict::Error);
    let err = j.error.expect("a NACK must be an error");
    assert_eq!(err.kind(), "xds_nack");
    let text = err.to_string();
    assert!(text.contains("stat_prefix: length < 1"), "{text}");
    assert!(text.contains("Listener nonce 7 on stream 1"), "{text}");
    // Never a proxy failure: the scenario grades `error`.
    let mut r = ScenarioResult::new("s", "d", reports::Profile::Core, vec![]);
    r.checks = j.checks;
    r.error = Some(reports::ErrorInfo::new(err.kind(), text));
    assert_eq!(crate::runner::verdict_of(&r), Verdict::Error);
}

#[test]
fn unanswered_on_an_open_stream_is_an_error_on_a_cut_one_a_note() {
    let open = log(vec![(1, opened(Some(TOKEN))), (1, response(CLUSTER, "1"))]);
    let j = judge(&open, TOKEN, 0);
    assert_eq!(j.checks[0].verdict, Verdict::Error);
    assert_eq!(j.error.map(|e| e.kind()), Some("xds_unanswered"));

    let cut = log(vec![
        (1, opened(Some(TOKEN))),
        (1, response(CLUSTER, "1")),
        (
            1,
            XdsEvent::Closed {
                code: 14,
                reason: "agent down".into(),
            },
        ),
        (2, opened(Some(TOKEN))),
        (2, response(CLUSTER, "2")),
        (2, ack(CLUSTER, "2")),
    ]);
    let j = judge(&cut, TOKEN, 0);
    assert!(j.error.is_none());
    assert_eq!(j.checks[0].verdict, Verdict::Pass);
    assert!(
        j.checks[0]
            .observed
            .contains("unanswered when their stream was cut: Cluster nonce 1 on stream 1"),
        "{}",
        j.checks[0].observed
    );
}

#[test]
fn a_stream_without_the_token_fails() {
    let entries = log(vec![
        (1, opened(Some(TOKEN))),
        (2, opened(None)),
        (3, opened(Some("someone-else"))),
    ]);
    let j = judge(&entries, TOKEN, 0);
    assert!(j.error.is_none());
    assert_eq!(j.checks[1].verdict, Verdict::Fail);
    assert_eq!(
        j.checks[1].observed,
        "2 of 3 streams: stream 2 sent no token, stream 3 sent another token"
    );

    let none = judge(&[], TOKEN, 0);
    assert_eq!(none.checks[1].verdict, Verdict::Fail);
    assert_eq!(none.checks[1].observed, "no xDS stream was opened");
}

#[test]
fn summary_counts_streams_and_events() {
    let entries = log(vec![
        (1, opened(Some(TOKEN))),
        (1, response(CLUSTER, "1")),
        (1, ack(CLUSTER, "1")),
        (
            1,
            XdsEvent::Closed {
                code: 0,
                reason: "client gone".into(),
            },
        ),
    ]);
    let a = summary(&entries, 0);
    assert_eq!(a.name, "xds-log");
    assert!(
        a.content
            .starts_with("1 streams, 0 requests, 1 responses, 1 ACKs, 0 NACKs\n"),
        "{}",
        a.content
    );
    assert!(a.content.contains("#1: opened by db-sidecar-proxy from 127.0.0.1:40000 (token); closed: code 0, client gone"), "{}", a.content);
    assert!(a.content.contains("ACK Cluster nonce 1"), "{}", a.content);
}

#[tokio::test]
async fn settle_waits_for_the_answer() {
    let xlog = std::sync::Arc::new(XdsLog::default());
    xlog.record(1, opened(Some(TOKEN)));
    xlog.record(1, response(CLUSTER, "1"));
    let l = xlog.clone();
    let answer = tokio::spawn(async move {
        // The answer arrives while settle waits (no fixed sleep in settle itself).
        tokio::task::yield_now().await;
        l.record(1, ack(CLUSTER, "1"));
    });
    let (settled, seen) = settle(&xlog, Duration::from_secs(30)).await;
    assert!(settled);
    assert_eq!(seen.len(), 3);
    assert!(judge(&seen, TOKEN, 0).error.is_none());
    answer.await.unwrap();

    xlog.record(1, response(LISTENER, "2"));
    let (settled, seen) = settle(&xlog, Duration::from_millis(50)).await;
    assert!(!settled);
    assert_eq!(
        judge(&seen, TOKEN, 0).error.map(|e| e.kind()),
        Some("xds_unanswered")
    );
}
