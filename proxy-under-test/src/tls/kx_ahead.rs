//! Key shares made ahead of the handshakes that use them, in time the runtime would have slept.
//!
//! Every full handshake generates one ephemeral key pair per side (the X25519 share in the
//! ClientHello, and the server's in its ServerHello), and the handshake waits for it: 21 µs
//! here, one sixth of a side's public-key work. [`Ahead`] is a key-exchange group whose `start`
//! takes a key pair made earlier when one is ready and generates one otherwise; the binary's
//! runtime calls [`Ahead::top_up`] as a worker thread is about to park, so a loaded sidecar
//! makes its next shares while it waits for a peer instead of while a peer waits for it. Each
//! pair is still used for one handshake only (a pool entry is moved out, never copied), so
//! forward secrecy is as before; at most [`DEPTH`] unused private keys wait in memory.

use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rustls::crypto::{ActiveKeyExchange, SupportedKxGroup};
use rustls::{Error, NamedGroup, ProtocolVersion};

/// Key pairs kept ready at most.
pub const DEPTH: usize = 8;

/// A key-exchange group whose [`start`](SupportedKxGroup::start) takes a key pair made ahead
/// when one is ready.
pub(crate) struct Ahead {
    inner: &'static dyn SupportedKxGroup,
    ready: Mutex<Vec<Box<dyn ActiveKeyExchange>>>,
}

impl Ahead {
    pub(crate) fn new(inner: &'static dyn SupportedKxGroup) -> Self {
        Self {
            inner,
            ready: Mutex::new(Vec::with_capacity(DEPTH)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Box<dyn ActiveKeyExchange>>> {
        self.ready.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Key pairs ready now.
    pub(crate) fn ready(&self) -> usize {
        self.lock().len()
    }

    /// Makes one key pair if fewer than [`DEPTH`] are ready (generated outside the lock).
    pub(crate) fn top_up(&self) {
        if self.ready() >= DEPTH {
            return;
        }
        if let Ok(kx) = self.inner.start() {
            let mut ready = self.lock();
            if ready.len() < DEPTH {
                ready.push(kx);
            }
        }
    }
}

impl SupportedKxGroup for Ahead {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, Error> {
        let taken = self.lock().pop();
        match taken {
            Some(kx) => Ok(kx),
            None => self.inner.start(),
        }
    }

    fn name(&self) -> NamedGroup {
        self.inner.name()
    }

    fn fips(&self) -> bool {
        self.inner.fips()
    }

    fn usable_for_version(&self, version: ProtocolVersion) -> bool {
        self.inner.usable_for_version(version)
    }
}

impl fmt::Debug for Ahead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ahead")
            .field("group", &self.inner.name())
            .field("ready", &self.ready())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use rustls::crypto::ring::kx_group::X25519;

    use super::*;

    /// Both ends agree on the secret, whichever end's share came from the pool.
    fn agrees(a: &dyn SupportedKxGroup, b: &dyn SupportedKxGroup) {
        let ours = a.start().unwrap();
        let theirs = b.start_and_complete(ours.pub_key()).unwrap();
        let secret = ours.complete(&theirs.pub_key).unwrap();
        assert_eq!(secret.secret_bytes(), theirs.secret.secret_bytes());
    }

    #[test]
    fn shares_made_ahead_complete_like_inline_ones_and_are_taken_first() {
        let pool = Ahead::new(X25519);
        for _ in 0..DEPTH + 3 {
            pool.top_up();
        }
        assert_eq!(pool.ready(), DEPTH, "topping up stops at the depth");
        agrees(&pool, X25519);
        agrees(X25519, &pool);
        assert_eq!(
            pool.ready(),
            DEPTH - 2,
            "both handshakes took a share made ahead"
        );
        assert_eq!(pool.name(), NamedGroup::X25519);
    }

    #[test]
    fn an_empty_pool_generates_inline() {
        let pool = Ahead::new(X25519);
        agrees(&pool, X25519);
        agrees(X25519, &pool);
        assert_eq!(pool.ready(), 0);
    }

    #[test]
    fn no_share_is_handed_out_twice() {
        let pool = Ahead::new(X25519);
        let mut seen = HashSet::new();
        for _ in 0..3 {
            for _ in 0..DEPTH {
                pool.top_up();
            }
            for _ in 0..DEPTH + 2 {
                let kx = pool.start().unwrap();
                assert!(
                    seen.insert(kx.pub_key().to_vec()),
                    "a key share came out twice"
                );
            }
        }
    }

    #[test]
    fn the_process_provider_takes_x25519_shares_made_ahead() {
        let provider = crate::tls::provider();
        let first: &dyn SupportedKxGroup = provider.kx_groups[0];
        assert_eq!(first.name(), NamedGroup::X25519);
        assert!(
            std::ptr::addr_eq(first, crate::tls::x25519_ahead()),
            "the provider's X25519 is not the pool the runtime tops up"
        );
    }
}
