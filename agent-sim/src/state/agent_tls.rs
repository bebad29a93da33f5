//! The agent's HTTPS and gRPC-over-TLS: rustls server configurations built from the agent's own
//! TLS material (`model::agent_tls`), optional client-certificate verification
//! (`verify_incoming`), and the switch that decides which server certificate the accept loops
//! present (the agent CA's, or an untrusted CA's to play an impostor agent). Switching cuts every
//! open connection, so the proxy's next request needs a new handshake.

use std::sync::Arc;

use rustls::ServerConfig;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::sync::watch;

use crate::model::agent_tls::{AgentTlsMaterial, CertPair};
use crate::state::error::SimError;

/// What an accept loop is told: the server configuration to present (`None`: plain TCP), and
/// where to register each open connection so a switch can cut it at once.
#[derive(Debug, Clone)]
pub(crate) struct TlsRx {
    pub(crate) config: watch::Receiver<Option<Arc<ServerConfig>>>,
    pub(crate) open: OpenConns,
}

/// The open connections of one port (their tasks' abort handles).
pub(crate) type OpenConns = Arc<parking_lot::Mutex<Vec<tokio::task::AbortHandle>>>;

/// How the agent serves TLS (`SimConfig::agent_tls`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTlsConfig {
    /// `tls.https.verify_incoming`: the HTTPS port requires a client certificate signed by the
    /// agent CA. The gRPC port never does (`consul connect envoy` gives Envoy no client
    /// certificate for the xDS stream).
    pub verify_incoming: bool,
    /// The DNS name the server certificate is issued for (besides `localhost` and the
    /// loopback addresses); `CONSUL_TLS_SERVER_NAME`.
    pub server_name: String,
}

/// Which CA's server certificate the agent presents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerCert {
    /// The agent CA's (what proxies are told to trust).
    Agent,
    /// An unrelated CA's: a correct proxy refuses to talk to the agent.
    Untrusted,
}

/// The agent's TLS: the material, one configuration per port and certificate, and the switch.
#[derive(Debug)]
pub struct AgentTls {
    material: AgentTlsMaterial,
    verify_incoming: bool,
    http: [Arc<ServerConfig>; 2],
    grpc: [Arc<ServerConfig>; 2],
    http_tx: watch::Sender<Option<Arc<ServerConfig>>>,
    grpc_tx: watch::Sender<Option<Arc<ServerConfig>>>,
    http_open: OpenConns,
    grpc_open: OpenConns,
}

impl AgentTls {
    /// Generates the material and presents the agent CA's certificate.
    pub(crate) fn new(cfg: &AgentTlsConfig) -> Result<Self, SimError> {
        let material =
            AgentTlsMaterial::generate(&cfg.server_name, time::OffsetDateTime::now_utc())?;
        let ca = cert(&material.ca_pem)?;
        let http = [
            server_config(&material.server, cfg.verify_incoming.then_some(&ca), None)?,
            server_config(
                &material.untrusted_server,
                cfg.verify_incoming.then_some(&ca),
                None,
            )?,
        ];
        let grpc = [
            server_config(&material.server, None, Some("h2"))?,
            server_config(&material.untrusted_server, None, Some("h2"))?,
        ];
        let (http_tx, _) = watch::channel(Some(http[0].clone()));
        let (grpc_tx, _) = watch::channel(Some(grpc[0].clone()));
        Ok(Self {
            material,
            verify_incoming: cfg.verify_incoming,
            http,
            grpc,
            http_tx,
            grpc_tx,
            http_open: OpenConns::default(),
            grpc_open: OpenConns::default(),
        })
    }

    /// The PEMs (the agent CA, the client certificate, the untrusted CA).
    pub fn material(&self) -> &AgentTlsMaterial {
        &self.material
    }

    /// Whether the HTTPS port requires a client certificate.
    pub fn verify_incoming(&self) -> bool {
        self.verify_incoming
    }

    /// Presents `which` CA's server certificate from now on, on both ports; open connections
    /// are cut before it returns (their tasks never run again), so nothing written after it
    /// reaches a client over a connection made with the previous certificate.
    pub fn present(&self, which: ServerCert) {
        for open in [&self.http_open, &self.grpc_open] {
            for conn in open.lock().drain(..) {
                conn.abort();
            }
        }
        let i = usize::from(which == ServerCert::Untrusted);
        let swap = |tx: &watch::Sender<Option<Arc<ServerConfig>>>, cfg: &Arc<ServerConfig>| {
            tx.send_if_modified(|cur| {
                if cur.as_ref().is_some_and(|c| Arc::ptr_eq(c, cfg)) {
                    return false;
                }
                *cur = Some(cfg.clone());
                true
            });
        };
        swap(&self.http_tx, &self.http[i]);
        swap(&self.grpc_tx, &self.grpc[i]);
        tracing::info!(?which, "agent TLS: presenting a new server certificate");
    }

    /// What the HTTP accept loop presents.
    pub(crate) fn http_rx(&self) -> TlsRx {
        TlsRx {
            config: self.http_tx.subscribe(),
            open: self.http_open.clone(),
        }
    }

    /// What the gRPC accept loop presents.
    pub(crate) fn grpc_rx(&self) -> TlsRx {
        TlsRx {
            config: self.grpc_tx.subscribe(),
            open: self.grpc_open.clone(),
        }
    }
}

/// A receiver that always says "plain TCP".
pub(crate) fn plain() -> TlsRx {
    TlsRx {
        config: watch::channel(None).1,
        open: OpenConns::default(),
    }
}

fn cert(pem: &str) -> Result<CertificateDer<'static>, SimError> {
    CertificateDer::from_pem_slice(pem.as_bytes()).map_err(tls_error)
}

fn tls_error(message: impl std::fmt::Display) -> SimError {
    SimError::Ca(crate::model::ca::CaError::Crypto(format!(
        "agent TLS: {message}"
    )))
}

fn server_config(
    pair: &CertPair,
    client_ca: Option<&CertificateDer<'static>>,
    alpn: Option<&str>,
) -> Result<Arc<ServerConfig>, SimError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?;
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.clone()).map_err(tls_error)?;
            let verifier = WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                .build()
                .map_err(tls_error)?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let key = PrivateKeyDer::from_pem_slice(pair.key_pem.as_bytes()).map_err(tls_error)?;
    let mut cfg = builder
        .with_single_cert(vec![cert(&pair.cert_pem)?], key)
        .map_err(tls_error)?;
    // HTTPS: no ALPN (HTTP/1.1 whatever the client offers); gRPC: h2.
    cfg.alpn_protocols = alpn.map(|a| a.as_bytes().to_vec()).into_iter().collect();
    Ok(Arc::new(cfg))
}

#[cfg(test)]
mod tests;
