//! Descendants that escaped their proxy's process group (a proxy that daemonizes a helper with
//! `setsid`, a double fork): the CLI makes itself their child subreaper, so they are re-parented
//! to it rather than to init when their parent dies, and kills whatever is left of them when the
//! run ends (normally or interrupted). Linux only; elsewhere both are no-ops.

/// Makes this process the subreaper of its descendants (`PR_SET_CHILD_SUBREAPER`). Call once,
/// before the first proxy starts.
pub fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        tracing::warn!(error = %e, "cannot become the child subreaper: a proxy's escaped descendants may outlive the run");
    }
}

/// SIGKILLs every live child of this process (and its process group), repeating as their own
/// children are re-parented here, at most a few rounds. Call only once no proxy is meant to run
/// (every one was torn down): any child left then is a leak. Returns how many were killed.
pub fn kill_orphans() -> usize {
    let me = std::process::id();
    let mut killed = 0;
    for _ in 0..8 {
        let children = live_children(me);
        if children.is_empty() {
            break;
        }
        for pid in children {
            let Ok(raw) = i32::try_from(pid) else {
                continue;
            };
            let p = nix::unistd::Pid::from_raw(raw);
            let _ = nix::sys::signal::killpg(p, nix::sys::signal::Signal::SIGKILL);
            let _ = nix::sys::signal::kill(p, nix::sys::signal::Signal::SIGKILL);
            killed += 1;
        }
        // Give the kernel a moment to re-parent their children to us.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    killed
}

/// Processes whose parent is `parent` and that are not zombies (from `/proc/*/stat`).
fn live_children(parent: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parse_stat(&stat))
                .is_some_and(|(state, ppid)| ppid == parent && state != 'Z' && state != 'X')
        })
        .collect()
}

/// `(state, ppid)` from a `/proc/PID/stat` line (the command name may hold spaces and parens).
fn parse_stat(stat: &str) -> Option<(char, u32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        assert_eq!(parse_stat("42 (a) b (c)) S 7 42 42 0 -1"), Some(('S', 7)));
        assert_eq!(parse_stat("1 (init) R 0 1"), Some(('R', 0)));
        assert_eq!(parse_stat("garbage"), None);
    }
}
