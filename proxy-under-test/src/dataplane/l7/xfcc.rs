//! `X-Forwarded-Client-Cert` on inbound requests as Consul configures Envoy's connection
//! manager: `APPEND_FORWARD` with `set_current_client_cert_details {subject, cert, chain, dns,
//! uri}` (one element `By=<own URI>;Hash=<sha256 of the caller's leaf>;Cert="…";Chain="…";
//! Subject="…";URI=<caller's URI>` appended to whatever the caller sent), or `SANITIZE` (header
//! removed) when the `mesh` entry sets `HTTP.SanitizeXForwardedClientCert` or the service speaks
//! gRPC (`includeXFCC && notGRPC` in `listeners.go`).

use std::sync::{Mutex, PoisonError};

use base64::Engine;
use http::{HeaderMap, HeaderValue};
use rustls_pki_types::CertificateDer;
use sha2::{Digest, Sha256};

use crate::spiffe::uri_sans;

/// The header.
pub(crate) const XFCC: &str = "x-forwarded-client-cert";

/// Applies the connection manager's XFCC policy to an inbound request's headers: this
/// connection's `element` (see [`Element`]) appended, or the header removed (`None`: sanitize).
pub(crate) fn apply(headers: &mut HeaderMap, element: Option<&HeaderValue>) {
    let Some(element) = element else {
        headers.remove(XFCC);
        return;
    };
    let prev = headers.get(XFCC).and_then(|v| v.to_str().ok());
    let value = match (prev, element.to_str()) {
        (Some(prev), Ok(el)) if !prev.is_empty() => HeaderValue::from_str(&format!("{prev},{el}")),
        _ => Ok(element.clone()),
    };
    headers.remove(XFCC);
    if let Ok(v) = value {
        headers.insert(XFCC, v);
    }
}

/// One connection's XFCC element, built once per own certificate: the caller's chain is fixed
/// for the connection, and PEM, URL encoding and certificate parsing per request cost the
/// HTTP/2 path about a tenth of its CPU (hop_bench profile). A rotated own leaf builds it anew.
#[derive(Debug, Default)]
pub(crate) struct Element(Mutex<Option<(CertificateDer<'static>, HeaderValue)>>);

impl Element {
    /// The element for `own` and the connection's `peer_chain`.
    pub(crate) fn get(
        &self,
        own: &CertificateDer<'_>,
        peer_chain: &[CertificateDer<'_>],
    ) -> Option<HeaderValue> {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((cert, value)) = slot.as_ref()
            && cert.as_ref() == own.as_ref()
        {
            return Some(value.clone());
        }
        let value = HeaderValue::from_str(&element(own, peer_chain)).ok()?;
        *slot = Some((own.clone().into_owned(), value.clone()));
        Some(value)
    }
}

/// This hop's element: the details of the caller's certificate as Envoy writes them.
pub(crate) fn element(own: &CertificateDer<'_>, peer_chain: &[CertificateDer<'_>]) -> String {
    let mut parts = Vec::new();
    for uri in uri_sans(own).unwrap_or_default() {
        parts.push(format!("By={uri}"));
    }
    let Some(leaf) = peer_chain.first() else {
        return parts.join(";");
    };
    let hash = Sha256::digest(leaf.as_ref());
    parts.push(format!("Hash={}", hex_lower(&hash)));
    parts.push(format!("Cert=\"{}\"", url_encode(&pem(leaf))));
    let chain: String = peer_chain.iter().map(|c| pem(c)).collect();
    parts.push(format!("Chain=\"{}\"", url_encode(&chain)));
    parts.push(format!("Subject=\"{}\"", subject(leaf)));
    for uri in uri_sans(leaf).unwrap_or_default() {
        parts.push(format!("URI={uri}"));
    }
    parts.join(";")
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn pem(der: &CertificateDer<'_>) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The subject in RFC 2253 order (empty for Consul's leaves).
fn subject(der: &CertificateDer<'_>) -> String {
    use x509_parser::prelude::{FromDer, X509Certificate};
    X509Certificate::from_der(der.as_ref())
        .map(|(_, c)| c.subject().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TestCa;

    #[test]
    fn appends_one_element_naming_the_caller_or_sanitizes() {
        let ca = TestCa::new("Consul CA");
        let own = ca.service_leaf("db").leaf();
        let web = ca.service_leaf("web").leaf();
        let own_der = own.certified.cert[0].clone();
        let web_chain = web.certified.cert.clone();
        let mut h = HeaderMap::new();
        h.insert(
            XFCC,
            HeaderValue::from_static("URI=spiffe://evil/ns/default/dc/dc1/svc/admin"),
        );
        let el = Element::default();
        let value = el.get(&own_der, &web_chain).unwrap();
        apply(&mut h, Some(&value));
        let v = h.get(XFCC).unwrap().to_str().unwrap();
        let elements: Vec<&str> = v.split(',').collect();
        assert_eq!(elements.len(), 2, "{v}");
        let last = elements[1];
        assert!(last.starts_with("By=spiffe://"), "{last}");
        assert!(last.contains("/svc/db;Hash="), "{last}");
        assert!(last.ends_with("/svc/web"), "{last}");
        assert!(
            last.contains("Cert=\"-----BEGIN%20CERTIFICATE-----%0A"),
            "{last}"
        );
        assert!(last.contains(";Subject=\"\";URI=spiffe://"), "{last}");
        let mut h = HeaderMap::new();
        apply(&mut h, el.get(&own_der, &web_chain).as_ref());
        assert_eq!(h.get(XFCC).unwrap().to_str().unwrap().split(',').count(), 1);
        h.insert(XFCC, HeaderValue::from_static("URI=x"));
        apply(&mut h, None);
        assert!(h.get(XFCC).is_none(), "sanitized");
    }

    #[test]
    fn the_element_is_built_again_for_a_rotated_own_leaf() {
        let ca = TestCa::new("Consul CA");
        let (old, new) = (ca.service_leaf("db").leaf(), ca.service_leaf("db").leaf());
        let web = ca.service_leaf("web").leaf();
        let chain = web.certified.cert.clone();
        let el = Element::default();
        let first = el.get(&old.certified.cert[0], &chain).unwrap();
        assert_eq!(el.get(&old.certified.cert[0], &chain).unwrap(), first);
        assert_eq!(
            el.get(&new.certified.cert[0], &chain)
                .unwrap()
                .to_str()
                .unwrap(),
            element(&new.certified.cert[0], &chain),
            "built from the new leaf"
        );
    }
}
