//! The `mesh` entry's TLS bounds applied to rustls: the protocol versions between the floor and
//! the ceiling, and, when cipher suites are configured, only those TLS 1.2 suites (in the
//! configured order; TLS 1.3 suites are never restricted, as in Envoy).

use std::sync::Arc;

use rustls::SupportedProtocolVersion;
use rustls::crypto::CryptoProvider;

use crate::mesh::{TlsBounds, TlsVersion};

/// The provider and versions a config with these bounds is built from; the provider is the
/// process's ([`super::provider`]) when nothing restricts it.
pub(crate) fn bounded(
    base: Arc<CryptoProvider>,
    bounds: &TlsBounds,
) -> (Arc<CryptoProvider>, Vec<&'static SupportedProtocolVersion>) {
    let min = bounds.min.unwrap_or(TlsVersion::Tls12);
    let max = bounds.max.unwrap_or(TlsVersion::Tls13).max(min);
    let mut versions: Vec<&'static SupportedProtocolVersion> = Vec::new();
    if max >= TlsVersion::Tls13 {
        versions.push(&rustls::version::TLS13);
    }
    if min <= TlsVersion::Tls12 {
        versions.push(&rustls::version::TLS12);
    }
    if bounds.cipher_suites.is_empty() {
        return (base, versions);
    }
    let mut p = (*base).clone();
    let tls13: Vec<_> = p
        .cipher_suites
        .iter()
        .filter(|s| s.version() == &rustls::version::TLS13)
        .copied()
        .collect();
    let tls12 = bounds.cipher_suites.iter().filter_map(|name| {
        p.cipher_suites
            .iter()
            .find(|s| s.version() == &rustls::version::TLS12 && format!("{:?}", s.suite()) == *name)
            .copied()
    });
    let tls12: Vec<_> = tls12.collect();
    if tls12.is_empty() {
        // None of the configured suites is one rustls has (CBC suites, say): TLS 1.2 cannot be
        // negotiated at all, as with an Envoy whose list BoringSSL cannot use.
        versions.retain(|v| *v != &rustls::version::TLS12);
    }
    p.cipher_suites = tls13.into_iter().chain(tls12).collect();
    (Arc::new(p), versions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &CryptoProvider) -> Vec<String> {
        p.cipher_suites
            .iter()
            .map(|s| format!("{:?}", s.suite()))
            .collect()
    }

    #[test]
    fn versions_follow_floor_and_ceiling() {
        let base = super::super::provider();
        let v = |min, max| {
            let b = TlsBounds {
                min,
                max,
                cipher_suites: vec![],
            };
            bounded(base.clone(), &b).1
        };
        assert_eq!(v(None, None).len(), 2);
        assert_eq!(v(Some(TlsVersion::Tls13), None), [&rustls::version::TLS13]);
        assert_eq!(v(None, Some(TlsVersion::Tls12)), [&rustls::version::TLS12]);
    }

    #[test]
    fn cipher_suites_restrict_tls12_only_in_the_given_order() {
        let base = super::super::provider();
        let b = TlsBounds {
            min: None,
            max: None,
            cipher_suites: vec![
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256".into(),
                "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA".into(),
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".into(),
            ],
        };
        let (p, versions) = bounded(base, &b);
        let n = names(&p);
        let tls12: Vec<&String> = n.iter().filter(|s| s.contains("_WITH_")).collect();
        assert_eq!(
            tls12,
            [
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
            ]
        );
        assert!(n.iter().any(|s| s == "TLS13_AES_128_GCM_SHA256"), "{n:?}");
        assert_eq!(versions.len(), 2);
        let cbc_only = TlsBounds {
            min: None,
            max: None,
            cipher_suites: vec!["TLS_RSA_WITH_AES_128_CBC_SHA".into()],
        };
        let (_, versions) = bounded(super::super::provider(), &cbc_only);
        assert_eq!(versions, [&rustls::version::TLS13]);
    }
}
