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
    // A JWT scenario needs the harness's issuers: refused before anything listens.
    let (code, out, err) = agent_sim(&["--scenario", "jwt-verify-claims"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("play it with `conformance run --scenario jwt-verify-claims`"),
        "{err}"
    );
    assert!(!out.contains("listening"), "{out}");
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

/// A scenario with unix sockets gets a socket directory in `TMPDIR`, removed when agent-sim
/// ends.
#[test]
fn a_socket_scenario_leaves_nothing_in_tmpdir() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = Command::new(env!("CARGO_BIN_EXE_agent-sim"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--grpc-listen",
            "off",
            "--scenario",
            "uds-upstream",
            "--scenario-pace",
            "1ms",
            "--exit-after-scenario",
        ])
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::null())
        .output()
        .expect("agent-sim runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let dir = tmp.path().display().to_string();
    assert!(
        stdout.contains(&format!("on the unix socket {dir}/agent-sim-")),
        "the sockets live in TMPDIR: {stdout}"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path()).expect("tmp").collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

#[test]
fn bad_ca_key_flags_are_clear_errors() {
    let (code, _, err) = agent_sim(&["--ca-key-type", "ec", "--ca-key-bits", "2048"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("--ca-key-bits 2048 is not valid for --ca-key-type ec"),
        "{err}"
    );
    let (code, _, err) = agent_sim(&["--ca-key-type", "rsa", "--ca-key-bits", "1024"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("(ec: 256 or 384; rsa: 2048 or 4096)"), "{err}");
    let (code, _, err) = agent_sim(&["--ca-key-bits", "521"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not valid for --ca-key-type ec"), "{err}");
    let (code, _, err) = agent_sim(&["--ca-key-type", "dsa"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("invalid value 'dsa' for '--ca-key-type"),
        "{err}"
    );
}

/// `--ca-key-type rsa --ca-intermediate` reaches the CA: an RSA root with an intermediate, and
/// the configuration reports the key settings as an operator's `ca_config` would.
#[test]
fn ca_flags_reach_the_ca() {
    use std::io::{BufRead, BufReader, Read, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-sim"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--grpc-listen",
            "off",
            "--ca-key-type",
            "rsa",
            "--ca-intermediate",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("agent-sim starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut addr = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("stdout line");
        if let Some(a) = line.strip_prefix("agent-sim listening on http://") {
            addr = Some(a.to_owned());
            break;
        }
    }
    let get = |addr: &str, path: &str| -> serde_json::Value {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("write");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("read");
        let body = text.split_once("\r\n\r\n").expect("head and body").1;
        serde_json::from_str(body).expect("JSON body")
    };
    let result = addr.map(|a| {
        (
            get(&a, "/v1/connect/ca/roots"),
            get(&a, "/v1/connect/ca/configuration"),
        )
    });
    child.kill().expect("kill agent-sim");
    child.wait().expect("reap agent-sim");
    let (roots, config) = result.expect("agent-sim printed its address");
    let root = &roots["Roots"][0];
    assert_eq!(root["PrivateKeyType"], "rsa", "{roots}");
    assert_eq!(root["PrivateKeyBits"], 2048, "{roots}");
    assert_eq!(
        root["IntermediateCerts"].as_array().map(Vec::len),
        Some(1),
        "{roots}"
    );
    assert_eq!(config["Config"]["PrivateKeyType"], "rsa", "{config}");
    assert_eq!(config["Config"]["PrivateKeyBits"], 2048, "{config}");
}

#[test]
fn non_loopback_listeners_need_the_flag_and_warn() {
    for args in [
        &["--listen", "0.0.0.0:0", "--grpc-listen", "off"][..],
        &["--listen", "127.0.0.1:0", "--grpc-listen", "[::]:0"][..],
        &[
            "--listen",
            "127.0.0.1:0",
            "--grpc-listen",
            "off",
            "--control-listen",
            "0.0.0.0:0",
        ][..],
    ] {
        let (code, _, err) = agent_sim(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains("not a loopback address") && err.contains("--allow-non-loopback"),
            "{args:?}: {err}"
        );
    }
    // With the flag it serves, after a warning on stderr.
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-sim"))
        .args([
            "--listen",
            "0.0.0.0:0",
            "--grpc-listen",
            "off",
            "--allow-non-loopback",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agent-sim runs");
    let stdout = child.stdout.take().expect("stdout");
    let serving = std::io::BufRead::lines(std::io::BufReader::new(stdout))
        .map_while(Result::ok)
        .any(|l| l.starts_with("export CONSUL_HTTP_ADDR="));
    child.kill().expect("kill");
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        serving,
        "it serves with --allow-non-loopback; stderr: {err}"
    );
    assert!(
        err.contains("WARNING: listening on non-loopback 0.0.0.0:")
            && err.contains("/_sim/ control API (no --acl: it is unauthenticated)"),
        "{err}"
    );
}
