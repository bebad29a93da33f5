//! The URI SANs of peer leaf certificates, remembered by their exact DER bytes. A mesh's peers
//! present the same few leaves on every connection, and parsing the X.509 again on each
//! handshake was about 3% of either sidecar's CPU per new connection (hop_bench profile, both
//! the client side's server-identity check and the public listener's caller identity).
//!
//! The answer is a pure function of the bytes, so nothing about trust is remembered here: chain
//! verification, the handshake signature and authorization stay per connection. Only parsed
//! certificates are remembered; one that does not parse is parsed (and refused) every time.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

use super::{SpiffeError, uri_sans};

/// Leaves remembered at most by the process; when full, the memo starts over.
pub(crate) const CAPACITY: usize = 1024;

/// Parsed URI SANs by certificate DER.
type Entries = HashMap<Box<[u8]>, Arc<[String]>>;

/// A bounded memo of [`uri_sans`].
#[derive(Debug)]
pub(crate) struct SansMemo {
    capacity: usize,
    entries: Mutex<Entries>,
}

impl SansMemo {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// [`uri_sans`] of `der`, parsed once per distinct certificate.
    pub(crate) fn uri_sans(&self, der: &[u8]) -> Result<Arc<[String]>, SpiffeError> {
        if let Some(hit) = self.lock().get(der) {
            return Ok(Arc::clone(hit));
        }
        let sans: Arc<[String]> = uri_sans(der)?.into();
        let mut entries = self.lock();
        if entries.len() >= self.capacity {
            entries.clear();
        }
        entries.insert(der.into(), Arc::clone(&sans));
        Ok(sans)
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

static PROCESS: LazyLock<SansMemo> = LazyLock::new(|| SansMemo::new(CAPACITY));

/// [`uri_sans`] through the process's memo.
pub fn uri_sans_memo(der: &[u8]) -> Result<Arc<[String]>, SpiffeError> {
    PROCESS.uri_sans(der)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(service: &str) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = vec![rcgen::SanType::URI(
            format!("spiffe://td.consul/ns/default/dc/dc1/svc/{service}")
                .try_into()
                .unwrap(),
        )];
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn answers_as_the_parser_does_and_parses_each_leaf_once() {
        let memo = SansMemo::new(8);
        let (web, db) = (leaf("web"), leaf("db"));
        let first = memo.uri_sans(&web).unwrap();
        assert_eq!(first.to_vec(), uri_sans(&web).unwrap());
        assert!(
            Arc::ptr_eq(&first, &memo.uri_sans(&web).unwrap()),
            "second call is a hit"
        );
        let other = memo.uri_sans(&db).unwrap();
        assert_eq!(other.to_vec(), uri_sans(&db).unwrap());
        assert_ne!(first, other, "keyed by the exact bytes");
        assert_eq!(memo.len(), 2);
    }

    #[test]
    fn a_certificate_that_does_not_parse_is_refused_every_time_and_not_kept() {
        let memo = SansMemo::new(8);
        let mut broken = leaf("web");
        broken.truncate(broken.len() / 2);
        for _ in 0..2 {
            assert!(matches!(
                memo.uri_sans(&broken),
                Err(SpiffeError::BadCertificate(_))
            ));
        }
        assert_eq!(memo.len(), 0);
    }

    #[test]
    fn starts_over_when_full() {
        let memo = SansMemo::new(2);
        for s in ["a", "b", "c"] {
            memo.uri_sans(&leaf(s)).unwrap();
        }
        assert_eq!(
            memo.len(),
            1,
            "the third leaf found the memo full and cleared it"
        );
        let d = leaf("d");
        assert_eq!(memo.uri_sans(&d).unwrap().to_vec(), uri_sans(&d).unwrap());
    }
}
