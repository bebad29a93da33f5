//! SPIFFE IDs as Consul Connect uses them (reference §12): parsing a certificate URI SAN into a
//! service, agent, mesh gateway, server or signing identity, and writing one back.

use std::sync::LazyLock;

use regex::Regex;

/// A Consul SPIFFE identity. `partition` is `default` when the URI has no `/ap/` segment.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SpiffeId {
    Service {
        trust_domain: String,
        partition: String,
        namespace: String,
        datacenter: String,
        service: String,
    },
    Agent {
        trust_domain: String,
        partition: String,
        datacenter: String,
        node: String,
    },
    MeshGateway {
        trust_domain: String,
        partition: String,
        datacenter: String,
    },
    Server {
        trust_domain: String,
        datacenter: String,
    },
    Signing {
        trust_domain: String,
    },
}

/// Why a URI is not a Consul SPIFFE ID (texts are Go's).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpiffeError {
    #[error("SPIFFE ID must have 'spiffe' scheme")]
    Scheme,
    /// `url.Parse` rejected the input.
    #[error("{0}")]
    Url(String),
    #[error("SPIFFE ID is not in the expected format: {0}")]
    Format(String),
}

static AGENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:/ap/([^/]+))?/agent/client/dc/([^/]+)/id/([^/]+)$").expect("constant regex")
});
static SERVER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^/agent/server/dc/([^/]+)$").expect("constant regex"));
static MESH_GATEWAY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:/ap/([^/]+))?/gateway/mesh/dc/([^/]+)$").expect("constant regex")
});

/// Matches `^(?:/ap/([^/]+))?/ns/([^/]+)/dc/([^/]+)/svc/([^/]+)$` without a regex (this runs
/// on every authorize call): `(partition, namespace, datacenter, service)`, still escaped.
fn service_path(path: &str) -> Option<(Option<&str>, &str, &str, &str)> {
    let rest = path.strip_prefix('/')?;
    let parts: Vec<&str> = rest.split('/').collect();
    let (ap, tail) = match parts.as_slice() {
        ["ap", ap, tail @ ..] => (Some(*ap), tail),
        tail => (None, tail),
    };
    match tail {
        ["ns", ns, "dc", dc, "svc", svc]
            if [ns, dc, svc].iter().all(|s| !s.is_empty()) && ap != Some("") =>
        {
            Some((ap, ns, dc, svc))
        }
        _ => None,
    }
}

/// The pieces of a URL that `ParseCertURI` looks at.
struct Url {
    scheme: String,
    host: String,
    /// The path as written (still percent-encoded).
    raw_path: String,
}

fn url_error(input: &str, msg: &str) -> SpiffeError {
    SpiffeError::Url(format!(
        "parse {}: {msg}",
        crate::go::gotext::go_quote(input)
    ))
}

/// Enough of Go's `url.Parse` for SPIFFE IDs.
fn parse_url(input: &str) -> Result<Url, SpiffeError> {
    if input.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(url_error(
            input,
            "net/url: invalid control character in URL",
        ));
    }
    let without_fragment = input.split('#').next().unwrap_or_default();
    let (scheme, rest) = match without_fragment.find(':') {
        Some(0) => return Err(url_error(input, "missing protocol scheme")),
        Some(i)
            if without_fragment.as_bytes()[0].is_ascii_alphabetic()
                && without_fragment[..i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) =>
        {
            (
                without_fragment[..i].to_ascii_lowercase(),
                &without_fragment[i + 1..],
            )
        }
        _ => (String::new(), without_fragment),
    };
    let rest = rest.split('?').next().unwrap_or_default();
    let (host, raw_path) = match rest.strip_prefix("//") {
        Some(after) => {
            let slash = after.find('/').unwrap_or(after.len());
            let authority = &after[..slash];
            let host = authority.rsplit('@').next().unwrap_or_default();
            (host.to_owned(), after[slash..].to_owned())
        }
        // An opaque URL (`spiffe:x`) has an empty path.
        None if !rest.starts_with('/') && !scheme.is_empty() => (String::new(), String::new()),
        None => (String::new(), rest.to_owned()),
    };
    unescape(&raw_path).ok_or_else(|| url_error(input, "invalid URL escape"))?;
    Ok(Url {
        scheme,
        host,
        raw_path,
    })
}

/// Percent-decoding; `None` for a malformed escape.
fn unescape(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Go's path escaping (`url.PathEscape` rules, keeping `/`).
fn escape_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Parses a certificate URI the way Consul's `connect.ParseCertURIFromString` does: the scheme
/// must be `spiffe`, the (still escaped) path must match one of the identity forms, and each
/// captured segment is percent-decoded.
pub fn parse(uri: &str) -> Result<SpiffeId, SpiffeError> {
    let url = parse_url(uri)?;
    if url.scheme != "spiffe" {
        return Err(SpiffeError::Scheme);
    }
    let td = url.host.clone();
    let bad = || SpiffeError::Format(uri.to_owned());
    let seg = |c: Option<regex::Match<'_>>| c.and_then(|m| unescape(m.as_str())).ok_or_else(bad);
    let ap = |c: Option<regex::Match<'_>>| match c {
        None => Ok("default".to_owned()),
        Some(m) => unescape(m.as_str()).ok_or_else(bad),
    };
    let path = url.raw_path.as_str();
    if let Some((partition, namespace, datacenter, service)) = service_path(path) {
        let part = |s: &str| unescape(s).ok_or_else(bad);
        return Ok(SpiffeId::Service {
            trust_domain: td,
            partition: partition.map_or_else(|| Ok("default".to_owned()), part)?,
            namespace: part(namespace)?,
            datacenter: part(datacenter)?,
            service: part(service)?,
        });
    }
    if let Some(c) = AGENT.captures(path) {
        return Ok(SpiffeId::Agent {
            trust_domain: td,
            partition: ap(c.get(1))?,
            datacenter: seg(c.get(2))?,
            node: seg(c.get(3))?,
        });
    }
    if let Some(c) = SERVER.captures(path) {
        return Ok(SpiffeId::Server {
            trust_domain: td,
            datacenter: seg(c.get(1))?,
        });
    }
    if let Some(c) = MESH_GATEWAY.captures(path) {
        return Ok(SpiffeId::MeshGateway {
            trust_domain: td,
            partition: ap(c.get(1))?,
            datacenter: seg(c.get(2))?,
        });
    }
    if path.is_empty() && td.find('.').is_some_and(|i| i > 0) {
        return Ok(SpiffeId::Signing { trust_domain: td });
    }
    Err(bad())
}

impl SpiffeId {
    /// The URI form; `/ap/<partition>` only for a non-default partition.
    pub fn to_uri(&self) -> String {
        let ap = |p: &str| {
            if p == "default" || p.is_empty() {
                String::new()
            } else {
                format!("/ap/{p}")
            }
        };
        let (td, path) = match self {
            Self::Service {
                trust_domain,
                partition,
                namespace,
                datacenter,
                service,
            } => (
                trust_domain,
                format!(
                    "{}/ns/{namespace}/dc/{datacenter}/svc/{service}",
                    ap(partition)
                ),
            ),
            Self::Agent {
                trust_domain,
                partition,
                datacenter,
                node,
            } => (
                trust_domain,
                format!("{}/agent/client/dc/{datacenter}/id/{node}", ap(partition)),
            ),
            Self::MeshGateway {
                trust_domain,
                partition,
                datacenter,
            } => (
                trust_domain,
                format!("{}/gateway/mesh/dc/{datacenter}", ap(partition)),
            ),
            Self::Server {
                trust_domain,
                datacenter,
            } => (trust_domain, format!("/agent/server/dc/{datacenter}")),
            Self::Signing { trust_domain } => (trust_domain, String::new()),
        };
        format!("spiffe://{td}{}", escape_path(&path))
    }

    /// The trust domain (URI host).
    pub fn trust_domain(&self) -> &str {
        match self {
            Self::Service { trust_domain, .. }
            | Self::Agent { trust_domain, .. }
            | Self::MeshGateway { trust_domain, .. }
            | Self::Server { trust_domain, .. }
            | Self::Signing { trust_domain } => trust_domain,
        }
    }
}

#[cfg(test)]
mod tests;
