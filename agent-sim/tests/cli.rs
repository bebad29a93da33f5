//! The `agent-sim` binary: bad flags and files get one clear line and a non-zero exit, the
//! scenario catalogue is listed, and a scenario is played for a proxy started by hand.

use std::process::{Command, Stdio};

fn agent_sim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agent-sim"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("agent-sim runs");
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        text(out.stdout),
        text(out.stderr),
    )
}

#[test]
fn bad_flags_and_files_are_clear_errors() {
    let (code, _, err) = agent_sim(&["--leaf-ttl", "10"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid value '10' for '--leaf-ttl"), "{err}");
    let (code, _, err) = agent_sim(&[
        "--listen",
        "127.0.0.1:0",
        "--grpc-listen",
        "off",
        "--preload",
        "/nonexistent/preload.hcl",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("agent-sim: reading /nonexistent/preload.hcl"),
        "{err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("Stack backtrace"),
        "{err}"
    );
    let (code, _, err) = agent_sim(&["--scenario", "no-such-scenario"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("unknown scenario \"no-such-scenario\""),
        "{err}"
    );
    let (code, _, err) = agent_sim(&["--listen", "not-an-address"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = agent_sim(&["--grpc-listen", "nowhere"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("expected ADDR:PORT or off"), "{err}");
    let (code, _, err) = agent_sim(&["--xds-tls-mode", "file"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("expected inline or sds"), "{err}");
}

#[test]
fn lists_the_catalogue() {
    let (code, out, _) = agent_sim(&["--list-scenarios"]);
    assert_eq!(code, 0);
    for id in [
        "l4-allow-deny",
        "ca-rotation",
        "l7-change-on-keepalive",
        "agent-restart",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(id)),
            "{id} missing in:\n{out}"
        );
    }
}

#[test]
fn plays_a_scenario_and_prints_what_a_proxy_should_do() {
    let (code, out, err) = agent_sim(&[
        "--listen",
        "127.0.0.1:0",
        "--grpc-listen",
        "127.0.0.1:0",
        "--xds-tls-mode",
        "sds",
        "--scenario",
        "intention-change",
        "--scenario-pace",
        "1ms",
        "--exit-after-scenario",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("-proxy-id db-sidecar-proxy"), "{out}");
    assert!(out.contains("xDS (gRPC, delta ADS) on 127.0.0.1:"), "{out}");
    assert!(out.contains(", TLS sds"), "{out}");
    assert!(out.contains("agent-sim connect envoy -bootstrap"), "{out}");
    assert!(out.contains("a correct proxy now:"), "{out}");
    assert!(out.contains("agent: intention web → db: deny"), "{out}");
}
