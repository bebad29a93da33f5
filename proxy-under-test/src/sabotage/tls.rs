//! Broken TLS for the harness's self-test: a client verifier that forgives the leaf's validity
//! period (`skip-expiry-check`), a self-signed server certificate (`serve-self-signed`), no
//! client certificate outbound (`no-client-cert`) and an upstream verifier that checks the chain
//! only (`skip-upstream-identity`); `roots-only-verification` (see `chain`) is plugged in here.

use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, PKCS_ECDSA_P256_SHA256,
    SanType,
};
use rustls::client::danger::{ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, verify_server_cert_signed_by_trust_anchor};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{NoServerSessionStorage, ParsedCertificate};
use rustls::sign::CertifiedKey;
use rustls::{CertificateError, ClientConfig, Error, RootCertStore, ServerConfig, SignatureScheme};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use x509_parser::prelude::{FromDer, X509Certificate};

use super::{Sabotage, Sabotages, chain};
use crate::snapshot::Snapshot;
use crate::tls::verify::FixedCert;
use crate::tls::{ExpectedServer, InboundTls, Leaf, TlsError, TrustRoots, provider};

/// The inbound TLS with `skip-expiry-check` / `serve-self-signed` applied.
pub(crate) fn inbound(
    tls: InboundTls,
    snap: &Snapshot,
    set: Sabotages,
) -> Result<InboundTls, TlsError> {
    let skip_expiry = set.contains(Sabotage::SkipExpiryCheck);
    let self_signed = set.contains(Sabotage::ServeSelfSigned);
    let roots_only = set.contains(Sabotage::RootsOnlyVerification);
    if !skip_expiry && !self_signed && !roots_only {
        return Ok(tls);
    }
    let base = if roots_only {
        chain::roots_only_client(&snap.roots)?
    } else {
        tls.verifier.clone()
    };
    let verifier: Arc<dyn ClientCertVerifier> = if skip_expiry {
        Arc::new(IgnoreExpiry(base))
    } else {
        base
    };
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_client_cert_verifier(verifier.clone())
        .with_cert_resolver(tls.config.cert_resolver.clone());
    if self_signed {
        config.cert_resolver = Arc::new(FixedCert(self_signed_leaf(snap)?.certified));
    }
    config.session_storage = Arc::new(NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    Ok(InboundTls {
        config: Arc::new(config),
        verifier,
    })
}

/// The outbound client config with `no-client-cert` / `skip-upstream-identity` /
/// `roots-only-verification` applied.
pub(crate) fn outbound(
    config: Arc<ClientConfig>,
    roots: &TrustRoots,
    expected: &ExpectedServer,
    set: Sabotages,
) -> Arc<ClientConfig> {
    let no_cert = set.contains(Sabotage::NoClientCert);
    let any_identity = set.contains(Sabotage::SkipUpstreamIdentity);
    let roots_only = set.contains(Sabotage::RootsOnlyVerification);
    if !no_cert && !any_identity && !roots_only {
        return config;
    }
    let mut config = (*config).clone();
    if no_cert {
        config.client_auth_cert_resolver = Arc::new(NoClientCert);
    }
    if roots_only {
        config
            .dangerous()
            .set_certificate_verifier(chain::roots_only_server(roots, expected.clone()));
    }
    if any_identity {
        config
            .dangerous()
            .set_certificate_verifier(Arc::new(ChainOnly(roots.store.clone())));
    }
    Arc::new(config)
}

fn rcgen_error(e: &rcgen::Error) -> TlsError {
    TlsError::Rustls(Error::General(format!("self-signed certificate: {e}")))
}

/// A self-signed certificate naming the service (`spiffe://<td>/ns/default/dc/<dc>/svc/<svc>`).
fn self_signed_leaf(snap: &Snapshot) -> Result<Leaf, TlsError> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(|e| rcgen_error(&e))?;
    let uri = format!(
        "spiffe://{}/ns/default/dc/{}/svc/{}",
        snap.roots.trust_domain, snap.datacenter, snap.service
    );
    let mut p = CertificateParams::default();
    p.distinguished_name
        .push(DnType::CommonName, snap.service.as_str());
    p.subject_alt_names = vec![SanType::URI(uri.try_into().map_err(|e| rcgen_error(&e))?)];
    p.is_ca = IsCa::ExplicitNoCa;
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let cert = p.self_signed(&key).map_err(|e| rcgen_error(&e))?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    Leaf::from_der(vec![cert.der().clone()], key)
}

/// `now` moved inside the certificate's validity period.
fn within_validity(cert: &CertificateDer<'_>, now: UnixTime) -> Option<UnixTime> {
    let (_, parsed) = X509Certificate::from_der(cert).ok()?;
    let from = u64::try_from(parsed.validity().not_before.timestamp()).ok()?;
    let to = u64::try_from(parsed.validity().not_after.timestamp()).ok()?;
    let at = now.as_secs().clamp(from, to.max(from));
    Some(UnixTime::since_unix_epoch(Duration::from_secs(at)))
}

/// Verifies client chains like the wrapped verifier, but at a time inside the leaf's validity
/// when the leaf is expired or not yet valid.
#[derive(Debug)]
struct IgnoreExpiry(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for IgnoreExpiry {
    crate::tls::verify::delegate_client_auth!(0);

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        let first = self.0.verify_client_cert(end_entity, intermediates, now);
        let out_of_period = matches!(
            &first,
            Err(Error::InvalidCertificate(
                CertificateError::Expired
                    | CertificateError::ExpiredContext { .. }
                    | CertificateError::NotValidYet
                    | CertificateError::NotValidYetContext { .. },
            ))
        );
        match within_validity(end_entity, now).filter(|_| out_of_period) {
            Some(at) => self.0.verify_client_cert(end_entity, intermediates, at),
            None => first,
        }
    }

    crate::tls::verify::verify_signatures!(0);
}

/// Presents nothing when the server asks for a client certificate.
#[derive(Debug)]
struct NoClientCert;

impl ResolvesClientCert for NoClientCert {
    fn resolve(&self, _hints: &[&[u8]], _schemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        None
    }

    fn has_certs(&self) -> bool {
        false
    }
}

/// Accepts any server chain reaching the roots, whatever identity it names.
#[derive(Debug)]
struct ChainOnly(Arc<RootCertStore>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        verify_server_cert_signed_by_trust_anchor(
            &ParsedCertificate::try_from(end_entity)?,
            &self.0,
            intermediates,
            now,
            provider().signature_verification_algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    crate::tls::verify::verify_signatures!();
}
