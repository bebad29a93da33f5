//! Successful certificate-chain verifications against one set of roots, remembered so a peer
//! that connects again with the same certificates is not re-verified on every handshake.
//!
//! What is cached is only the chain check (a path from the presented leaf through the presented
//! or known intermediates to a trust anchor: signatures, key usages, name constraints), which is
//! a pure function of the presented certificates, the roots, the extra intermediates and the
//! time. The cache belongs to one [`TrustRoots`](super::TrustRoots) value (new roots or new
//! intermediates: a new, empty cache), is keyed by the exact DER bytes presented and the usage
//! (client or server authentication), and an entry only answers for times from the moment of the
//! successful check (every `notBefore` of the path was already passed) until the earliest
//! `notAfter` of the presented certificates and the extra intermediates (trust anchors carry no
//! validity in webpki). Everything else stays per handshake: the handshake signature (proof that
//! the peer holds the leaf's key), the SPIFFE identity checks and authorization.

use std::collections::HashMap;
use std::sync::Mutex;

use rustls::Error;
use rustls_pki_types::{CertificateDer, UnixTime};

/// At most this many chains are remembered; when full, the cache starts over.
pub(crate) const CAPACITY: usize = 4096;

/// Which verification a chain passed (the extended key usage checked differs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Usage {
    /// A client certificate, verified by the public listener.
    Client,
    /// A server certificate, verified when dialing an upstream.
    Server,
}

/// When a remembered verification answers: `from <= t < until` (Unix seconds).
#[derive(Debug, Clone, Copy)]
struct Window {
    from: u64,
    until: u64,
}

/// Remembered chain verifications (see the module documentation).
#[derive(Default)]
pub struct ChainCache {
    entries: Mutex<HashMap<Vec<u8>, Window>>,
}

impl std::fmt::Debug for ChainCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainCache")
            .field("chains", &self.len())
            .finish()
    }
}

impl ChainCache {
    /// `Ok` if `end_entity` with `intermediates` passed `usage`'s check at a time that covers
    /// `now`; otherwise runs `check` and remembers a success. `extra` are the intermediates the
    /// check may use besides the presented ones (their expiry bounds the entry too).
    pub(crate) fn verify(
        &self,
        usage: Usage,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        extra: &[CertificateDer<'_>],
        now: UnixTime,
        check: impl FnOnce() -> Result<(), Error>,
    ) -> Result<(), Error> {
        let key = key(usage, end_entity, intermediates);
        let t = now.as_secs();
        if let Some(w) = self.lock().get(&key)
            && w.from <= t
            && t < w.until
        {
            return Ok(());
        }
        check()?;
        if let Some(until) = earliest_not_after(end_entity, intermediates, extra) {
            let mut entries = self.lock();
            if entries.len() >= CAPACITY {
                entries.clear();
            }
            entries.insert(key, Window { from: t, until });
        }
        Ok(())
    }

    /// How many chains are remembered.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Window>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The usage, then each certificate's DER prefixed by its length (no two chains share a key).
fn key(
    usage: Usage,
    end_entity: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
) -> Vec<u8> {
    let certs = std::iter::once(end_entity).chain(intermediates);
    let len = certs.clone().map(|c| c.len() + 4).sum::<usize>() + 1;
    let mut key = Vec::with_capacity(len);
    key.push(match usage {
        Usage::Client => 0,
        Usage::Server => 1,
    });
    for c in certs {
        key.extend_from_slice(&u32::try_from(c.len()).unwrap_or(u32::MAX).to_be_bytes());
        key.extend_from_slice(c);
    }
    key
}

/// The earliest `notAfter` (Unix seconds) of every certificate given; `None` if one is
/// unparsable or expired before 1970 (then nothing is remembered).
fn earliest_not_after(
    end_entity: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
    extra: &[CertificateDer<'_>],
) -> Option<u64> {
    std::iter::once(end_entity)
        .chain(intermediates)
        .chain(extra)
        .map(|c| {
            crate::spiffe::not_after_unix(c)
                .ok()
                .and_then(|s| u64::try_from(s).ok())
        })
        .try_fold(u64::MAX, |min, n| n.map(|n| min.min(n)))
}

#[cfg(test)]
mod tests;
