//! Test PKI of every key type Consul issues (EC P-256/P-384, RSA 2048/4096): roots,
//! intermediates, cross-signed roots and SPIFFE leaves with their keys in the PEM form Consul
//! writes (`agent/connect/generate.go`: SEC1 `EC PRIVATE KEY`, PKCS#1 `RSA PRIVATE KEY`), and an
//! in-memory TLS handshake between two rustls configs. RSA and P-384 keys are fixed test-only
//! keys (`src/tls/testdata/`): ring cannot generate RSA keys.

use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose as Eku, IsCa, KeyPair, KeyUsagePurpose as Ku, PKCS_ECDSA_P256_SHA256,
    PKCS_ECDSA_P384_SHA384, PKCS_RSA_SHA256, SanType, SignatureAlgorithm,
};
use rustls::{ClientConfig, ServerConfig};
use rustls_pki_types::{CertificateDer, ServerName};
use time::OffsetDateTime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::{TD, svc_uri};
use crate::tls::Leaf;

/// A key type Consul can be configured with (`PrivateKeyType`, `PrivateKeyBits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    P256,
    P384,
    Rsa2048,
    Rsa4096,
}

impl Key {
    pub(crate) const ALL: [Self; 4] = [Self::P256, Self::P384, Self::Rsa2048, Self::Rsa4096];

    /// The key for rcgen and the same key as Consul's `PrivateKeyPEM` holds it.
    fn material(self) -> (KeyPair, String) {
        let fixed = |pkcs8: &str, consul: &str, alg: &'static SignatureAlgorithm| {
            let kp = KeyPair::from_pkcs8_pem_and_sign_algo(pkcs8, alg).unwrap();
            (kp, consul.to_owned())
        };
        match self {
            Self::P256 => {
                let kp = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
                let pem = kp.serialize_pem();
                (kp, pem)
            }
            Self::P384 => fixed(
                include_str!("../tls/testdata/p384.pkcs8.pem"),
                include_str!("../tls/testdata/p384.sec1.pem"),
                &PKCS_ECDSA_P384_SHA384,
            ),
            Self::Rsa2048 => fixed(
                include_str!("../tls/testdata/rsa2048.pkcs8.pem"),
                include_str!("../tls/testdata/rsa2048.pkcs1.pem"),
                &PKCS_RSA_SHA256,
            ),
            Self::Rsa4096 => fixed(
                include_str!("../tls/testdata/rsa4096.pkcs8.pem"),
                include_str!("../tls/testdata/rsa4096.pkcs1.pem"),
                &PKCS_RSA_SHA256,
            ),
        }
    }
}

/// A CA certificate (root or intermediate) and its key.
pub(crate) struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
    params: CertificateParams,
}

fn ca_params(cn: &str) -> CertificateParams {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![Ku::KeyCertSign, Ku::CrlSign, Ku::DigitalSignature];
    p.subject_alt_names = vec![SanType::URI(format!("spiffe://{TD}").try_into().unwrap())];
    p.use_authority_key_identifier_extension = true;
    p.not_before = OffsetDateTime::now_utc() - time::Duration::hours(1);
    p.not_after = OffsetDateTime::now_utc() + time::Duration::days(365);
    p
}

/// A leaf as the leaf endpoint returns it, plus its DER chain.
pub(crate) struct IssuedLeaf {
    /// `CertPEM`: the leaf, then the intermediates given to [`Ca::leaf`].
    pub(crate) cert_pem: String,
    /// `PrivateKeyPEM` in Consul's form.
    pub(crate) key_pem: String,
    /// The DER of every certificate of `cert_pem`.
    pub(crate) chain: Vec<CertificateDer<'static>>,
}

impl IssuedLeaf {
    /// Loaded as the proxy loads it.
    pub(crate) fn leaf(&self) -> Leaf {
        Leaf::from_pem(&self.cert_pem, &self.key_pem).unwrap()
    }
}

impl Ca {
    /// A self-signed root.
    pub(crate) fn root(cn: &str, key: Key) -> Self {
        let params = ca_params(cn);
        let issuer = CertifiedIssuer::self_signed(params.clone(), key.material().0).unwrap();
        Self { issuer, params }
    }

    /// An intermediate CA signed by this one.
    pub(crate) fn intermediate(&self, cn: &str, key: Key) -> Self {
        let params = ca_params(cn);
        let issuer =
            CertifiedIssuer::signed_by(params.clone(), key.material().0, &self.issuer).unwrap();
        Self { issuer, params }
    }

    /// This CA's certificate.
    pub(crate) fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// This CA's certificate, PEM.
    pub(crate) fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// This CA's certificate re-issued by `by` (Consul's cross-signed intermediate on rotation).
    pub(crate) fn cross_signed_by(&self, by: &Self) -> CertificateDer<'static> {
        self.params
            .signed_by(self.issuer.key(), &by.issuer)
            .unwrap()
            .der()
            .clone()
    }

    /// A leaf for `svc` with a `key` key; `CertPEM` lists `intermediates` after it.
    pub(crate) fn leaf(&self, svc: &str, key: Key, intermediates: &[&Self]) -> IssuedLeaf {
        let (kp, key_pem) = key.material();
        let mut p = CertificateParams::default();
        p.subject_alt_names = vec![SanType::URI(svc_uri(TD, svc).try_into().unwrap())];
        p.is_ca = IsCa::ExplicitNoCa;
        p.extended_key_usages = vec![Eku::ServerAuth, Eku::ClientAuth];
        p.key_usages = vec![Ku::DigitalSignature, Ku::KeyEncipherment];
        p.use_authority_key_identifier_extension = true;
        p.not_before = OffsetDateTime::now_utc() - time::Duration::hours(1);
        p.not_after = OffsetDateTime::now_utc() + time::Duration::hours(72);
        let cert = p.signed_by(&kp, &self.issuer).unwrap();
        let mut cert_pem = cert.pem();
        let mut chain = vec![cert.der().clone()];
        for i in intermediates {
            cert_pem.push_str(&i.pem());
            chain.push(i.der());
        }
        IssuedLeaf {
            cert_pem,
            key_pem,
            chain,
        }
    }
}

/// What one in-memory handshake (plus a one-byte-each-way exchange, so a server that refuses
/// the client after a TLS 1.3 handshake is seen) gave: the chain the client saw, or both sides'
/// outcomes (`server: … | client: …`).
pub(crate) async fn handshake(
    server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let (c, s) = tokio::io::duplex(64 * 1024);
    let server_side = async move {
        let mut tls = TlsAcceptor::from(server)
            .accept(s)
            .await
            .map_err(|e| format!("server: {e}"))?;
        tls.write_all(b"s")
            .await
            .map_err(|e| format!("server write: {e}"))?;
        tls.flush()
            .await
            .map_err(|e| format!("server flush: {e}"))?;
        let mut b = [0u8; 1];
        tls.read_exact(&mut b)
            .await
            .map_err(|e| format!("server read: {e}"))?;
        Ok::<_, String>(())
    };
    let client_side = async move {
        let name = ServerName::try_from("db.default.dc1.internal.consul").unwrap();
        let mut tls = TlsConnector::from(client)
            .connect(name, c)
            .await
            .map_err(|e| format!("client: {e}"))?;
        let seen: Vec<CertificateDer<'static>> = tls
            .get_ref()
            .1
            .peer_certificates()
            .unwrap_or_default()
            .iter()
            .map(|c| c.clone().into_owned())
            .collect();
        tls.write_all(b"c")
            .await
            .map_err(|e| format!("client write: {e}"))?;
        let mut b = [0u8; 1];
        tls.read_exact(&mut b)
            .await
            .map_err(|e| format!("client read: {e}"))?;
        Ok::<_, String>(seen)
    };
    let both = async { tokio::join!(server_side, client_side) };
    let (s, c) = tokio::time::timeout(Duration::from_secs(10), both)
        .await
        .map_err(|_| "handshake timed out".to_owned())?;
    match (s, c) {
        (Ok(()), Ok(seen)) => Ok(seen),
        (s, c) => Err(format!(
            "{} | {}",
            s.err().unwrap_or_else(|| "server: ok".into()),
            c.err().unwrap_or_else(|| "client: ok".into())
        )),
    }
}

/// Whether a failed [`handshake`] was the server refusing the client (the client got the alert).
pub(crate) fn server_refused(err: &str) -> bool {
    err.split(" | ")
        .any(|side| side.starts_with("client") && side.contains("received fatal alert"))
}

/// Whether a failed [`handshake`] was the client refusing the server (the server got the alert).
pub(crate) fn client_refused(err: &str) -> bool {
    err.split(" | ")
        .any(|side| side.starts_with("server") && side.contains("received fatal alert"))
}
