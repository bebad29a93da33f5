//! The `/_sim/` control API: random methods, paths and bodies; and random sequences of control
//! actions (faults on and off, CA rotation, index reset, restart, leaf TTL) interleaved with API
//! requests, with invariants checked after each step: once faults clear the sim answers health,
//! leaf and roots; `X-Consul-Index` of an endpoint never goes backwards except across an index
//! reset or a restart (which resets indexes, as a restarted agent's are smaller).

use std::collections::HashMap;

use axum::http::Method;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::json;

use super::bodies::json_value;
use super::strategies::{segment, wait};
use super::support::{
    ROOT, Req, builder, check_answer, config, encode, paused_runtime, seed, send,
};

/// One step of a sequence.
#[derive(Debug, Clone)]
enum Step {
    /// A control request (method, path under `/_sim`, body); `resets` when it resets indexes.
    Control(Method, String, String),
    /// A Consul API request.
    Api(Method, String, String),
}

fn put(path: &'static str, body: &serde_json::Value) -> Step {
    Step::Control(Method::PUT, path.into(), body.to_string())
}

fn control_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (
            prop_oneof![Just(500u16), Just(503), Just(429), Just(404), 100u16..1000],
            prop::option::of(select(vec![
                "/v1/agent",
                "/v1/health",
                "/v1/connect",
                "/",
                ""
            ]))
        )
            .prop_map(|(status, prefix)| put(
                "/faults",
                &json!({"Kind": "errors", "Status": status, "PathPrefix": prefix})
            )),
        (
            0u64..3000,
            prop::option::of(select(vec!["/v1/agent/connect", "/envoy", "/"]))
        )
            .prop_map(|(ms, prefix)| put(
                "/faults",
                &json!({"Kind": "latency", "Delay": format!("{ms}ms"), "PathPrefix": prefix})
            )),
        Just(put("/faults", &json!({"Kind": "servers-unreachable"}))),
        (1u64..5000).prop_map(|ms| put(
            "/faults",
            &json!({"Kind": "servers-unreachable", "For": format!("{ms}ms")})
        )),
        (1u64..3000).prop_map(|ms| put(
            "/faults",
            &json!({"Kind": "agent-hung", "For": format!("{ms}ms")})
        )),
        (1u64..3000).prop_map(|ms| put(
            "/faults",
            &json!({"Kind": "agent-down", "For": format!("{ms}ms")})
        )),
        Just(Step::Control(
            Method::DELETE,
            "/faults".into(),
            String::new()
        )),
        (0u64..6).prop_map(|id| Step::Control(
            Method::DELETE,
            format!("/faults/{id}"),
            String::new()
        )),
        Just(Step::Control(
            Method::POST,
            "/index-reset".into(),
            String::new()
        )),
        (0u64..2000).prop_map(|ms| Step::Control(
            Method::POST,
            "/restart".into(),
            json!({"DownFor": format!("{ms}ms")}).to_string()
        )),
        any::<bool>().prop_map(|x| Step::Control(
            Method::POST,
            "/ca/rotate".into(),
            json!({"CrossSign": x}).to_string()
        )),
        Just(Step::Control(
            Method::POST,
            "/ca/rotate".into(),
            json!({"PrivateKeyType": "ec", "PrivateKeyBits": 384}).to_string()
        )),
        Just(Step::Control(
            Method::POST,
            "/ca/rotate-intermediate".into(),
            String::new()
        )),
        select(vec!["1h", "10s", "0s", "-1s", "x"])
            .prop_map(|t| put("/ca/leaf-ttl", &json!({"LeafCertTTL": t}))),
        select(vec!["passing", "warning", "critical", "bogus"])
            .prop_map(|s| put("/checks", &json!({"Service": "web", "Status": s}))),
    ]
}

fn api_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (
            select(vec![
                "/v1/agent/connect/ca/roots",
                "/v1/agent/connect/ca/leaf/web",
                "/v1/health/service/web",
                "/v1/health/connect/db",
                "/v1/catalog/services",
                "/v1/connect/ca/roots",
                "/v1/agent/services",
                "/v1/connect/intentions"
            ]),
            prop::option::of((0u64..40, wait()))
        )
            .prop_map(|(p, blocking)| match blocking {
                Some((i, w)) => Step::Api(
                    Method::GET,
                    format!("{p}?index={i}&wait={}", encode(&w)),
                    String::new()
                ),
                None => Step::Api(Method::GET, p.to_owned(), String::new()),
            }),
        segment().prop_map(|s| Step::Api(
            Method::PUT,
            "/v1/agent/service/register".into(),
            json!({"Name": s, "Port": 1234, "Connect": {"SidecarService": {}}}).to_string()
        )),
        select(vec!["allow", "deny"]).prop_map(|a| Step::Api(
            Method::PUT,
            "/v1/connect/intentions/exact?source=web&destination=db".into(),
            json!({"Action": a}).to_string()
        )),
    ]
}

/// Endpoints whose answer must come back 200 once no fault is active.
const LIVENESS: &[&str] = &[
    "/v1/agent/connect/ca/roots",
    "/v1/agent/connect/ca/leaf/web",
    "/v1/health/service/web",
];

proptest! {
    #![proptest_config(config(100, "proptest-regressions/fuzz/control.txt"))]

    #[test]
    fn control_sequences_keep_the_sim_consistent(
        acl in any::<bool>(),
        steps in prop::collection::vec(prop_oneof![2 => control_step(), 3 => api_step()], 1..14),
    ) {
        let result: Result<(), TestCaseError> = paused_runtime().block_on(async {
            let sim = builder(acl).start().await.expect("sim starts");
            seed(sim.control(), acl);
            let router = agent_sim::http::app::app(sim.control().clone());
            let mut last_index: HashMap<String, u64> = HashMap::new();
            for step in &steps {
                let (req, is_control) = match step {
                    Step::Control(m, p, b) => (Req::new(m.clone(), format!("/_sim{p}")).body(b.clone()), true),
                    Step::Api(m, p, b) => (Req::new(m.clone(), p.clone()).body(b.clone()), false),
                };
                let req = req.header("X-Consul-Token", ROOT);
                // `None`: a blocking leaf query waiting longer than is worth judging.
                let Some(answer) = send(&router, &req).await.map_err(TestCaseError::fail)? else {
                    continue;
                };
                let injected = sim.control().faults().iter()
                    .any(|f| matches!(f.fault, agent_sim::faults::Fault::Errors { .. }));
                if is_control || !injected {
                    check_answer(&req, &answer).map_err(TestCaseError::fail)?;
                }
                if is_control && (req.uri.ends_with("/index-reset") || req.uri.ends_with("/restart")) && answer.status == 200 {
                    last_index.clear();
                }
                if sim.control().faults().is_empty() {
                    for p in LIVENESS {
                        let r = Req::new(Method::GET, *p).header("X-Consul-Token", ROOT);
                        let a = send(&router, &r).await.map_err(TestCaseError::fail)?
                            .ok_or_else(|| TestCaseError::fail("unbuildable"))?;
                        prop_assert_eq!(a.status, 200, "{} after {:?}: {}", p, step, a.text);
                        if let Some(i) = a.index {
                            let before = last_index.insert((*p).to_owned(), i).unwrap_or(0);
                            prop_assert!(i >= before, "{} index went {} -> {} after {:?}", p, before, i, step);
                        }
                    }
                }
            }
            sim.shutdown().await;
            Ok(())
        });
        result?;
    }

    #[test]
    fn any_control_request_gets_a_clear_answer(
        acl in any::<bool>(),
        reqs in prop::collection::vec(
            (
                prop_oneof![
                    3 => select(vec![Method::GET, Method::PUT, Method::POST, Method::DELETE]),
                    1 => "[A-Z]{1,8}".prop_map(|m| Method::from_bytes(m.as_bytes()).unwrap_or(Method::GET)),
                ],
                select(vec!["/faults", "/faults/{}", "/index-reset", "/ca/rotate", "/ca/leaf-ttl",
                    "/ca/roots", "/identity/{}", "/forge", "/checks", "/tokens", "/log", "/xds-log",
                    "/{}", "/restart"]),
                segment(),
                prop_oneof![
                    json_value().prop_map(|v| v.to_string().into_bytes()),
                    super::bodies::bad_body(),
                ],
                prop::option::of(select(vec!["since=3", "since=-1", "since=x", "since=99999999999999999999"])),
            ),
            1..8,
        ),
    ) {
        let result: Result<(), TestCaseError> = paused_runtime().block_on(async {
            let sim = builder(acl).start().await.expect("sim starts");
            seed(sim.control(), acl);
            let router = agent_sim::http::app::app(sim.control().clone());
            for (method, path, seg, body, q) in reqs {
                // Restarting with a random DownFor may take (virtual) years: use the sequence test.
                if path == "/restart" && method == Method::POST {
                    continue;
                }
                let path = path.replace("{}", &seg);
                let uri = match q { Some(q) => format!("/_sim{path}?{q}"), None => format!("/_sim{path}") };
                let req = Req::new(method, uri).body(body).header("X-Consul-Token", ROOT);
                if let Some(a) = send(&router, &req).await.map_err(TestCaseError::fail)? {
                    check_answer(&req, &a).map_err(TestCaseError::fail)?;
                }
                // Faults added by random bodies would make the next answers 5xx on purpose.
                sim.control().clear_faults();
            }
            sim.shutdown().await;
            Ok(())
        });
        result?;
    }
}
