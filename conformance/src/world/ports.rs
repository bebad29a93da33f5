//! Loopback ports for the proxy's own listeners (inbound, upstream binds): picked below the
//! kernel's ephemeral range (so outgoing connections never take them), checked free by binding,
//! and never handed out twice in one process (so parallel scenarios cannot collide).

use std::collections::BTreeSet;
use std::net::TcpListener;

use parking_lot::Mutex;
use rand::Rng;

use crate::error::Error;

/// Ports are picked from this range (Linux's default ephemeral range starts at 32768).
pub(crate) const RANGE: std::ops::Range<u16> = 20000..32000;

static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A free loopback port nobody else in this process was given.
pub(crate) fn free_port() -> Result<u16, Error> {
    let mut rng = rand::rng();
    for _ in 0..500 {
        let port = rng.random_range(RANGE);
        let mut handed = HANDED_OUT.lock();
        if handed.contains(&port) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed.insert(port);
            return Ok(port);
        }
    }
    Err(Error::io(
        "find a free loopback port",
        std::io::Error::new(std::io::ErrorKind::AddrInUse, "500 tries failed"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_unique_free_and_in_range() {
        let ports: Vec<u16> = (0..50).map(|_| free_port().unwrap()).collect();
        let unique: BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(unique.len(), ports.len());
        for p in ports {
            assert!(RANGE.contains(&p));
            TcpListener::bind(("127.0.0.1", p)).unwrap();
        }
    }
}
