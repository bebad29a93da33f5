//! Test support (compiled only for tests): an rcgen CA minting SPIFFE leaves (good, expired,
//! no-URI, agent-ID, cross-signed), probe clients, an echo app and hand-built snapshots; `pki`
//! builds CAs of every key type Consul issues, with intermediates.

pub(crate) mod pki;

pub(crate) mod h2;

// Only the sabotage tests name ports before the proxy binds them.
#[cfg(feature = "sabotage")]
#[path = "../tests/e2e/ports.rs"]
mod ports;
#[cfg(feature = "sabotage")]
pub(crate) use ports::free_port;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose as Eku, IsCa, KeyPair, KeyUsagePurpose as Ku, PKCS_ECDSA_P256_SHA256,
    SanType,
};
use rustls::ClientConfig;
use rustls::client::Resumption;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use time::OffsetDateTime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::authz::{DefaultPolicy, Intention, IntentionSet};
use crate::knobs::Knobs;
use crate::snapshot::{Snapshot, Upstream};
use crate::tls::verify::{FixedCert, SpiffeServerVerifier};
use crate::tls::{ExpectedServer, Leaf, TrustRoots, provider};

pub(crate) const TD: &str = "11111111-2222-3333-4444-555555555555.consul";

pub(crate) fn svc_uri(td: &str, svc: &str) -> String {
    format!("spiffe://{td}/ns/default/dc/dc1/svc/{svc}")
}

/// A test certificate authority.
pub(crate) struct TestCa {
    pub(crate) issuer: CertifiedIssuer<'static, KeyPair>,
    params: CertificateParams,
}

/// A leaf: chain (leaf first) and key.
pub(crate) struct TestLeaf {
    pub(crate) chain: Vec<CertificateDer<'static>>,
    pub(crate) key: PrivateKeyDer<'static>,
}

impl TestLeaf {
    pub(crate) fn leaf(&self) -> Leaf {
        Leaf::from_der(self.chain.clone(), self.key.clone_key()).unwrap()
    }
    pub(crate) fn with_extra(mut self, cert: CertificateDer<'static>) -> Self {
        self.chain.push(cert);
        self
    }
}

fn ca_params(cn: &str, td: &str) -> CertificateParams {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![Ku::KeyCertSign, Ku::CrlSign, Ku::DigitalSignature];
    p.subject_alt_names = vec![SanType::URI(format!("spiffe://{td}").try_into().unwrap())];
    p.not_before = OffsetDateTime::now_utc() - time::Duration::hours(1);
    p.not_after = OffsetDateTime::now_utc() + time::Duration::days(365);
    p
}

impl TestCa {
    pub(crate) fn new(cn: &str) -> Self {
        let params = ca_params(cn, TD);
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let issuer = CertifiedIssuer::self_signed(params.clone(), key).unwrap();
        Self { issuer, params }
    }

    pub(crate) fn root(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    pub(crate) fn roots(&self) -> TrustRoots {
        TrustRoots::from_ders(vec![self.root()], TD).unwrap()
    }

    /// This CA's root cert re-issued by `by` (a cross-signed intermediate).
    pub(crate) fn cross_signed_by(&self, by: &Self) -> CertificateDer<'static> {
        let mut p = self.params.clone();
        p.use_authority_key_identifier_extension = true;
        p.signed_by(self.issuer.key(), &by.issuer)
            .unwrap()
            .der()
            .clone()
    }

    /// A leaf with `uri` as its only SAN (none if `None`), valid from `from` to `to` hours
    /// relative to now.
    pub(crate) fn leaf_with(&self, uri: Option<&str>, from_h: i64, to_h: i64) -> TestLeaf {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let mut p = CertificateParams::default();
        p.distinguished_name = DistinguishedName::new();
        if let Some(uri) = uri {
            p.subject_alt_names = vec![SanType::URI(uri.try_into().unwrap())];
        } else {
            p.distinguished_name.push(DnType::CommonName, "web");
        }
        p.is_ca = IsCa::ExplicitNoCa;
        p.extended_key_usages = vec![Eku::ServerAuth, Eku::ClientAuth];
        p.key_usages = vec![Ku::DigitalSignature, Ku::KeyEncipherment];
        p.use_authority_key_identifier_extension = true;
        p.not_before = OffsetDateTime::now_utc() + time::Duration::hours(from_h);
        p.not_after = OffsetDateTime::now_utc() + time::Duration::hours(to_h);
        let cert = p.signed_by(&key, &self.issuer).unwrap();
        TestLeaf {
            chain: vec![cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        }
    }

    /// PEMs as the leaf endpoint returns them: (CertPEM, PrivateKeyPEM).
    pub(crate) fn leaf_pems(&self, svc: &str) -> (String, String) {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let mut p = CertificateParams::default();
        p.subject_alt_names = vec![SanType::URI(svc_uri(TD, svc).try_into().unwrap())];
        p.is_ca = IsCa::ExplicitNoCa;
        p.extended_key_usages = vec![Eku::ServerAuth, Eku::ClientAuth];
        p.use_authority_key_identifier_extension = true;
        let cert = p.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    pub(crate) fn root_pem(&self) -> String {
        self.issuer.pem()
    }

    pub(crate) fn service_leaf(&self, svc: &str) -> TestLeaf {
        self.leaf_with(Some(&svc_uri(TD, svc)), -1, 72)
    }
}

/// A client config presenting `leaf` (or no certificate) and expecting the server to be
/// `expect_svc`, verified against `roots`. Resumption stays on unless `resume` is false.
pub(crate) fn client_config(
    leaf: Option<&TestLeaf>,
    roots: &TrustRoots,
    expect_svc: &str,
    resume: bool,
) -> Arc<ClientConfig> {
    let verifier = SpiffeServerVerifier::new(
        roots.store.clone(),
        ExpectedServer {
            namespace: "default".into(),
            datacenter: "dc1".into(),
            service: expect_svc.into(),
        },
    );
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    let mut cfg = match leaf {
        Some(l) => builder.with_client_cert_resolver(Arc::new(FixedCert(l.leaf().certified))),
        None => builder.with_no_client_auth(),
    };
    if !resume {
        cfg.resumption = Resumption::disabled();
    }
    Arc::new(cfg)
}

pub(crate) async fn connect(
    addr: SocketAddr,
    cfg: Arc<ClientConfig>,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("db.default.dc1.internal.consul").unwrap();
    TlsConnector::from(cfg).connect(name, tcp).await
}

/// Sends `msg` and expects it echoed back. `Err` = refused (handshake error, EOF, reset).
pub(crate) async fn probe(
    addr: SocketAddr,
    cfg: Arc<ClientConfig>,
    msg: &[u8],
) -> Result<Vec<u8>, String> {
    let fut = async {
        let mut s = connect(addr, cfg)
            .await
            .map_err(|e| format!("connect/handshake: {e}"))?;
        echo_once(&mut s, msg).await
    };
    tokio::time::timeout(Duration::from_secs(5), fut)
        .await
        .map_err(|_| "probe timed out".to_owned())?
}

pub(crate) async fn echo_once<S: AsyncReadExt + AsyncWriteExt + Unpin>(
    s: &mut S,
    msg: &[u8],
) -> Result<Vec<u8>, String> {
    s.write_all(msg).await.map_err(|e| format!("write: {e}"))?;
    let mut buf = vec![0u8; msg.len()];
    s.read_exact(&mut buf)
        .await
        .map_err(|e| format!("read: {e}"))?;
    Ok(buf)
}

/// A TCP echo server; returns its address.
pub(crate) async fn echo_app() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

/// A snapshot for service `db` on 127.0.0.1:0 in front of `app`.
pub(crate) fn snapshot(
    ca: &TestCa,
    app: SocketAddr,
    intentions: Vec<Intention>,
    default_policy: DefaultPolicy,
    knobs: Knobs,
    upstreams: Vec<Upstream>,
) -> Snapshot {
    Snapshot {
        proxy_id: "db-sidecar-proxy".into(),
        service: "db".into(),
        datacenter: "dc1".into(),
        public_listener: "127.0.0.1:0".parse().unwrap(),
        local_app: app.into(),
        leaf: ca.service_leaf("db").leaf(),
        roots: ca.roots(),
        intentions: Arc::new(IntentionSet::new("db", intentions)),
        default_policy,
        knobs,
        upstreams,
        transparent: None,
        path_normalization: Default::default(),
        mesh: Default::default(),
        jwt: Default::default(),
        hooks: Default::default(),
    }
}

/// Waits until `f` returns true, polling every 20 ms, failing after `limit`.
pub(crate) async fn eventually<F: FnMut() -> bool>(limit: Duration, mut f: F) {
    let deadline = tokio::time::Instant::now() + limit;
    while !f() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not reached within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
