//! The real binary: `-proxy-id` with `CONSUL_HTTP_ADDR` / `CONSUL_HTTP_TOKEN` in its
//! environment carries traffic, and SIGTERM stops accepting, lets the open connection finish
//! and exits cleanly and promptly once it has.

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio::time::Instant;

use super::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_carries_traffic_and_stops_on_sigterm() {
    let w = World::new(sim_builder(), json!({"Config": {"drain_timeout_ms": 1500}})).await;
    w.allow("web");
    let mut child = Command::new(env!("CARGO_BIN_EXE_proxy-under-test"))
        .args(["-proxy-id", "db-sidecar-proxy", "-log-level", "info"])
        .env("CONSUL_HTTP_ADDR", w.sim.http_addr())
        .env("CONSUL_HTTP_TOKEN", &w.token)
        .env_remove("CONSUL_HTTP_TOKEN_FILE")
        .env_remove("CONNECT_PROXY_ID")
        .env_remove("CONNECT_SIDECAR_FOR")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let logs = tokio::spawn(async move {
        let mut out = String::new();
        let _ = stderr.read_to_string(&mut out).await;
        out
    });

    let web = w.probe("web");
    eventually("the binary serves", PATIENCE, || web.works(w.public())).await;
    assert!(w.probe("api").echo(w.public(), b"x").await.is_err());
    let mut open = web.connect(w.public()).await.unwrap();
    round_trip(&mut open, b"before SIGTERM").await.unwrap();
    assert!(
        w.c()
            .request_log()
            .iter()
            .all(|e| e.token.as_deref() == Some(w.token.as_str())),
        "CONSUL_HTTP_TOKEN sent on every request"
    );

    let pid = Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    kill(pid, Signal::SIGTERM).unwrap();
    // Draining: no new connections, the open one still works.
    eventually("listener closed", PATIENCE, || async {
        tokio::net::TcpStream::connect(w.public()).await.is_err()
    })
    .await;
    round_trip(&mut open, b"while draining").await.unwrap();
    // The last connection ends: the proxy exits well before the 10 s drain bound.
    drop(open);
    let closed = Instant::now();
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("exits")
        .unwrap();
    let took = closed.elapsed();
    let logs = logs.await.unwrap();
    assert!(status.success(), "exit status {status:?}; logs:\n{logs}");
    assert!(logs.contains("shutting down"), "logs:\n{logs}");
    assert!(
        took < Duration::from_secs(5),
        "exit {took:?} after the last connection closed; logs:\n{logs}"
    );
}
