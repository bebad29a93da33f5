//! rustls extension points: a fixed certificate resolver (both sides), the outbound server
//! verifier (chain to the roots, then the upstream's SPIFFE URI; SPIFFE leaves have no DNS SAN)
//! and the inbound wrapper that adds the roots' `IntermediateCerts` to what a client presents.

use std::sync::Arc;

use rustls::client::danger::{ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, verify_server_cert_signed_by_trust_anchor};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ParsedCertificate, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{CertificateError, Error, RootCertStore, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use super::chain_cache::{ChainCache, Usage};
use super::provider;
use crate::spiffe::{SpiffeError, parse_service_uri, uri_sans_memo};

/// The signature half of a rustls verifier, shared by every verifier in this crate:
/// `verify_signatures!(field)` delegates to the verifier in `self.field`;
/// `verify_signatures!()` checks with ring's algorithms (the crate's [`provider`](super::provider)).
macro_rules! verify_signatures {
    () => {
        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &rustls::pki_types::CertificateDer<'_>,
            dss: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls12_signature(
                message,
                cert,
                dss,
                &$crate::tls::provider().signature_verification_algorithms,
            )
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &rustls::pki_types::CertificateDer<'_>,
            dss: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls13_signature(
                message,
                cert,
                dss,
                &$crate::tls::provider().signature_verification_algorithms,
            )
        }

        fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
            $crate::tls::provider()
                .signature_verification_algorithms
                .supported_schemes()
        }
    };
    ($inner:tt) => {
        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &rustls::pki_types::CertificateDer<'_>,
            dss: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            self.$inner.verify_tls12_signature(message, cert, dss)
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &rustls::pki_types::CertificateDer<'_>,
            dss: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            self.$inner.verify_tls13_signature(message, cert, dss)
        }

        fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
            self.$inner.supported_verify_schemes()
        }
    };
}
pub(crate) use verify_signatures;

/// The client-auth half of a rustls client verifier that wraps another one in `self.field`:
/// whether and how client certificates are asked for is the wrapped verifier's.
macro_rules! delegate_client_auth {
    ($inner:tt) => {
        fn offer_client_auth(&self) -> bool {
            self.$inner.offer_client_auth()
        }

        fn client_auth_mandatory(&self) -> bool {
            self.$inner.client_auth_mandatory()
        }

        fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
            self.$inner.root_hint_subjects()
        }
    };
}
pub(crate) use delegate_client_auth;

/// Serves one certificate (our leaf) for every handshake, as server or client.
#[derive(Debug)]
pub(crate) struct FixedCert(pub(crate) Arc<CertifiedKey>);

impl ResolvesServerCert for FixedCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

impl ResolvesClientCert for FixedCert {
    fn resolve(&self, _hints: &[&[u8]], _schemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
    fn has_certs(&self) -> bool {
        true
    }
}

/// The identity an upstream must present: `spiffe://*/ns/<ns>/dc/<dc>/svc/<service>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedServer {
    /// Namespace (`default` in CE).
    pub namespace: String,
    /// The instance's datacenter.
    pub datacenter: String,
    /// The target service.
    pub service: String,
}

impl ExpectedServer {
    /// Whether `uri` names this service (host/trust domain ignored, case-insensitive), like the
    /// built-in proxy's client-side check.
    pub fn matches_uri(&self, uri: &str) -> bool {
        match parse_service_uri(uri) {
            Ok(id) => {
                id.partition.eq_ignore_ascii_case("default")
                    && id.namespace.eq_ignore_ascii_case(&self.namespace)
                    && id.datacenter.eq_ignore_ascii_case(&self.datacenter)
                    && id.service.eq_ignore_ascii_case(&self.service)
            }
            Err(_) => false,
        }
    }
}

/// The intermediates a peer presented followed by the roots' extra ones: what chain building
/// may use (webpki tries every candidate issuer, so order only matters for speed).
pub(crate) fn candidates<'a>(
    presented: &[CertificateDer<'a>],
    extra: &'a [CertificateDer<'static>],
) -> Vec<CertificateDer<'a>> {
    let mut all = presented.to_vec();
    all.extend(extra.iter().map(|c| CertificateDer::from(c.as_ref())));
    all
}

#[derive(Debug)]
pub(crate) struct SpiffeServerVerifier {
    roots: Arc<RootCertStore>,
    intermediates: Arc<Vec<CertificateDer<'static>>>,
    expected: ExpectedServer,
    verified: Arc<ChainCache>,
}

impl SpiffeServerVerifier {
    pub(crate) fn new(roots: Arc<RootCertStore>, expected: ExpectedServer) -> Self {
        Self {
            roots,
            intermediates: Arc::default(),
            expected,
            verified: Arc::default(),
        }
    }

    /// Remembers verified chains in `cache` (the roots' own: [`TrustRoots`](super::TrustRoots)).
    pub(crate) fn with_cache(mut self, cache: Arc<ChainCache>) -> Self {
        self.verified = cache;
        self
    }

    /// Also chains through `extra` (the roots' `IntermediateCerts`).
    pub(crate) fn with_intermediates(mut self, extra: Arc<Vec<CertificateDer<'static>>>) -> Self {
        self.intermediates = extra;
        self
    }
}

/// A client verifier that also chains through the roots' `IntermediateCerts` (as intermediates,
/// never as trust anchors), for clients that present only their leaf.
#[derive(Debug)]
pub(crate) struct WithIntermediates {
    inner: Arc<dyn ClientCertVerifier>,
    extra: Arc<Vec<CertificateDer<'static>>>,
}

impl WithIntermediates {
    pub(crate) fn new(
        inner: Arc<dyn ClientCertVerifier>,
        extra: Arc<Vec<CertificateDer<'static>>>,
    ) -> Self {
        Self { inner, extra }
    }
}

impl ClientCertVerifier for WithIntermediates {
    crate::tls::verify::delegate_client_auth!(inner);

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        let all = candidates(intermediates, &self.extra);
        self.inner.verify_client_cert(end_entity, &all, now)
    }

    crate::tls::verify::verify_signatures!(inner);

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }
}

/// A client verifier whose chain checks are remembered in the roots' [`ChainCache`]; the
/// handshake signatures are always checked by the wrapped verifier.
#[derive(Debug)]
pub(crate) struct Cached {
    inner: Arc<dyn ClientCertVerifier>,
    extra: Arc<Vec<CertificateDer<'static>>>,
    verified: Arc<ChainCache>,
}

impl Cached {
    /// `inner` (which chains to `roots`, with their intermediates) with `roots`'s cache.
    pub(crate) fn new(inner: Arc<dyn ClientCertVerifier>, roots: &super::TrustRoots) -> Self {
        Self {
            inner,
            extra: roots.intermediates.clone(),
            verified: roots.verified.clone(),
        }
    }
}

impl ClientCertVerifier for Cached {
    crate::tls::verify::delegate_client_auth!(inner);

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        let check = || {
            self.inner
                .verify_client_cert(end_entity, intermediates, now)
                .map(|_| ())
        };
        let extra = self.extra.as_slice();
        (self.verified).verify(Usage::Client, end_entity, intermediates, extra, now, check)?;
        Ok(ClientCertVerified::assertion())
    }

    crate::tls::verify::verify_signatures!(inner);

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }
}

/// Any server certificate, its handshake signatures still checked (Go's
/// `InsecureSkipVerify`, Envoy's empty validation context).
#[derive(Debug)]
pub(crate) struct AnyServer;

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    verify_signatures!();
}

/// Every server certificate refused with this message: the unused TLS of a client configured
/// for plain `http://` (a redirect to `https` is not followed into an unverified server).
#[derive(Debug)]
pub(crate) struct RefuseAll(pub(crate) &'static str);

impl ServerCertVerifier for RefuseAll {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Err(Error::General(self.0.to_owned()))
    }

    verify_signatures!();
}

fn other(msg: String) -> Error {
    Error::General(msg)
}

impl ServerCertVerifier for SpiffeServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let extra = self.intermediates.as_slice();
        let check = || {
            let parsed = ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(
                &parsed,
                &self.roots,
                &candidates(intermediates, extra),
                now,
                provider().signature_verification_algorithms.all,
            )
        };
        let usage = Usage::Server;
        (self.verified).verify(usage, end_entity, intermediates, extra, now, check)?;
        let uris = uri_sans_memo(end_entity).map_err(|e: SpiffeError| other(e.to_string()))?;
        match uris.first() {
            Some(uri) if self.expected.matches_uri(uri) => Ok(ServerCertVerified::assertion()),
            Some(uri) => {
                tracing::warn!(
                    presented = %uri,
                    expected_service = %self.expected.service,
                    "upstream presented the wrong identity"
                );
                Err(Error::InvalidCertificate(
                    CertificateError::ApplicationVerificationFailure,
                ))
            }
            None => Err(other("upstream certificate has no URI SAN".into())),
        }
    }

    crate::tls::verify::verify_signatures!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_server_ignores_trust_domain_and_case() {
        let e = ExpectedServer {
            namespace: "default".into(),
            datacenter: "dc1".into(),
            service: "cache".into(),
        };
        assert!(e.matches_uri("spiffe://anything.consul/ns/default/dc/dc1/svc/cache"));
        assert!(e.matches_uri("spiffe://x/ns/Default/dc/DC1/svc/CACHE"));
        assert!(!e.matches_uri("spiffe://x/ns/default/dc/dc2/svc/cache"));
        assert!(!e.matches_uri("spiffe://x/ns/default/dc/dc1/svc/db"));
        assert!(!e.matches_uri("spiffe://x/agent/client/dc/dc1/id/cache"));
    }
}
