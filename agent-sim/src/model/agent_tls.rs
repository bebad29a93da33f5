//! The agent's own TLS material (Consul's `tls.defaults` / `tls.https` / `tls.grpc`): a CA that
//! is not the Connect CA, a server certificate for the agent's HTTPS and gRPC ports, a client
//! certificate for a proxy to present when the agent verifies incoming connections, and a
//! second, unrelated CA with its own server certificate (what an impostor agent would present).
//! PEM only; the state floor turns it into rustls configurations.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use time::{Duration, OffsetDateTime};

use super::ca::CaError;

/// The name the server certificate is issued for besides `localhost` and the loopback
/// addresses: Consul's convention for agents (`server.<dc>.<domain>` for servers,
/// `localhost` for clients; `CONSUL_TLS_SERVER_NAME` names one of them).
pub fn default_server_name(datacenter: &str) -> String {
    format!("server.{datacenter}.consul")
}

/// A certificate and its key, in PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertPair {
    /// `CERTIFICATE` PEM.
    pub cert_pem: String,
    /// PKCS#8 `PRIVATE KEY` PEM.
    pub key_pem: String,
}

/// Everything the agent's TLS needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTlsMaterial {
    /// The agent CA (`tls.defaults.ca_file`): what a proxy trusts (`CONSUL_CACERT`).
    pub ca_pem: String,
    /// The server certificate the agent presents, signed by the agent CA, for `server_name`,
    /// `localhost`, `127.0.0.1` and `::1`.
    pub server: CertPair,
    /// A client certificate signed by the agent CA (`CONSUL_CLIENT_CERT`/`CONSUL_CLIENT_KEY`).
    pub client: CertPair,
    /// Another CA, trusted by nobody.
    pub untrusted_ca_pem: String,
    /// A server certificate for the same names, signed by the untrusted CA.
    pub untrusted_server: CertPair,
    /// The name the server certificates carry first (`CONSUL_TLS_SERVER_NAME`).
    pub server_name: String,
}

impl AgentTlsMaterial {
    /// Fresh material (EC P-256 keys) valid from an hour ago for a year.
    pub fn generate(server_name: &str, now: OffsetDateTime) -> Result<Self, CaError> {
        let (ca_pem, agent_ca) = ca("Consul Agent CA", now)?;
        let (untrusted_ca_pem, untrusted) = ca("Untrusted Agent CA", now)?;
        Ok(Self {
            server: server_cert(server_name, &agent_ca, now)?,
            client: client_cert(&agent_ca, now)?,
            untrusted_server: server_cert(server_name, &untrusted, now)?,
            ca_pem,
            untrusted_ca_pem,
            server_name: server_name.to_owned(),
        })
    }
}

fn base(cn: &str, now: OffsetDateTime) -> CertificateParams {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    p.distinguished_name = dn;
    p.not_before = now - Duration::hours(1);
    p.not_after = now + Duration::days(365);
    p
}

fn ca(cn: &str, now: OffsetDateTime) -> Result<(String, Issuer<'static, KeyPair>), CaError> {
    let mut p = base(cn, now);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate()?;
    let cert = p.self_signed(&key)?;
    Ok((cert.pem(), Issuer::new(p, key)))
}

fn server_cert(
    name: &str,
    issuer: &Issuer<'_, KeyPair>,
    now: OffsetDateTime,
) -> Result<CertPair, CaError> {
    let mut p = base(name, now);
    p.subject_alt_names = vec![
        SanType::DnsName(name.try_into()?),
        SanType::DnsName("localhost".try_into()?),
        SanType::IpAddress([127, 0, 0, 1].into()),
        SanType::IpAddress(std::net::Ipv6Addr::LOCALHOST.into()),
    ];
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    signed(&p, issuer)
}

fn client_cert(issuer: &Issuer<'_, KeyPair>, now: OffsetDateTime) -> Result<CertPair, CaError> {
    let mut p = base("proxy.client.consul", now);
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    signed(&p, issuer)
}

fn signed(p: &CertificateParams, issuer: &Issuer<'_, KeyPair>) -> Result<CertPair, CaError> {
    let key = KeyPair::generate()?;
    let cert = p.signed_by(&key, issuer)?;
    Ok(CertPair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}
