//! A realistic, fixed, graded sample report (one scenario of every verdict, a "within T" check
//! that took too long), used by this crate's snapshot tests and, behind the `test-util`
//! feature, by other crates' tests.

mod repeated;

use std::collections::BTreeMap;

use crate::model::{
    Artifact, CheckResult, Environment, ErrorInfo, EventKind, Harness, Profile, ProxyInfo, Report,
    Requirement, ScenarioResult, TimelineEvent, Verdict,
};

use EventKind::{Check, Fault, Observation, ProxyLog, Step};
use Requirement::{Must, Should};

pub use self::repeated::repeated_report;

/// The sample report, graded. Profiles: core failure, l7 not run, extended partial,
/// transparent success.
pub fn sample_report() -> Report {
    let bounds = BTreeMap::from([
        ("intention-change".to_owned(), 2000),
        ("leaf-refresh".to_owned(), 3000),
        ("max-connection-lifetime".to_owned(), 10_000),
    ]);
    let proxy = ProxyInfo {
        name: "proxy-under-test".into(),
        version: Some("0.1.0".into()),
        command: "proxy-under-test -proxy-id {proxy_id}".into(),
        features: vec!["l4".into(), "transparent".into()],
        bounds,
        xds_tls_mode: None,
    };
    let environment = Environment {
        os: "linux".into(),
        arch: "x86_64".into(),
        cpus: 2,
        hostname: Some("ci-runner-3".into()),
        ci: true,
        notes: vec!["not root: scenarios that need a network namespace are not supported".into()],
    };
    let mut report = Report::new(
        Harness::new("0.1.0"),
        proxy,
        environment,
        "2026-03-14T09:26:53Z",
        20_260_314,
    );
    report.duration_ms = 41_730;
    report.scenarios = vec![
        l4_allow_deny(),
        precedence_property(),
        ca_rotation(),
        persistent_connection(),
        index_reset(),
        acl_token_file(),
        agent_restart(),
        tproxy_virtual_ip(),
        hostname_endpoint(),
    ];
    report.graded()
}

fn l4() -> Vec<String> {
    vec!["l4".into()]
}

fn l4_allow_deny() -> ScenarioResult {
    let mut s = ScenarioResult::new(
        "l4-allow-deny",
        "intentions web→db allow, api→db deny",
        Profile::Core,
        l4(),
    );
    s.duration_ms = 1840;
    s.catalogue = Some("../scenarios/catalogue/core/l4-allow-deny.toml".into());
    s.docs = vec!["https://developer.hashicorp.com/consul/docs/connect/intentions".into()];
    s.checks = vec![
        CheckResult::new(
            "web allowed",
            Must,
            Verdict::Pass,
            "web's bytes reach db's app and come back",
            "16 bytes echoed",
        )
        .at(410),
        CheckResult::new(
            "api refused",
            Must,
            Verdict::Pass,
            "handshake fails or the connection is closed before any byte reaches the app",
            "connection closed after the handshake; the app saw 0 bytes",
        )
        .at(530),
    ];
    s.timeline = vec![
        TimelineEvent::new(0, Step, "register db, web, api; write intentions"),
        TimelineEvent::new(120, Step, "proxy ready"),
        TimelineEvent::new(410, Observation, "web → db echoed").ok(true),
        TimelineEvent::new(530, Observation, "api → db closed, 0 bytes").ok(true),
    ];
    s
}

fn precedence_property() -> ScenarioResult {
    let mut s = ScenarioResult::new(
        "precedence-property",
        "random intention sets and sources; decisions equal the model's",
        Profile::Core,
        l4(),
    );
    s.duration_ms = 6120;
    s.seed = Some(1_234_567_890_123);
    s.checks = vec![
        CheckResult::new(
            "every probe decided as the model",
            Must,
            Verdict::Pass,
            "64 probes over 16 intention sets decided as the precedence model",
            "64 of 64 as the model",
        )
        .at(6100),
    ];
    s.timeline = vec![
        TimelineEvent::new(0, Step, "write intention set 1 of 16"),
        TimelineEvent::new(6100, Check, "64 of 64 as the model").ok(true),
    ];
    s
}

fn ca_rotation() -> ScenarioResult {
    let mut s = ScenarioResult::new(
        "ca-rotation",
        "rotate the CA (cross-signed) while a connection is open",
        Profile::Core,
        l4(),
    );
    s.duration_ms = 9350;
    s.checks = vec![
        CheckResult::new(
            "new-root client accepted within T",
            Must,
            Verdict::Pass,
            "a client with a new-root leaf is accepted within 3 s of the rotation",
            "accepted 400 ms after the rotation",
        )
        .at(1400)
        .within(Some(400), 3000),
        CheckResult::new(
            "new-root leaf served within T",
            Must,
            Verdict::Fail,
            "the proxy serves a leaf signed by the new root within 3 s of the rotation",
            "old-root leaf served until 4.21 s after the rotation",
        )
        .at(5210)
        .within(Some(4210), 3000),
        CheckResult::new(
            "old-root client accepted",
            Must,
            Verdict::Pass,
            "a client with an old-root leaf is accepted while the old root is listed",
            "accepted",
        )
        .at(5800),
        CheckResult::new(
            "open connection survives",
            Must,
            Verdict::Pass,
            "the connection opened before the rotation still echoes",
            "echoed 16 bytes after the rotation",
        )
        .at(9000),
    ];
    s.timeline = vec![
        TimelineEvent::new(0, Step, "open web connection"),
        TimelineEvent::new(1000, Step, "rotate CA (cross-signed)")
            .detail("PUT /v1/connect/ca/configuration"),
        TimelineEvent::new(1020, ProxyLog, "roots changed: 2 roots"),
        TimelineEvent::new(1400, Observation, "new-root client accepted").ok(true),
        TimelineEvent::new(2500, Observation, "served leaf signed by old root"),
        TimelineEvent::new(4000, Observation, "served leaf signed by old root")
            .detail("bound of 3 s after the rotation has passed")
            .ok(false),
        TimelineEvent::new(5210, Observation, "served leaf signed by new root").ok(true),
        TimelineEvent::new(5800, Observation, "old-root client accepted").ok(true),
        TimelineEvent::new(9000, Observation, "open connection echoes").ok(true),
    ];
    s.artifacts = vec![Artifact::text(
        "proxy-stderr",
        "INFO roots changed: 2 roots\nINFO leaf watch: blocking on index 41\n\
         INFO leaf renewed: serial 0x1f, issuer new root\n",
    )];
    s
}

fn persistent_connection() -> ScenarioResult {
    let mut s = ScenarioResult::new(
        "persistent-connection",
        "open an allowed long-lived connection, then flip to deny",
        Profile::Core,
        l4(),
    );
    s.duration_ms = 12_400;
    s.checks = vec![
        CheckResult::new(
            "new connections refused within T",
            Must,
            Verdict::Pass,
            "new web connections refused within 2 s of the flip",
            "refused 600 ms after the flip",
        )
        .at(2600)
        .within(Some(600), 2000),
        CheckResult::new(
            "open connection closed within declared bound",
            Must,
            Verdict::Pass,
            "closed within 10 s (max-connection-lifetime)",
            "closed 9.81 s after the flip",
        )
        .at(11_810)
        .within(Some(9810), 10_000),
        CheckResult::new(
            "open connection closed within scenario cap",
            Should,
            Verdict::Fail,
            "closed within 5 s of the flip (re-authorization)",
            "closed only by the lifetime bound, 9.81 s after the flip",
        )
        .at(11_810)
        .within(Some(9810), 5000),
    ];
    s.timeline = vec![
        TimelineEvent::new(0, Step, "open web connection"),
        TimelineEvent::new(2000, Step, "flip web→db to deny"),
        TimelineEvent::new(2600, Observation, "new connection refused").ok(true),
        TimelineEvent::new(7000, Observation, "open connection still echoes").ok(false),
        TimelineEvent::new(11_810, Observation, "open connection closed").ok(true),
    ];
    s
}

fn index_reset() -> ScenarioResult {
    let mut s = ScenarioResult::new(
        "index-reset",
        "the sim's indexes go backwards",
        Profile::Core,
        l4(),
    );
    s.duration_ms = 2100;
    s.error = Some(ErrorInfo::new(
        "agent_control_failed",
        "writing intention web→db deny: agent-sim control API returned 500",
    ));
    s.timeline = vec![
        TimelineEvent::new(0, Step, "spawn proxy"),
        TimelineEvent::new(300, Step, "proxy ready"),
        TimelineEvent::new(1000, Fault, "index reset").detail("indexes go backwards: 41 → 3"),
        TimelineEvent::new(
            1040,
            ProxyLog,
            "intentions watch: index went backwards, resetting",
        ),
        TimelineEvent::new(1500, Step, "flip web→db to deny"),
    ];
    s.artifacts = vec![Artifact::text(
        "proxy-stderr",
        "WARN intentions watch: index went backwards (41 -> 3), resetting to 0\n",
    )];
    s
}

fn acl_token_file() -> ScenarioResult {
    let mut s = ScenarioResult::new(
        "acl-token-file",
        "proxy started with -token-file instead of the environment variable",
        Profile::Extended,
        l4(),
    );
    s.duration_ms = 1310;
    s.checks = vec![
        CheckResult::new(
            "token sent on every request",
            Must,
            Verdict::Pass,
            "every agent request carries the token from the file",
            "37 of 37 requests",
        )
        .at(1300),
    ];
    s.timeline = vec![
        TimelineEvent::new(0, Step, "spawn proxy with -token-file"),
        TimelineEvent::new(1300, Check, "37 of 37 requests with token").ok(true),
    ];
    s
}

fn agent_restart() -> ScenarioResult {
    let mut s = ScenarioResult::new(
        "agent-restart",
        "the agent restarts (new indexes, same data)",
        Profile::Extended,
        l4(),
    );
    s.mark_skipped();
    s
}

fn tproxy_virtual_ip() -> ScenarioResult {
    let mut s = ScenarioResult::new(
        "tproxy-outbound-virtual-ip",
        "the app dials cache's virtual IP through the redirect rules",
        Profile::Transparent,
        vec!["l4".into(), "transparent".into()],
    );
    s.mark_not_supported();
    s.checks = vec![CheckResult::new(
        "environment",
        Must,
        Verdict::NotSupported,
        "root and iptables, to create a network namespace",
        "not root (uid 1000)",
    )];
    s
}

fn hostname_endpoint() -> ScenarioResult {
    let mut s = ScenarioResult::new(
        "hostname-endpoint",
        "an upstream instance registered with address localhost",
        Profile::Transparent,
        l4(),
    );
    s.duration_ms = 880;
    s.checks = vec![
        CheckResult::new(
            "hostname resolved and reached",
            Must,
            Verdict::Pass,
            "bytes to the local upstream port reach the instance at localhost",
            "reached cache-1",
        )
        .at(700),
    ];
    s.timeline = vec![
        TimelineEvent::new(0, Step, "register cache-1 at localhost"),
        TimelineEvent::new(700, Observation, "reached cache-1").ok(true),
    ];
    s
}
