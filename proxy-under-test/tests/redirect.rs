//! `redirect-traffic` against the real kernel, each test in a network namespace of its own
//! (`unshare(CLONE_NEWNET)` on a dedicated thread: that thread and the processes it spawns live
//! in it, and it vanishes with the thread). Needs root and iptables: without them (when the
//! crate was built; the cfg `missing_netns` of `build.rs`) those tests are reported ignored with
//! the reason, and a test that runs without them fails naming what is missing; as root with
//! iptables, failing to create the namespace is a failure.
//!
//! Checked: applying twice (library, then the binary) gives the same `iptables-save -t nat`;
//! removing restores the table exactly (and is idempotent); a real redirect of the test's own
//! outbound TCP to the outbound listener; the loopback bypass; an excluded UID is left alone.

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::time::Duration;

use nix::sched::{CloneFlags, unshare};
use proxy_under_test::redirect::{
    Applied, Exclusions, Iptables, RedirectConfig, Removed, apply, remove,
};

/// The proxy's UID in these tests: not the test's (0), so the test's traffic is redirected.
const PROXY_UID: u32 = 5995;
const INBOUND_PORT: u16 = 21000;
const OUTBOUND_PORT: u16 = 15001;

/// The iptables binary; fails the test (never passes it empty) without root or iptables. The
/// callers are ignored where those were missing when the crate was built.
fn privileged_iptables() -> Iptables {
    assert!(
        nix::unistd::geteuid().is_root(),
        "needs root (iptables rules in a private network namespace)"
    );
    Iptables::find(std::env::var_os("PATH").as_deref())
        .unwrap_or_else(|e| panic!("needs iptables: {e}"))
}

/// Runs `body` on a new thread inside a fresh network namespace; panics (fails the test) when
/// the namespace cannot be created.
fn in_netns<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> T {
    let thread = std::thread::spawn(move || {
        unshare(CloneFlags::CLONE_NEWNET).unwrap_or_else(|e| {
            panic!("root with iptables, but unshare(CLONE_NEWNET) failed: {e}")
        });
        body()
    });
    match thread.join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

fn sh(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `iptables-save -t nat` without comments (timestamps) and with counters zeroed.
fn nat_table() -> String {
    let save = sh("iptables-save", &["-t", "nat"]);
    let counters = regex::Regex::new(r"\[\d+:\d+\]").unwrap();
    save.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{}\n", counters.replace_all(l, "[0:0]")))
        .collect()
}

fn config() -> RedirectConfig {
    RedirectConfig::new(PROXY_UID, INBOUND_PORT)
        .with_outbound_port(OUTBOUND_PORT)
        .with_exclusions(Exclusions {
            inbound_ports: vec![22],
            outbound_ports: vec![8500],
            outbound_cidrs: vec!["10.0.0.0/8".parse().unwrap()],
            uids: vec![100],
        })
}

#[test]
#[cfg_attr(
    missing_netns,
    ignore = "needs root and iptables (network namespaces of its own); CONFORMANCE_REQUIRE_NETNS=1 makes it a failure"
)]
fn apply_is_idempotent_and_remove_restores_the_table() {
    let ipt = privileged_iptables();
    in_netns(move || {
        let before = nat_table();
        assert!(
            !before.contains("CONSUL_PROXY"),
            "fresh namespace:\n{before}"
        );

        let first = apply(&config(), &ipt).unwrap();
        assert_eq!(
            first,
            Applied {
                chains_created: 4,
                chains_flushed: 0,
                jumps_added: 2,
                jumps_kept: 0,
                rules_added: 10,
            }
        );
        let once = nat_table();
        for rule in [
            "-A PREROUTING -p tcp -j CONSUL_PROXY_INBOUND",
            "-A OUTPUT -p tcp -j CONSUL_PROXY_OUTPUT",
            "-A CONSUL_PROXY_INBOUND -p tcp -m tcp --dport 22 -j RETURN",
            "-A CONSUL_PROXY_INBOUND -p tcp -j CONSUL_PROXY_IN_REDIRECT",
            "-A CONSUL_PROXY_IN_REDIRECT -p tcp -j REDIRECT --to-ports 21000",
            "-A CONSUL_PROXY_OUTPUT -m owner --uid-owner 100 -j RETURN",
            "-A CONSUL_PROXY_OUTPUT -d 10.0.0.0/8 -j RETURN",
            "-A CONSUL_PROXY_OUTPUT -p tcp -m tcp --dport 8500 -j RETURN",
            "-A CONSUL_PROXY_OUTPUT -m owner --uid-owner 5995 -j RETURN",
            "-A CONSUL_PROXY_OUTPUT -d 127.0.0.1/32 -j RETURN",
            "-A CONSUL_PROXY_OUTPUT -j CONSUL_PROXY_REDIRECT",
            "-A CONSUL_PROXY_REDIRECT -p tcp -j REDIRECT --to-ports 15001",
        ] {
            assert_eq!(
                once.matches(&format!("{rule}\n")).count(),
                1,
                "{rule} in\n{once}"
            );
        }
        assert_eq!(
            once.lines().filter(|l| l.starts_with("-A ")).count(),
            12,
            "{once}"
        );

        // Again, through the binary (single-dash flags, as an operator would type them).
        let bin = env!("CARGO_BIN_EXE_redirect-traffic");
        let out = sh(
            bin,
            &[
                "-proxy-uid",
                "5995",
                "-proxy-inbound-port",
                "21000",
                "-proxy-outbound-port",
                "15001",
                "-exclude-inbound-port",
                "22",
                "-exclude-outbound-port",
                "8500",
                "-exclude-outbound-cidr",
                "10.0.0.0/8",
                "-exclude-uid",
                "100",
            ],
        );
        assert_eq!(out, "Successfully applied traffic redirection rules\n");
        assert_eq!(nat_table(), once, "second apply changes nothing");
        let third = apply(&config(), &ipt).unwrap();
        assert_eq!((third.chains_flushed, third.jumps_kept), (4, 2));
        assert_eq!(nat_table(), once);

        assert_eq!(
            remove(&ipt).unwrap(),
            Removed {
                jumps_deleted: 2,
                chains_deleted: 4,
            }
        );
        assert_eq!(nat_table(), before, "remove restores the nat table");
        let out = sh(bin, &["-remove"]);
        assert_eq!(out, "Successfully removed traffic redirection rules\n");
        assert_eq!(remove(&ipt).unwrap(), Removed::default());
        assert_eq!(nat_table(), before);
    });
}

fn accepts_within(listener: &TcpListener, limit: Duration) -> Option<TcpStream> {
    listener.set_nonblocking(true).unwrap();
    let start = std::time::Instant::now();
    loop {
        match listener.accept() {
            Ok((s, _)) => return Some(s),
            Err(e) if e.kind() == ErrorKind::WouldBlock && start.elapsed() < limit => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return None,
            Err(e) => panic!("accept: {e}"),
        }
    }
}

#[test]
#[cfg_attr(
    missing_netns,
    ignore = "needs root and iptables (network namespaces of its own); CONFORMANCE_REQUIRE_NETNS=1 makes it a failure"
)]
fn outbound_tcp_reaches_the_outbound_listener() {
    let ipt = privileged_iptables();
    in_netns(move || {
        sh("ip", &["link", "set", "lo", "up"]);
        // A destination the namespace routes (to lo) but nobody listens on.
        sh("ip", &["route", "add", "240.0.0.0/4", "dev", "lo"]);
        let proxy = TcpListener::bind(("127.0.0.1", OUTBOUND_PORT)).unwrap();
        let app = TcpListener::bind("127.0.0.1:0").unwrap();
        let remote: SocketAddr = "240.0.0.7:80".parse().unwrap();
        let dial = |to: SocketAddr| TcpStream::connect_timeout(&to, Duration::from_millis(700));
        assert!(dial(remote).is_err(), "nothing answers before the rules");

        apply(&config(), &ipt).unwrap();
        let client = dial(remote).expect("redirected to the outbound listener");
        assert_eq!(
            client.peer_addr().unwrap(),
            remote,
            "NAT is invisible to the app"
        );
        let accepted = accepts_within(&proxy, Duration::from_secs(2)).expect("proxy accepts");
        assert_eq!(accepted.local_addr().unwrap().port(), OUTBOUND_PORT);
        assert_eq!(accepted.peer_addr().unwrap(), client.local_addr().unwrap());

        // Loopback bypass: 127.0.0.1 goes where it was sent.
        let app_addr = app.local_addr().unwrap();
        let local = dial(app_addr).expect("loopback dial");
        assert_eq!(local.peer_addr().unwrap(), app_addr);
        assert!(
            accepts_within(&app, Duration::from_secs(2)).is_some(),
            "app accepts"
        );
        assert!(
            accepts_within(&proxy, Duration::from_millis(200)).is_none(),
            "loopback traffic is not redirected"
        );

        // Excluding the test's own UID (0) leaves its traffic alone (re-applied in place).
        let mut exclude_self = config();
        exclude_self.exclude.uids.push(0);
        apply(&exclude_self, &ipt).unwrap();
        assert!(dial(remote).is_err(), "UID 0 excluded: not redirected");
        assert!(accepts_within(&proxy, Duration::from_millis(200)).is_none());

        remove(&ipt).unwrap();
        assert!(dial(remote).is_err(), "removed: not redirected");
        assert!(accepts_within(&proxy, Duration::from_millis(200)).is_none());
        drop(client);
        drop(accepted);
    });
}

/// The binary needs no privilege for `-dry-run`, and prints errors on one line (no backtrace,
/// even with `RUST_BACKTRACE=1`).
#[test]
fn binary_dry_run_and_one_line_errors() {
    let bin = env!("CARGO_BIN_EXE_redirect-traffic");
    let out = Command::new(bin)
        .args([
            "-proxy-uid",
            "5995",
            "-proxy-inbound-port",
            "21000",
            "-dry-run",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 12, "{text}");
    assert!(
        text.starts_with("iptables -t nat -N CONSUL_PROXY_INBOUND\n"),
        "{text}"
    );

    let out = Command::new(bin)
        .args(["-proxy-inbound-port", "21000"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "error: -proxy-uid is required\n"
    );
}
