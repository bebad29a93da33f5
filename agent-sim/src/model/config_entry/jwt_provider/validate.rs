//! The `jwt-provider` entry's `Normalize` and `Validate` (`config_entry_jwt_provider.go`): one
//! JWKS source, the remote URI and its fetch options, TLS trust, token locations, with Consul's
//! error texts; and the remote JWKS URI's host and port for the cluster Consul renders.

use base64::Engine as _;

use super::super::common::validate_meta;
use super::super::{go_quote, multierror};
use super::{
    DEFAULT_CLOCK_SKEW_SECONDS, JsonWebKeySet, JwksTlsCertificate, JwtLocation,
    JwtProviderConfigEntry, LocalJwks, RemoteJwks,
};

fn count_true(vals: &[bool]) -> usize {
    vals.iter().filter(|v| **v).count()
}

impl JwtProviderConfigEntry {
    /// `Normalize()`: the kind, and a zero clock skew becomes 30 seconds.
    pub(crate) fn normalize(&mut self) {
        self.kind = "jwt-provider".to_owned();
        if self.clock_skew_seconds == 0 {
            self.clock_skew_seconds = DEFAULT_CLOCK_SKEW_SECONDS;
        }
    }

    /// `Validate()`, in Go's order.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("Name is required".into());
        }
        let meta = validate_meta(&self.meta);
        if !meta.is_empty() {
            return Err(multierror(&meta));
        }
        let Some(set) = &self.json_web_key_set else {
            return Err("JSONWebKeySet is required".into());
        };
        set.validate()?;
        let loc_errs: Vec<String> = self
            .locations
            .iter()
            .filter_map(|l| l.validate().err())
            .collect();
        if !loc_errs.is_empty() {
            return Err(multierror(&loc_errs));
        }
        if let Some(f) = &self.forwarding
            && f.header_name.is_empty()
        {
            return Err("Header name required for forwarding config".into());
        }
        Ok(())
    }
}

impl JsonWebKeySet {
    fn validate(&self) -> Result<(), String> {
        if count_true(&[self.local.is_some(), self.remote.is_some()]) != 1 {
            return Err("must specify exactly one of Local or Remote JSON Web key set".into());
        }
        if let Some(remote) = &self.remote {
            return remote.validate();
        }
        match &self.local {
            Some(local) => local.validate(),
            None => Ok(()),
        }
    }
}

impl LocalJwks {
    fn validate(&self) -> Result<(), String> {
        if count_true(&[!self.filename.is_empty(), !self.jwks.is_empty()]) != 1 {
            return Err("must specify exactly one of String or filename for local keyset".into());
        }
        if !self.jwks.is_empty()
            && base64::engine::general_purpose::STANDARD
                .decode(&self.jwks)
                .is_err()
        {
            return Err("JWKS must be valid base64 encoded string".into());
        }
        Ok(())
    }

    /// The decoded inline JWKS (validation already checked the base64).
    pub fn decoded_jwks(&self) -> Option<String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.jwks)
            .ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}

impl RemoteJwks {
    fn validate(&self) -> Result<(), String> {
        if self.uri.is_empty() {
            return Err("Remote JWKS URI is required".into());
        }
        if let Err(e) = parse_request_uri(&self.uri) {
            return Err(format!(
                "Remote JWKS URI is invalid: {e}, uri: {}",
                self.uri
            ));
        }
        if let Some(b) = self
            .retry_policy
            .as_ref()
            .and_then(|r| r.retry_policy_back_off.as_ref())
            && b.max_interval != 0
            && b.base_interval > b.max_interval
        {
            return Err(
                "retry policy backoff's MaxInterval should be greater or equal to BaseInterval"
                    .into(),
            );
        }
        if let Some(c) = &self.jwks_cluster {
            if !c.discovery_type.is_empty()
                && !matches!(
                    c.discovery_type.as_str(),
                    "STATIC" | "STRICT_DNS" | "LOGICAL_DNS" | "EDS" | "ORIGINAL_DST"
                )
            {
                return Err(format!(
                    "unsupported jwks cluster discovery type: {}",
                    go_quote(&c.discovery_type)
                ));
            }
            if let Some(t) = &c.tls_certificates {
                return t.validate();
            }
        }
        Ok(())
    }
}

impl JwksTlsCertificate {
    fn validate(&self) -> Result<(), String> {
        if count_true(&[
            self.ca_certificate_provider_instance.is_some(),
            self.trusted_ca.is_some(),
        ]) != 1
        {
            return Err("must specify exactly one of: CaCertificateProviderInstance or TrustedCA for JKWS' TLSCertificates".into());
        }
        if let Some(ca) = &self.trusted_ca
            && count_true(&[
                !ca.filename.is_empty(),
                !ca.environment_variable.is_empty(),
                !ca.inline_string.is_empty(),
                !ca.inline_bytes.is_empty(),
            ]) != 1
        {
            return Err("must specify exactly one of: Filename, EnvironmentVariable, InlineString or InlineBytes for JWKS' TrustedCA".into());
        }
        Ok(())
    }
}

impl JwtLocation {
    fn validate(&self) -> Result<(), String> {
        let (h, q, c) = (&self.header, &self.query_param, &self.cookie);
        if count_true(&[h.is_some(), q.is_some(), c.is_some()]) != 1 {
            return Err(
                "must set exactly one of: JWT location header, query param or cookie".into(),
            );
        }
        if let Some(h) = h {
            if h.name.is_empty() {
                return Err("JWT location header name must be specified".into());
            }
        } else if let Some(c) = c {
            if c.name.is_empty() {
                return Err("JWT location cookie name must be specified".into());
            }
        } else if q.as_ref().is_some_and(|q| q.name.is_empty()) {
            return Err("JWT location query param name must be specified".into());
        }
        Ok(())
    }
}

/// The `(host, scheme, port)` of a remote JWKS URI (`parseJWTRemoteURL`: port 80, or 443 for
/// `https`, when the URI names none).
pub fn remote_host_port(uri: &str) -> Option<(String, String, u16)> {
    parse_request_uri(uri).ok()?;
    let (scheme, rest) = uri.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, tail) = v6.split_once(']')?;
        (h.to_owned(), tail.strip_prefix(':').unwrap_or_default())
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), p),
            None => (authority.to_owned(), ""),
        }
    };
    let port = match port.parse::<u16>() {
        Ok(p) if p != 0 => p,
        _ if scheme == "https" => 443,
        _ => 80,
    };
    Some((host, scheme.to_owned(), port))
}

/// Go's `url.ParseRequestURI`, as far as its errors go: an absolute URI (`scheme:...`) or an
/// absolute path.
fn parse_request_uri(uri: &str) -> Result<(), String> {
    let quoted = go_quote(uri);
    if uri.chars().any(|c| c.is_ascii_control()) {
        return Err(format!(
            "parse {quoted}: net/url: invalid control character in URL"
        ));
    }
    if uri.starts_with('/') {
        return Ok(());
    }
    let scheme = uri.split(':').next().unwrap_or_default();
    let scheme_ok = uri.contains(':')
        && scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if uri.starts_with(':') {
        return Err(format!("parse {quoted}: missing protocol scheme"));
    }
    if !scheme_ok {
        return Err(format!("parse {quoted}: invalid URI for request"));
    }
    Ok(())
}
