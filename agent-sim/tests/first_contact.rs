//! What a new user meets first with `agent-sim`: a port clash said once and naming the flag,
//! plain logs (no colour codes, no `Debug` values) when stderr is not a terminal, `connect
//! --help` answered, and a scenario run that says what it waits for and how to grade it.

use std::io::{BufRead, BufReader};
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
fn connect_help_is_answered() {
    for args in [
        &["connect", "--help"][..],
        &["connect", "-help"],
        &["connect", "-h"],
    ] {
        let (code, out, err) = agent_sim(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains("agent-sim connect envoy"), "{args:?}: {out}");
    }
    let (code, _, err) = agent_sim(&["connect", "envoy", "--help"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("-proxy-id"), "{err}");
    let (code, _, err) = agent_sim(&["connect", "nosuch"]);
    assert_eq!(code, 1);
    assert!(err.contains("only `connect envoy` exists"), "{err}");
}

#[test]
fn a_port_clash_is_said_once_naming_the_flag_and_logs_are_plain() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, _, err) = agent_sim(&["--listen", &addr, "--grpc-listen", "off"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("cannot listen on {addr} (--listen)")),
        "{err}"
    );
    assert_eq!(err.matches("in use").count(), 1, "said once: {err}");

    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-sim"))
        .args(["--listen", "127.0.0.1:0", "--grpc-listen", "off"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(line.contains("agent-sim listening"), "{line}");
    assert!(
        !line.contains('\u{1b}'),
        "no colour codes in a pipe: {line:?}"
    );
    assert!(
        !line.contains("None") && !line.contains("Some("),
        "no Debug values: {line}"
    );
}

#[test]
fn a_scenario_says_what_it_waits_for_and_how_to_grade() {
    let (code, out, err) = agent_sim(&[
        "--listen",
        "127.0.0.1:0",
        "--grpc-listen",
        "off",
        "--scenario",
        "l4-allow-deny",
        "--scenario-pace",
        "10ms",
        "--exit-after-scenario",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("waiting for the proxy on 127.0.0.1:"), "{out}");
    assert!(out.contains("not listening yet"), "{out}");
    assert!(out.contains("conformance run --proxy-cmd"), "{out}");
    assert!(out.contains("--scenario l4-allow-deny"), "{out}");
}
