//! Tests of process-group teardown, readiness errors and environment handling, with real
//! (tiny) child processes.

use std::net::TcpListener;

use super::*;

fn sh(script: &str) -> ProxyCommand {
    ProxyCommand {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        ..ProxyCommand::default()
    }
}

/// Dead = no such process, or a zombie nobody reaped yet.
fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_dead(pid: i32) -> bool {
    for _ in 0..200 {
        if dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

async fn first_stdout_line(p: &ProxyProcess) -> String {
    for _ in 0..400 {
        if let Some(l) = p.stdout().tail(1).pop() {
            return l;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no output");
}

#[tokio::test]
async fn teardown_kills_the_whole_group() {
    // The shell ignores SIGTERM so the grace period runs out and SIGKILL is needed; its
    // background sleep is a grandchild that only a group kill reaches.
    let mut p = ProxyProcess::spawn(&sh("trap '' TERM; sleep 1000 & echo $!; sleep 1000")).unwrap();
    let grandchild: i32 = first_stdout_line(&p).await.parse().unwrap();
    let child = p.pgid();
    assert!(live_groups().contains(&child));
    assert!(!dead(grandchild) && !dead(child));

    let t = p.teardown(Duration::from_millis(300)).await;
    assert!(t.killed, "{t:?}");
    assert!(t.exit.contains("signal"), "{t:?}");
    assert!(wait_dead(child).await, "child {child} survived");
    assert!(
        wait_dead(grandchild).await,
        "grandchild {grandchild} survived"
    );
    assert!(!live_groups().contains(&child));
}

#[tokio::test]
async fn sigterm_is_enough_for_a_polite_child() {
    // The shell says when its trap is installed: tearing down before that would kill it by the
    // default action and test nothing.
    let mut p = ProxyProcess::spawn(&sh(
        "trap 'echo got-term; exit 0' TERM; echo trapped; sleep 1000 & wait",
    ))
    .unwrap();
    assert_eq!(first_stdout_line(&p).await, "trapped");
    let t = p.teardown(Duration::from_secs(5)).await;
    assert!(!t.killed, "{t:?}");
    assert_eq!(t.exit, "exit status: 0");
}

#[tokio::test]
async fn drop_kills_the_group() {
    let p = ProxyProcess::spawn(&sh("sleep 1000 & echo $!; sleep 1000")).unwrap();
    let grandchild: i32 = first_stdout_line(&p).await.parse().unwrap();
    let child = p.pgid();
    drop(p);
    assert!(wait_dead(child).await);
    assert!(wait_dead(grandchild).await);
    assert!(!live_groups().contains(&child));
}

#[tokio::test]
async fn ready_timeout_names_the_pending_ports() {
    // A port nobody listens on: bind, note, close.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut p = ProxyProcess::spawn(&sh("sleep 1000")).unwrap();
    let err = p
        .wait_ready(&[ListenAddr::Tcp(addr)], Duration::from_millis(300))
        .await
        .unwrap_err();
    assert_eq!(err.pending, [ListenAddr::Tcp(addr)]);
    assert_eq!(err.exited, None);
    assert!(err.waited >= Duration::from_millis(300));
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
    p.teardown(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn ready_reports_an_early_exit_with_its_output() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut p = ProxyProcess::spawn(&sh("echo boom >&2; exit 3")).unwrap();
    let err = p
        .wait_ready(&[ListenAddr::Tcp(addr)], Duration::from_secs(20))
        .await
        .unwrap_err();
    assert_eq!(err.exited.as_deref(), Some("exit status: 3"));
    assert!(
        err.to_string()
            .starts_with("the proxy exited (exit status: 3)"),
        "{err}"
    );
    p.teardown(Duration::from_millis(100)).await;
    assert!(p.stderr().render().contains("boom"));
}

#[tokio::test]
async fn ready_when_ports_accept() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let mut p = ProxyProcess::spawn(&sh("sleep 1000")).unwrap();
    let took = p
        .wait_ready(&[ListenAddr::Tcp(addr)], Duration::from_secs(5))
        .await
        .unwrap();
    assert!(took < Duration::from_secs(5));
    p.teardown(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn environment_is_set_and_removed() {
    let cmd = ProxyCommand {
        env: vec![("CONF_TEST_A".into(), "alpha".into())],
        env_remove: vec!["HOME".into()],
        ..sh("echo \"a=$CONF_TEST_A home=${HOME:-unset}\"")
    };
    let mut p = ProxyProcess::spawn(&cmd).unwrap();
    assert_eq!(first_stdout_line(&p).await, "a=alpha home=unset");
    p.teardown(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let cmd = ProxyCommand {
        argv: vec!["/nonexistent/proxy-binary".into()],
        ..ProxyCommand::default()
    };
    let err = ProxyProcess::spawn(&cmd).unwrap_err();
    assert_eq!(err.kind(), "proxy_spawn_failed");
    assert!(
        err.to_string().contains("/nonexistent/proxy-binary"),
        "{err}"
    );
}
