//! TLS to the local agent, as Consul's API client does it (`api.TLSConfig`, filled from
//! `CONSUL_CACERT`, `CONSUL_CLIENT_CERT`, `CONSUL_CLIENT_KEY`, `CONSUL_TLS_SERVER_NAME` and
//! `CONSUL_HTTP_SSL_VERIFY` by the CLI layer): the rustls client configuration the agent client
//! sends its requests with. The server certificate is verified against the given CA for the
//! configured server name (else the address's host); a client certificate is presented when one
//! is given (the agent's `verify_incoming`).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use super::AgentError;
use crate::tls::provider;
use crate::tls::roots_from_pem;
use crate::tls::verify::{AnyServer, RefuseAll};

/// How to talk TLS to the agent (ignored for `http://` addresses).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentTls {
    /// PEM file of the CA that signed the agent's certificate (`-ca-file`, `CONSUL_CACERT`).
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate (`-client-cert`, `CONSUL_CLIENT_CERT`).
    pub client_cert: Option<PathBuf>,
    /// Its PEM key (`-client-key`, `CONSUL_CLIENT_KEY`).
    pub client_key: Option<PathBuf>,
    /// The name the agent's certificate must carry (`-tls-server-name`,
    /// `CONSUL_TLS_SERVER_NAME`); default: the address's host.
    pub server_name: Option<String>,
    /// `CONSUL_HTTP_SSL_VERIFY=false`: the agent's certificate is not verified (Go's
    /// `InsecureSkipVerify`).
    pub skip_verify: bool,
}

fn tls_error(what: impl std::fmt::Display) -> AgentError {
    AgentError::Tls(what.to_string())
}

fn read(path: &PathBuf, what: &str) -> Result<Vec<u8>, AgentError> {
    std::fs::read(path)
        .map_err(|e| tls_error(format!("reading the {what} {}: {e}", path.display())))
}

impl AgentTls {
    /// The rustls configuration for the agent client. For an `https://` agent a CA is required
    /// unless verification is off (this proxy does not read the system trust store).
    pub(crate) fn client_config(&self, https: bool) -> Result<ClientConfig, AgentError> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(tls_error)?;
        let verifier: Arc<dyn ServerCertVerifier> = if !https {
            // Never used (plain HTTP): refuses any server.
            Arc::new(RefuseAll("TLS to a plain http:// agent address"))
        } else if self.skip_verify {
            Arc::new(AnyServer)
        } else {
            let ca = self.ca_file.as_ref().ok_or_else(|| {
                tls_error(
                    "an https:// agent address needs the agent's CA (-ca-file or CONSUL_CACERT): \
                     this proxy does not read the system trust store",
                )
            })?;
            let roots = root_store(&read(ca, "CA file")?)?;
            let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .map_err(tls_error)?;
            let name = match &self.server_name {
                Some(n) => Some(
                    ServerName::try_from(n.clone())
                        .map_err(|e| tls_error(format!("-tls-server-name {n:?}: {e}")))?,
                ),
                None => None,
            };
            Arc::new(Named { inner, name })
        };
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        match (&self.client_cert, &self.client_key) {
            (Some(cert), Some(key)) => {
                let chain = CertificateDer::pem_slice_iter(&read(cert, "client certificate")?)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| {
                        tls_error(format!("client certificate {}: {e}", cert.display()))
                    })?;
                let key = PrivateKeyDer::from_pem_slice(&read(key, "client key")?)
                    .map_err(|e| tls_error(format!("client key {}: {e}", key.display())))?;
                builder.with_client_auth_cert(chain, key).map_err(tls_error)
            }
            (None, None) => Ok(builder.with_no_client_auth()),
            _ => Err(tls_error(
                "a client certificate needs both -client-cert and -client-key \
                 (CONSUL_CLIENT_CERT and CONSUL_CLIENT_KEY)",
            )),
        }
    }
}

fn root_store(pem: &[u8]) -> Result<RootCertStore, AgentError> {
    roots_from_pem(pem).map_err(|e| tls_error(format!("CA file: {e}")))
}

/// WebPKI verification for a configured name instead of the address's host.
#[derive(Debug)]
struct Named {
    inner: Arc<WebPkiServerVerifier>,
    name: Option<ServerName<'static>>,
}

impl ServerCertVerifier for Named {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let name = self.name.as_ref().unwrap_or(server_name);
        self.inner
            .verify_server_cert(end_entity, intermediates, name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests;
