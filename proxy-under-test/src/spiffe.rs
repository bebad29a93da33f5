//! Consul SPIFFE identities: parsing URI SANs (`spiffe://<td>/ns/<ns>/dc/<dc>/svc/<name>`) and
//! reading them out of DER certificates.

use std::fmt;

mod sans_memo;

pub use sans_memo::uri_sans_memo;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

/// Why a certificate or URI does not name a Consul service.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpiffeError {
    /// The certificate could not be parsed as X.509.
    #[error("certificate is not valid X.509: {0}")]
    BadCertificate(String),
    /// The certificate has no URI SAN at all.
    #[error("certificate has no URI SAN")]
    NoUri,
    /// The URI is not in any SPIFFE form Consul issues (Consul's own error text).
    #[error("SPIFFE ID is not in the expected format: {0}")]
    BadFormat(String),
    /// The URI is a valid Consul SPIFFE ID, but not a service (agent, server, gateway, signing).
    #[error("SPIFFE ID is not a service identity: {0}")]
    NotAService(String),
}

/// A Consul service identity from a leaf certificate's URI SAN.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServiceId {
    /// Trust domain, e.g. `7e567ac2-....consul` (never checked by default, as Consul does).
    pub trust_domain: String,
    /// Admin partition (`default` in CE).
    pub partition: String,
    /// Namespace (`default` in CE).
    pub namespace: String,
    /// Datacenter.
    pub datacenter: String,
    /// Service name.
    pub service: String,
}

impl fmt::Display for ServiceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "spiffe://{}", self.trust_domain)?;
        if self.partition != "default" {
            write!(f, "/ap/{}", self.partition)?;
        }
        write!(
            f,
            "/ns/{}/dc/{}/svc/{}",
            self.namespace, self.datacenter, self.service
        )
    }
}

/// Parses a URI as a Consul SPIFFE ID and requires it to be a *service* ID.
pub fn parse_service_uri(uri: &str) -> Result<ServiceId, SpiffeError> {
    let bad = || SpiffeError::BadFormat(uri.to_owned());
    let (scheme, rest) = uri.split_once("://").ok_or_else(bad)?;
    if !scheme.eq_ignore_ascii_case("spiffe") {
        return Err(bad());
    }
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if host.is_empty() {
        return Err(bad());
    }
    let path = percent_decode(path).ok_or_else(bad)?;
    let segs: Vec<&str> = path.split('/').skip(1).collect();
    if path.is_empty() {
        // The signing / trust-domain ID.
        return Err(SpiffeError::NotAService(uri.to_owned()));
    }
    let (partition, segs) = match segs.as_slice() {
        ["ap", ap, rest @ ..] => (*ap, rest),
        other => ("default", other),
    };
    match segs {
        ["ns", ns, "dc", dc, "svc", svc] if nonempty(&[partition, ns, dc, svc]) => Ok(ServiceId {
            trust_domain: host.to_ascii_lowercase(),
            partition: partition.to_owned(),
            namespace: (*ns).to_owned(),
            datacenter: (*dc).to_owned(),
            service: (*svc).to_owned(),
        }),
        ["agent", "client", "dc", dc, "id", id] if nonempty(&[dc, id]) => {
            Err(SpiffeError::NotAService(uri.to_owned()))
        }
        ["agent", "server", "dc", dc] | ["gateway", "mesh", "dc", dc] if !dc.is_empty() => {
            Err(SpiffeError::NotAService(uri.to_owned()))
        }
        ["mesh", "dc", dc] if !dc.is_empty() => Err(SpiffeError::NotAService(uri.to_owned())),
        _ => Err(bad()),
    }
}

/// Lenient identity extraction used when `verify_spiffe_uri` is off: any URI whose path contains
/// a `svc/<name>` pair names that service (namespace from `ns/<ns>` if present, else `default`).
pub fn parse_service_uri_lenient(uri: &str) -> Result<ServiceId, SpiffeError> {
    if let Ok(id) = parse_service_uri(uri) {
        return Ok(id);
    }
    let (host, path) = match uri.split_once("://") {
        Some((_, rest)) => match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        },
        None => ("", uri),
    };
    let path = percent_decode(path).unwrap_or_else(|| path.to_owned());
    let segs: Vec<&str> = path.split('/').collect();
    let value_after = |key: &str| {
        segs.windows(2)
            .rev()
            .find(|w| w[0] == key && !w[1].is_empty())
            .map(|w| w[1].to_owned())
    };
    let service = value_after("svc").ok_or_else(|| SpiffeError::NotAService(uri.to_owned()))?;
    Ok(ServiceId {
        trust_domain: host.to_ascii_lowercase(),
        partition: value_after("ap").unwrap_or_else(|| "default".to_owned()),
        namespace: value_after("ns").unwrap_or_else(|| "default".to_owned()),
        datacenter: value_after("dc").unwrap_or_default(),
        service,
    })
}

/// All URI SANs of a DER certificate, in order.
pub fn uri_sans(der: &[u8]) -> Result<Vec<String>, SpiffeError> {
    let (_, cert) =
        X509Certificate::from_der(der).map_err(|e| SpiffeError::BadCertificate(e.to_string()))?;
    let san = cert
        .subject_alternative_name()
        .map_err(|e| SpiffeError::BadCertificate(e.to_string()))?;
    Ok(san
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|g| match g {
                    GeneralName::URI(u) => Some((*u).to_owned()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default())
}

/// The service identity of a peer leaf: its **first** URI SAN, parsed strictly or leniently.
/// The SANs come from the process's memo ([`uri_sans_memo`]).
pub fn service_id_of_cert(der: &[u8], strict: bool) -> Result<ServiceId, SpiffeError> {
    let uris = uri_sans_memo(der)?;
    let first = uris.first().ok_or(SpiffeError::NoUri)?;
    if strict {
        parse_service_uri(first)
    } else {
        parse_service_uri_lenient(first)
    }
}

/// `notAfter` of a DER certificate as Unix seconds.
pub fn not_after_unix(der: &[u8]) -> Result<i64, SpiffeError> {
    let (_, cert) =
        X509Certificate::from_der(der).map_err(|e| SpiffeError::BadCertificate(e.to_string()))?;
    Ok(cert.validity().not_after.timestamp())
}

fn nonempty(parts: &[&str]) -> bool {
    parts.iter().all(|p| !p.is_empty())
}

fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TD: &str = "11111111-2222-3333-4444-555555555555.consul";

    #[test]
    fn service_ids_parse() {
        let id = parse_service_uri(&format!("spiffe://{TD}/ns/default/dc/dc1/svc/web")).unwrap();
        assert_eq!(id.service, "web");
        assert_eq!(id.namespace, "default");
        assert_eq!(id.partition, "default");
        assert_eq!(id.datacenter, "dc1");
        assert_eq!(id.trust_domain, TD);
        assert_eq!(
            id.to_string(),
            format!("spiffe://{TD}/ns/default/dc/dc1/svc/web")
        );
        let ap = parse_service_uri("spiffe://td/ap/p1/ns/n/dc/d/svc/s%2Dx").unwrap();
        assert_eq!((ap.partition.as_str(), ap.service.as_str()), ("p1", "s-x"));
    }

    #[test]
    fn non_service_ids_are_refused() {
        for uri in [
            format!("spiffe://{TD}/agent/client/dc/dc1/id/node1"),
            format!("spiffe://{TD}/agent/server/dc/dc1"),
            format!("spiffe://{TD}/gateway/mesh/dc/dc1"),
            format!("spiffe://{TD}"),
        ] {
            assert!(
                matches!(parse_service_uri(&uri), Err(SpiffeError::NotAService(_))),
                "{uri}"
            );
        }
    }

    #[test]
    fn malformed_ids_are_refused() {
        for uri in [
            "https://td/ns/default/dc/dc1/svc/web",
            "spiffe:///ns/default/dc/dc1/svc/web",
            "spiffe://td/ns/default/svc/web",
            "spiffe://td/ns/default/dc/dc1/svc/",
            "spiffe://td/ns/default/dc/dc1/svc/web/extra",
            "web",
        ] {
            assert_eq!(
                parse_service_uri(uri),
                Err(SpiffeError::BadFormat(uri.to_owned())),
                "{uri}"
            );
        }
        assert_eq!(
            SpiffeError::BadFormat("x".into()).to_string(),
            "SPIFFE ID is not in the expected format: x"
        );
    }

    #[test]
    fn lenient_parsing_finds_the_service() {
        let id = parse_service_uri_lenient("spiffe://other.example/workload/svc/web").unwrap();
        assert_eq!(
            (id.service.as_str(), id.namespace.as_str()),
            ("web", "default")
        );
        assert!(parse_service_uri_lenient("spiffe://td/agent/client/dc/d/id/n").is_err());
    }
}
