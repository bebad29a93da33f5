//! TLS material for probes and harness-run instances (rustls, ring, session resumption off):
//! PEM decoding, probe client configs that verify nothing about the server but capture its
//! chain, instance server configs that require a client certificate chained to the sim's
//! current roots, and the certificate reading the checks need (URI SANs, chain verification).

use std::sync::Arc;

use agent_sim::ca::ClientIdentity;
use parking_lot::Mutex;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::{NoServerSessionStorage, ParsedCertificate, WebPkiClientVerifier};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

use crate::error::Error;

/// The ring provider every config uses.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn algorithms() -> WebPkiSupportedAlgorithms {
    rustls::crypto::ring::default_provider().signature_verification_algorithms
}

/// Every certificate of a PEM bundle.
pub(crate) fn certs(pem: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| Error::Tls(format!("certificate PEM: {e}")))?;
    if certs.is_empty() {
        return Err(Error::Tls("no certificate in PEM".into()));
    }
    Ok(certs)
}

fn key(pem: &str) -> Result<PrivateKeyDer<'static>, Error> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| Error::Tls(format!("key PEM: {e}")))
}

/// A root store of PEM certificates.
pub(crate) fn root_store(pems: &[String]) -> Result<RootCertStore, Error> {
    let mut store = RootCertStore::empty();
    for pem in pems {
        for c in certs(pem)? {
            store
                .add(c)
                .map_err(|e| Error::Tls(format!("root certificate: {e}")))?;
        }
    }
    Ok(store)
}

/// The server chain seen by a probe's last handshake.
#[derive(Debug, Default)]
pub(crate) struct Captured(Mutex<Option<Vec<CertificateDer<'static>>>>);

impl Captured {
    /// Takes the captured chain (leaf first).
    pub(crate) fn take(&self) -> Option<Vec<CertificateDer<'static>>> {
        self.0.lock().take()
    }
}

/// Accepts any server certificate (the probe judges it later), checking only handshake
/// signatures, and remembers the chain.
#[derive(Debug)]
struct AcceptAnyServer {
    captured: Arc<Captured>,
}

impl ServerCertVerifier for AcceptAnyServer {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let chain = std::iter::once(end_entity)
            .chain(intermediates)
            .map(|c| c.clone().into_owned())
            .collect();
        *self.captured.0.lock() = Some(chain);
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &algorithms())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &algorithms())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        algorithms().supported_schemes()
    }
}

/// A probe client config presenting `identity` (none: no client certificate); the server's
/// chain lands in `captured`.
pub(crate) fn client_config(
    identity: Option<&ClientIdentity>,
    captured: Arc<Captured>,
) -> Result<Arc<ClientConfig>, Error> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnyServer { captured }));
    let mut cfg = match identity {
        Some(id) => builder
            .with_client_auth_cert(certs(&id.cert_chain_pem)?, key(&id.private_key_pem)?)
            .map_err(|e| Error::Tls(format!("client certificate: {e}")))?,
        None => builder.with_no_client_auth(),
    };
    cfg.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(cfg))
}

/// [`client_config`] offering only `version` (`1.2`/`1.3`; both when `None`) and, for TLS 1.2,
/// only the suites named in `tls12_suites` (IANA names; all of rustls' when empty).
pub(crate) fn client_config_offering(
    identity: Option<&ClientIdentity>,
    captured: Arc<Captured>,
    version: Option<&str>,
    tls12_suites: &[String],
) -> Result<Arc<ClientConfig>, Error> {
    let (p, versions) = offering(version, tls12_suites);
    let builder = ClientConfig::builder_with_provider(p)
        .with_protocol_versions(versions)
        .map_err(|e| Error::Tls(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnyServer { captured }));
    let mut cfg = match identity {
        Some(id) => builder
            .with_client_auth_cert(certs(&id.cert_chain_pem)?, key(&id.private_key_pem)?)
            .map_err(|e| Error::Tls(format!("client certificate: {e}")))?,
        None => builder.with_no_client_auth(),
    };
    cfg.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(cfg))
}

/// The provider and protocol versions of a peer speaking only `version` (`1.2`/`1.3`; both when
/// `None`) and, for TLS 1.2, only the suites named in `tls12_suites` (IANA names; all of
/// rustls' when empty).
fn offering(
    version: Option<&str>,
    tls12_suites: &[String],
) -> (
    Arc<CryptoProvider>,
    &'static [&'static rustls::SupportedProtocolVersion],
) {
    let mut p = (*provider()).clone();
    if !tls12_suites.is_empty() {
        p.cipher_suites.retain(|s| {
            s.version() != &rustls::version::TLS12
                || tls12_suites.contains(&format!("{:?}", s.suite()))
        });
    }
    static TLS12_ONLY: [&rustls::SupportedProtocolVersion; 1] = [&rustls::version::TLS12];
    static TLS13_ONLY: [&rustls::SupportedProtocolVersion; 1] = [&rustls::version::TLS13];
    let versions: &'static [&'static rustls::SupportedProtocolVersion] = match version {
        Some("1.2") => &TLS12_ONLY,
        Some("1.3") => &TLS13_ONLY,
        _ => rustls::DEFAULT_VERSIONS,
    };
    (Arc::new(p), versions)
}

/// An instance's server config: serves `identity`, requires a client certificate chained to
/// one of `roots` (PEMs), no resumption; speaks only `version` and, for TLS 1.2, only
/// `tls12_suites` (see [`offering`]).
pub(crate) fn server_config(
    identity: &ClientIdentity,
    roots: &[String],
    version: Option<&str>,
    tls12_suites: &[String],
) -> Result<Arc<ServerConfig>, Error> {
    let (p, versions) = offering(version, tls12_suites);
    let verifier =
        WebPkiClientVerifier::builder_with_provider(Arc::new(root_store(roots)?), p.clone())
            .build()
            .map_err(|e| Error::Tls(format!("client verifier: {e}")))?;
    let mut cfg = ServerConfig::builder_with_provider(p)
        .with_protocol_versions(versions)
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            certs(&identity.cert_chain_pem)?,
            key(&identity.private_key_pem)?,
        )
        .map_err(|e| Error::Tls(format!("server certificate: {e}")))?;
    cfg.session_storage = Arc::new(NoServerSessionStorage {});
    cfg.send_tls13_tickets = 0;
    Ok(Arc::new(cfg))
}

/// The URI SANs of a DER certificate (empty if it cannot be parsed).
pub(crate) fn uri_sans(der: &[u8]) -> Vec<String> {
    let Ok((_, cert)) = X509Certificate::from_der(der) else {
        return Vec::new();
    };
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    san.value
        .general_names
        .iter()
        .filter_map(|g| match g {
            GeneralName::URI(u) => Some((*u).to_owned()),
            _ => None,
        })
        .collect()
}

/// `(trust domain, service)` of a Consul service SPIFFE ID
/// (`spiffe://<td>/ns/<ns>/dc/<dc>/svc/<service>`).
pub(crate) fn spiffe_service(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix("spiffe://")?;
    let (td, path) = rest.split_once('/')?;
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        ["ns", _, "dc", _, "svc", svc] if !svc.is_empty() => {
            Some((td.to_owned(), (*svc).to_owned()))
        }
        _ => None,
    }
}

/// Verifies `chain` (leaf first) against `roots` (PEMs) as a TLS server chain, now.
pub(crate) fn verify_chain(chain: &[CertificateDer<'_>], roots: &[String]) -> Result<(), String> {
    let (leaf, intermediates) = chain.split_first().ok_or("empty chain")?;
    let store = root_store(roots).map_err(|e| e.to_string())?;
    let parsed = ParsedCertificate::try_from(leaf).map_err(|e| e.to_string())?;
    rustls::client::verify_server_cert_signed_by_trust_anchor(
        &parsed,
        &store,
        intermediates,
        UnixTime::now(),
        algorithms().all,
    )
    .map_err(|e| e.to_string())
}

/// Serial number of a DER certificate in colon hex (empty if unparseable).
pub(crate) fn serial(der: &[u8]) -> String {
    X509Certificate::from_der(der)
        .map(|(_, c)| c.raw_serial_as_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spiffe_ids() {
        assert_eq!(
            spiffe_service("spiffe://11.consul/ns/default/dc/dc1/svc/db"),
            Some(("11.consul".into(), "db".into()))
        );
        for bad in [
            "spiffe://11.consul/agent/client/dc/dc1/id/n1",
            "spiffe://11.consul/ns/default/dc/dc1/svc/",
            "https://x/ns/default/dc/dc1/svc/db",
            "spiffe://11.consul",
        ] {
            assert_eq!(spiffe_service(bad), None, "{bad}");
        }
    }

    #[test]
    fn pem_errors_are_tls_errors() {
        assert_eq!(certs("nothing here").unwrap_err().kind(), "tls_material");
        assert!(root_store(&["-----BEGIN CERTIFICATE-----\nzz\n".into()]).is_err());
    }
}
