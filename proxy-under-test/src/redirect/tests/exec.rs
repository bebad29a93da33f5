//! The iptables runner against fake `iptables` scripts: lookup, not-installed and
//! not-permitted errors, and the exact command sequences of `apply` and `remove` (the real
//! kernel is exercised by `tests/redirect.rs`).

use std::path::{Path, PathBuf};

use super::super::*;

/// Writes an executable `iptables` shell script with `body` into `dir`. A child process writes
/// it, not this one: a file this process holds open for writing is inherited by any child that
/// another test thread forks meanwhile, and running the script then fails with "Text file
/// busy" (`ETXTBSY`) until that child has called `exec` (seen once in CI, as a `failed` where
/// `not-permitted` was expected).
fn script(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("iptables");
    let written = std::process::Command::new("/bin/sh")
        .args(["-c", r#"printf '%s\n' "$1" > "$2" && chmod 755 "$2""#, "sh"])
        .arg(format!("#!/bin/sh\n{body}"))
        .arg(&path)
        .status()
        .unwrap();
    assert!(written.success(), "writing {}", path.display());
    path
}

/// A fake iptables that logs its arguments to `log`, answers `-S` with `state` and `-C` with
/// exit status `check`.
fn recording(dir: &Path, state: &str, check: i32) -> (Iptables, PathBuf) {
    let log = dir.join("log");
    let state_file = dir.join("state");
    std::fs::write(&state_file, state).unwrap();
    let body = format!(
        r#"echo "$*" >> {log}
case "$*" in
  *" -S") cat {state} ;;
  *" -C "*) exit {check} ;;
esac
exit 0"#,
        log = log.display(),
        state = state_file.display(),
    );
    (Iptables::new(script(dir, &body)), log)
}

fn logged(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_missing_binary_is_not_installed() {
    let ipt = Iptables::new("/nonexistent/iptables");
    let err = apply(&RedirectConfig::new(5995, 21000), &ipt).unwrap_err();
    assert_eq!(err.kind(), "not-installed");
    assert!(
        err.to_string().contains("/nonexistent/iptables"),
        "names what it tried: {err}"
    );
    assert_eq!(remove(&ipt).unwrap_err().kind(), "not-installed");
}

#[test]
fn find_prefers_path_and_skips_non_executables() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    std::fs::write(a.path().join("iptables"), "not executable").unwrap();
    let good = script(b.path(), "exit 0");
    let path = std::env::join_paths([a.path(), b.path()]).unwrap();
    assert_eq!(Iptables::find(Some(&path)).unwrap().program(), good);
}

#[test]
fn find_reports_every_place_tried() {
    let empty = tempfile::tempdir().unwrap();
    match Iptables::find(Some(empty.path().as_os_str())) {
        // This machine has iptables in a fallback directory.
        Ok(found) => assert!(
            ["/usr/sbin/iptables", "/sbin/iptables"].contains(&found.program().to_str().unwrap())
        ),
        Err(RedirectError::NotInstalled { tried }) => {
            assert_eq!(tried[0], empty.path().join("iptables"));
            assert!(tried.contains(&PathBuf::from("/usr/sbin/iptables")));
            assert!(tried.contains(&PathBuf::from("/sbin/iptables")));
        }
        Err(e) => panic!("unexpected {e}"),
    }
}

#[test]
fn permission_denied_is_not_permitted() {
    let dir = tempfile::tempdir().unwrap();
    // iptables-nft's real message and exit status as a non-root user.
    let ipt = Iptables::new(script(
        dir.path(),
        "echo 'iptables v1.8.9 (nf_tables): Could not fetch rule set generation id: Permission denied (you must be root)' >&2\nexit 4",
    ));
    let err = apply(&RedirectConfig::new(5995, 21000), &ipt).unwrap_err();
    assert_eq!(err.kind(), "not-permitted");
    let text = err.to_string();
    assert!(text.contains("needs root or CAP_NET_ADMIN"), "{text}");
    assert!(
        text.contains("Permission denied (you must be root)"),
        "{text}"
    );
    assert_eq!(remove(&ipt).unwrap_err().kind(), "not-permitted");

    // iptables-legacy's wording, whatever the status.
    let ipt = Iptables::new(script(
        dir.path(),
        "echo \"iptables v1.8.9 (legacy): can't initialize iptables table \\`nat': Permission denied (you must be root)\" >&2\nexit 3",
    ));
    assert_eq!(remove(&ipt).unwrap_err().kind(), "not-permitted");
}

#[test]
fn other_failures_keep_command_status_and_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let ipt = Iptables::new(script(
        dir.path(),
        "echo 'iptables: No chain/target/match by that name.' >&2\nexit 1",
    ));
    match remove(&ipt).unwrap_err() {
        RedirectError::Failed {
            command,
            status,
            stderr,
        } => {
            assert!(command.ends_with("iptables -t nat -S"), "{command}");
            assert_eq!(status, Some(1));
            assert_eq!(stderr, "iptables: No chain/target/match by that name.");
        }
        e => panic!("unexpected {e}"),
    }
}

#[test]
fn apply_on_a_clean_table_creates_chains_and_adds_jumps() {
    let dir = tempfile::tempdir().unwrap();
    let (ipt, log) = recording(dir.path(), "-P PREROUTING ACCEPT\n-P OUTPUT ACCEPT\n", 1);
    let config = RedirectConfig::new(5995, 21000);
    let done = apply(&config, &ipt).unwrap();
    assert_eq!(
        done,
        Applied {
            chains_created: 4,
            chains_flushed: 0,
            jumps_added: 2,
            jumps_kept: 0,
            rules_added: 6,
        }
    );
    let mut want = vec!["-w -t nat -S".to_owned()];
    for rule in rules(&config) {
        let argv = rule.argv().join(" ");
        if rule.is_builtin_jump() {
            want.push(format!("-w {}", argv.replacen(" -A ", " -C ", 1)));
        }
        want.push(format!("-w {argv}"));
    }
    assert_eq!(logged(&log), want);
}

#[test]
fn apply_again_flushes_and_keeps_the_jumps() {
    let dir = tempfile::tempdir().unwrap();
    let state = "-P OUTPUT ACCEPT\n-N CONSUL_PROXY_INBOUND\n-N CONSUL_PROXY_IN_REDIRECT\n\
                 -N CONSUL_PROXY_OUTPUT\n-N CONSUL_PROXY_REDIRECT\n-N OTHER\n\
                 -A OUTPUT -p tcp -j CONSUL_PROXY_OUTPUT\n";
    let (ipt, log) = recording(dir.path(), state, 0);
    let done = apply(&RedirectConfig::new(5995, 21000), &ipt).unwrap();
    assert_eq!((done.chains_created, done.chains_flushed), (0, 4));
    assert_eq!((done.jumps_added, done.jumps_kept), (0, 2));
    let log = logged(&log);
    assert!(log.iter().all(|l| !l.contains(" -N ")), "{log:?}");
    assert!(
        log.iter()
            .all(|l| !l.contains("-A OUTPUT") && !l.contains("-A PREROUTING")),
        "{log:?}"
    );
    assert_eq!(log.iter().filter(|l| l.contains(" -F CONSUL_")).count(), 4);
}

#[test]
fn apply_refuses_an_invalid_config_before_running_anything() {
    let dir = tempfile::tempdir().unwrap();
    let (ipt, log) = recording(dir.path(), "", 1);
    let err = apply(&RedirectConfig::new(5995, 0), &ipt).unwrap_err();
    assert_eq!(err.kind(), "bad-flag");
    assert!(logged(&log).is_empty());
}

#[test]
fn remove_deletes_every_jump_into_own_chains_then_the_chains() {
    let dir = tempfile::tempdir().unwrap();
    let state = "-P PREROUTING ACCEPT\n-P OUTPUT ACCEPT\n\
                 -N CONSUL_PROXY_INBOUND\n-N CONSUL_PROXY_OUTPUT\n-N CONSUL_PROXY_REDIRECT\n-N KEEP\n\
                 -A PREROUTING -j KEEP\n\
                 -A PREROUTING -m comment --comment \"a b\" -p tcp -j CONSUL_PROXY_INBOUND\n\
                 -A OUTPUT -p tcp -j CONSUL_PROXY_OUTPUT\n\
                 -A OUTPUT -d 10.0.0.1/32 -j RETURN\n\
                 -A OUTPUT -p tcp -j CONSUL_PROXY_OUTPUT\n\
                 -A CONSUL_PROXY_OUTPUT -j CONSUL_PROXY_REDIRECT\n";
    let (ipt, log) = recording(dir.path(), state, 0);
    let done = remove(&ipt).unwrap();
    assert_eq!(
        done,
        Removed {
            jumps_deleted: 3,
            chains_deleted: 3,
        }
    );
    assert_eq!(
        logged(&log),
        [
            "-w -t nat -S",
            // The quoted comment is one argument (logged with its space).
            "-w -t nat -D PREROUTING -m comment --comment a b -p tcp -j CONSUL_PROXY_INBOUND",
            "-w -t nat -D OUTPUT -p tcp -j CONSUL_PROXY_OUTPUT",
            "-w -t nat -D OUTPUT -p tcp -j CONSUL_PROXY_OUTPUT",
            "-w -t nat -F CONSUL_PROXY_INBOUND",
            "-w -t nat -F CONSUL_PROXY_OUTPUT",
            "-w -t nat -F CONSUL_PROXY_REDIRECT",
            "-w -t nat -X CONSUL_PROXY_INBOUND",
            "-w -t nat -X CONSUL_PROXY_OUTPUT",
            "-w -t nat -X CONSUL_PROXY_REDIRECT",
        ]
    );
}

#[test]
fn remove_with_nothing_installed_only_lists() {
    let dir = tempfile::tempdir().unwrap();
    let (ipt, log) = recording(dir.path(), "-P OUTPUT ACCEPT\n-A OUTPUT -j RETURN\n", 0);
    assert_eq!(remove(&ipt).unwrap(), Removed::default());
    assert_eq!(logged(&log), ["-w -t nat -S"]);
}

#[test]
fn listing_lines_split_like_iptables_quotes_them() {
    let split = exec::split_spec;
    assert_eq!(
        split(r#"-A OUTPUT -m comment --comment "a \"b\" c" -j CONSUL_PROXY_OUTPUT"#),
        [
            "-A",
            "OUTPUT",
            "-m",
            "comment",
            "--comment",
            r#"a "b" c"#,
            "-j",
            "CONSUL_PROXY_OUTPUT"
        ]
    );
    assert_eq!(split("  -N   X  "), ["-N", "X"]);
    assert_eq!(split(r#"--comment """#), ["--comment", ""]);
}
