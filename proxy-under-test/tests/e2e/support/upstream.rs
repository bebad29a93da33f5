//! Fake upstream instances: mTLS servers presenting a sim-issued leaf, registered in the sim's
//! catalog as connect-proxies, answering with their instance name.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_sim::Control;
use agent_sim::ca::ClientIdentity;
use rustls::ServerConfig;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use super::provider;
use super::tls::{certs, root_store, uris};

/// An mTLS `cache` instance: serves `identity`, requires a client certificate chaining to the
/// sim's roots, records each client's URI SAN, and answers every line with `<name> <line>`.
pub(crate) struct FakeUpstream {
    pub(crate) name: String,
    pub(crate) addr: SocketAddr,
    pub(crate) clients: Arc<Mutex<Vec<String>>>,
}

impl FakeUpstream {
    pub(crate) async fn start(name: &str, identity: &ClientIdentity, root_pems: &[String]) -> Self {
        let verifier =
            WebPkiClientVerifier::builder_with_provider(root_store(root_pems), provider())
                .build()
                .unwrap();
        let key = PrivateKeyDer::from_pem_slice(identity.private_key_pem.as_bytes()).unwrap();
        let cfg = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs(&identity.cert_chain_pem), key)
            .unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(cfg));
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let clients = Arc::new(Mutex::new(Vec::new()));
        let (seen, me) = (clients.clone(), name.to_owned());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = l.accept().await {
                let (acceptor, seen, me) = (acceptor.clone(), seen.clone(), me.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let uri = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .and_then(|c| uris(c).into_iter().next())
                        .unwrap_or_default();
                    seen.lock().unwrap().push(uri);
                    let (r, mut w) = tokio::io::split(tls);
                    let mut lines = BufReader::new(r).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        if w.write_all(format!("{me} {line}\n").as_bytes())
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        Self {
            name: name.to_owned(),
            addr,
            clients,
        }
    }

    /// Registers this instance in the catalog on node `node` as a connect-proxy for `service`,
    /// with a passing check `<id>-alive`.
    pub(crate) fn register(&self, c: &Control, node: &str, service: &str) {
        c.catalog_register(&json!({
            "Node": node, "Address": "127.0.0.1",
            "Service": {"Kind": "connect-proxy", "ID": self.name, "Service": format!("{service}-sidecar-proxy"),
                "Port": self.addr.port(), "Proxy": {"DestinationServiceName": service}},
            "Check": {"CheckID": format!("{}-alive", self.name), "Name": "alive", "Status": "passing",
                "ServiceID": self.name}
        }))
        .unwrap();
    }

    pub(crate) fn client_uris(&self) -> Vec<String> {
        self.clients.lock().unwrap().clone()
    }
}

/// Sends a line through a local upstream listener; returns the answering instance's name.
pub(crate) async fn via_upstream(addr: SocketAddr) -> Result<String, String> {
    let fut = async {
        let mut s = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        s.write_all(b"hello\n")
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut line = String::new();
        BufReader::new(&mut s)
            .read_line(&mut line)
            .await
            .map_err(|e| format!("read: {e}"))?;
        match line.trim_end().strip_suffix(" hello") {
            Some(name) => Ok(name.to_owned()),
            None => Err(format!("unexpected answer {line:?}")),
        }
    };
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .map_err(|_| "upstream round trip timed out".to_owned())?
}
