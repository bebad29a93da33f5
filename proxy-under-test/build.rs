//! Tells the tests that need privileges or resources whether this machine has them (the rule
//! in `build/deps.rs`): the cfg `missing_netns` when not root or no `iptables` (the redirect
//! tests install rules in network namespaces of their own) and `CONFORMANCE_REQUIRE_NETNS=1`
//! is not set; the cfg `missing_nofile` when the hard `RLIMIT_NOFILE` is under what the idle
//! connection test needs and `CONFORMANCE_REQUIRE_NOFILE=1` is not set. Those tests are then
//! reported ignored with the reason. Rebuilt when either variable or `PATH` changes.

#[path = "build/deps.rs"]
mod deps;

use std::path::Path;

/// Descriptors `tests/abuse/idle.rs` holds at once (3000 raw + 2 x 500 mTLS + 256 spare).
const IDLE_TEST_FDS: u64 = 4256;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(missing_netns, missing_nofile)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=build/deps.rs");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=CONFORMANCE_REQUIRE_NETNS");
    println!("cargo::rerun-if-env-changed=CONFORMANCE_REQUIRE_NOFILE");
    let env = |k: &str| std::env::var(k).ok();
    if let deps::Gate::Ignore(_) = deps::gate(
        netns(),
        deps::required(env("CONFORMANCE_REQUIRE_NETNS").as_deref()),
    ) {
        println!("cargo::rustc-cfg=missing_netns");
    }
    if let deps::Gate::Ignore(_) = deps::gate(
        nofile(),
        deps::required(env("CONFORMANCE_REQUIRE_NOFILE").as_deref()),
    ) {
        println!("cargo::rustc-cfg=missing_nofile");
    }
}

/// Root (effective UID 0) and an `iptables` on `PATH` or in the sbin directories.
fn netns() -> Result<(), String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .unwrap_or("");
    if euid != "0" {
        return Err("needs root".into());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(Into::into))
        .any(|d| Path::new(&d).join("iptables").is_file());
    if found {
        Ok(())
    } else {
        Err("needs iptables".into())
    }
}

/// The hard limit on open files is high enough for the idle-connection test.
fn nofile() -> Result<(), String> {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let field = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(4))
        .unwrap_or("0");
    if field == "unlimited" {
        return Ok(());
    }
    let hard: u64 = field.parse().unwrap_or(0);
    if hard >= IDLE_TEST_FDS {
        Ok(())
    } else {
        Err(format!("hard RLIMIT_NOFILE {hard} < {IDLE_TEST_FDS}"))
    }
}
