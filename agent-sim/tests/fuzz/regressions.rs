//! Named regression tests: the minimal input of every crash, hang or stray 5xx the fuzzers
//! found, fixed at its cause in agent-sim.

use std::time::Duration;

use axum::http::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::support::{Req, app, check_answer, paused_runtime, send};

/// Sends one request to a fresh sim (ACLs as given) and checks the fuzzers' properties.
fn clear_answer(acl: bool, req: &Req) -> super::support::Answer {
    paused_runtime().block_on(async {
        let a = app(acl);
        let answer = send(&a.router, req)
            .await
            .expect("answered in time")
            .expect("buildable");
        check_answer(req, &answer).expect("a clear answer");
        answer
    })
}

#[test]
fn deeply_nested_registration_body_is_a_400() {
    let body = "[".repeat(100_000);
    let a = clear_answer(
        false,
        &Req::new(Method::PUT, "/v1/agent/service/register").body(body),
    );
    assert_eq!(a.status, 400, "{}", a.text);
}

/// Found by `any_request_gets_a_clear_answer`: a TTL update of an unknown check was a 500;
/// Consul's `vetCheckUpdateWithAuthorizer` answers 404 before anything else.
#[test]
fn ttl_update_of_an_unknown_check_is_a_404() {
    for path in ["pass", "warn", "fail"] {
        let a = clear_answer(
            false,
            &Req::new(Method::PUT, format!("/v1/agent/check/{path}/web")),
        );
        assert_eq!(a.status, 404, "{path}: {}", a.text);
        assert_eq!(
            a.text,
            "Unknown check ID \"web\". Ensure that the check ID is passed, not the check name."
        );
    }
}

/// Found by `raw_bytes_get_an_answer_or_a_close`: a client that shut down its sending side
/// after a complete request got the connection closed without an answer (hyper's default);
/// Go's server, hence Consul, answers it.
#[test]
fn a_request_then_half_close_is_answered() {
    super::support::runtime().block_on(async {
        let sim = super::support::builder(false)
            .start()
            .await
            .expect("sim starts");
        let mut s = TcpStream::connect(sim.addr()).await.expect("connect");
        s.write_all(b"GET /v1/agent/self HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("write");
        s.shutdown().await.expect("half-close");
        let mut out = Vec::new();
        tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out))
            .await
            .expect("ended in time")
            .expect("read");
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        sim.shutdown().await;
    });
}

/// Found by `control_sequences_keep_the_sim_consistent`: servers unreachable, a restart (the
/// agent cache emptied), then `DELETE /_sim/faults`: the next request still got `500 No known
/// Consul servers`, because the store learnt that the servers were back only when a background
/// task ran. Fault changes through the control API now reach the store before the answer.
#[test]
fn clearing_faults_takes_effect_before_the_next_request() {
    paused_runtime().block_on(async {
        let a = app(false);
        let steps = [
            (
                Method::PUT,
                "/_sim/faults",
                r#"{"Kind":"servers-unreachable"}"#,
            ),
            (Method::POST, "/_sim/restart", r#"{"DownFor":"1ms"}"#),
        ];
        for (m, uri, body) in steps {
            let r = send(&a.router, &Req::new(m, uri).body(body)).await;
            assert_eq!(r.expect("in time").expect("built").status, 200, "{uri}");
        }
        let roots = Req::new(Method::GET, "/v1/agent/connect/ca/roots");
        let down = send(&a.router, &roots)
            .await
            .expect("in time")
            .expect("built");
        assert_eq!(
            (down.status, down.text.as_str()),
            (500, "No known Consul servers")
        );
        let clear = Req::new(Method::DELETE, "/_sim/faults");
        let r = send(&a.router, &clear)
            .await
            .expect("in time")
            .expect("built");
        assert_eq!(r.status, 200);
        let up = send(&a.router, &roots)
            .await
            .expect("in time")
            .expect("built");
        assert_eq!(up.status, 200, "{}", up.text);
    });
}

/// Found by `any_control_request_gets_a_clear_answer`: `POST /_sim/identity/%2F` (a name that
/// cannot form a SPIFFE ID) was a 500; the control API now answers 400 with the CA's text.
#[test]
fn a_test_identity_for_an_impossible_name_is_a_400() {
    for name in ["%2F", "a%2Fb"] {
        let a = clear_answer(
            false,
            &Req::new(Method::POST, format!("/_sim/identity/{name}")),
        );
        assert_eq!(a.status, 400, "{name}: {}", a.text);
        assert!(
            a.text
                .starts_with("SPIFFE ID is not in the expected format"),
            "{}",
            a.text
        );
    }
}
