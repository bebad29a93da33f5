//! TLS for a remote JWKS fetched over `https`, as Consul renders the JWKS cluster for Envoy
//! (`makeJWTCertValidationContext` in `agent/xds/clusters.go`).
//!
//! - `JWKSCluster.TLSCertificates.TrustedCA` (a file, inline PEM or inline bytes): the server's
//!   chain must lead to that CA. Its name is not checked: Consul sets no SAN matcher on the
//!   validation context, and Envoy checks names only against matchers.
//! - No `TLSCertificates`: Consul renders an empty validation context, with which Envoy
//!   verifies nothing; so does this, and says so in a warning naming the fix.
//! - A CA from an environment variable (of Envoy's process) or a certificate provider instance
//!   (an Envoy plugin): not available here, so the fetch fails (that provider's tokens fail, as
//!   with a failed fetch) and the error says what to configure instead.
//!
//! The handshake signatures are checked in every case. An `http` URI gets no TLS from
//! `TLSCertificates` (Consul renders no transport socket for it): a certificate is refused.

use std::sync::Arc;

use base64::Engine as _;
use rustls::client::danger::{ServerCertVerified, ServerCertVerifier};
use rustls::client::verify_server_cert_signed_by_trust_anchor;
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use super::provider::{JwksTls, TrustedCa};
use crate::tls::verify::{AnyServer, RefuseAll};
use crate::tls::{provider, roots_from_pem};

/// What an `https` JWKS server is verified against.
#[derive(Debug, Clone)]
pub(crate) enum Trust {
    /// No `TLSCertificates`: any server (Envoy's empty validation context).
    Any,
    /// The chain must lead to one of these.
    Roots(Arc<RootCertStore>),
    /// Configured, but not usable here: why, and what to configure instead.
    Unusable(String),
    /// A plain `http` URI: no TLS expected, any certificate refused.
    Plain,
}

impl Trust {
    /// The trust a fetch of `uri` uses: `tls` (a `JWKSCluster`'s `TLSCertificates`) for an
    /// `https` URI, read now; for any other, none ([`Trust::Plain`]).
    pub(crate) fn for_uri(uri: &str, tls: Option<&JwksTls>) -> Self {
        let https = uri
            .get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
        if https { Self::of(tls) } else { Self::Plain }
    }

    /// The trust `tls` configures.
    fn of(tls: Option<&JwksTls>) -> Self {
        let Some(tls) = tls else {
            return Self::Any;
        };
        if tls.ca_certificate_provider_instance.is_some() {
            return Self::Unusable(
                "JWKSCluster.TLSCertificates.CaCertificateProviderInstance is an Envoy plugin \
                 this proxy does not have: use TrustedCA (Filename, InlineString or InlineBytes)"
                    .to_owned(),
            );
        }
        match &tls.trusted_ca {
            None => Self::Any,
            Some(ca) => match ca_pem(ca).and_then(|pem| roots_from_pem(&pem)) {
                Ok(r) => Self::Roots(Arc::new(r)),
                Err(e) => Self::Unusable(format!("JWKSCluster.TLSCertificates.TrustedCA: {e}")),
            },
        }
    }

    /// The client configuration for one fetch.
    pub(crate) fn client_config(&self) -> Result<ClientConfig, String> {
        let verifier: Arc<dyn ServerCertVerifier> = match self {
            Self::Any => Arc::new(AnyServer),
            Self::Roots(roots) => Arc::new(ChainOnly(roots.clone())),
            Self::Plain => Arc::new(RefuseAll("TLS to a plain http:// JWKS URI")),
            Self::Unusable(why) => return Err(why.clone()),
        };
        Ok(ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth())
    }
}

/// The CA's PEM from the one source given.
fn ca_pem(ca: &TrustedCa) -> Result<Vec<u8>, String> {
    if !ca.filename.is_empty() {
        std::fs::read(&ca.filename).map_err(|e| format!("reading Filename {:?}: {e}", ca.filename))
    } else if !ca.inline_string.is_empty() {
        Ok(ca.inline_string.as_bytes().to_vec())
    } else if !ca.inline_bytes.is_empty() {
        base64::engine::general_purpose::STANDARD
            .decode(&ca.inline_bytes)
            .map_err(|e| format!("InlineBytes is not base64: {e}"))
    } else if !ca.environment_variable.is_empty() {
        Err(format!(
            "EnvironmentVariable {:?} names a variable of Envoy's process, which this proxy \
             does not read: use Filename, InlineString or InlineBytes",
            ca.environment_variable
        ))
    } else {
        Err("none of Filename, EnvironmentVariable, InlineString or InlineBytes is set".to_owned())
    }
}

/// The chain is verified against the roots; the name is not (see the module's text).
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
    ) -> Result<ServerCertVerified, rustls::Error> {
        let parsed = ParsedCertificate::try_from(end_entity)?;
        verify_server_cert_signed_by_trust_anchor(
            &parsed,
            &self.0,
            intermediates,
            now,
            provider().signature_verification_algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    crate::tls::verify::verify_signatures!();
}

#[cfg(test)]
mod tests;
