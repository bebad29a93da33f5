//! Loopback ports for listeners a test must name before the proxy binds them: picked below the
//! kernel's ephemeral range (32768..) so the test's own outgoing connections never take one in
//! the meantime, checked free by binding, and never handed out twice in one process. Shared by
//! the crate's unit tests (`src/testutil.rs`) and its integration tests.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// Linux's default ephemeral range starts at 32768; these ports are never picked by `connect`.
const RANGE: std::ops::Range<u16> = 20000..32000;

static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A loopback port free right now that nobody else in this process was given.
pub(crate) fn free_port() -> u16 {
    // A seed per process (pid, clock), so two test binaries run side by side start apart.
    let seed = std::process::id() as u64
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() as u64);
    let span = u64::from(RANGE.end - RANGE.start);
    let mut handed = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    for i in 0..span {
        let port = RANGE.start + ((seed.wrapping_mul(7919) + i * 4099) % span) as u16;
        if handed.contains(&port) {
            continue;
        }
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed.insert(port);
            return port;
        }
    }
    panic!("no free loopback port in {RANGE:?}");
}
