//! Load balancing as Consul configures Envoy's clusters (`injectLBToCluster`) and routes
//! (`injectLBToRouteAction`): the policy, and for `ring_hash`/`maglev` the request hash from the
//! hash policies (header, cookie — generated with a TTL when missing —, query parameter, source
//! IP; a `Terminal` policy that yields a hash ends the list; hashes combine as Envoy's do, rotate
//! left by one then xor). Consistent hashing here is rendezvous (highest random weight) over the
//! endpoints' keys: stable for a key, and moving only the keys of an endpoint that goes away.

use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::time::Duration;

use http::HeaderMap;

use super::matcher::{joined, query_pairs};
use crate::agent::types::LoadBalancer;

/// The endpoint choice of a cluster.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LbPolicy {
    /// `round_robin` (Consul's default).
    #[default]
    RoundRobin,
    /// `least_request` (power of two choices over active requests).
    LeastRequest,
    /// `random`.
    Random,
    /// `ring_hash` or `maglev`: consistent hashing of the request hash.
    Hash,
}

/// One hash policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashSource {
    /// A header's value.
    Header(String),
    /// A cookie's value; with a TTL, generated when missing.
    Cookie {
        /// Cookie name.
        name: String,
        /// Lifetime of a generated cookie (`None`: never generated, unless a session cookie).
        ttl: Option<Duration>,
        /// Session cookie (generated without `Max-Age`).
        session: bool,
        /// The generated cookie's path.
        path: String,
    },
    /// A query parameter's value.
    Query(String),
    /// The downstream address.
    SourceIp,
}

/// A cluster's load balancing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lb {
    /// The policy.
    pub policy: LbPolicy,
    /// Hash policies with their `Terminal` flag (hash policies only).
    pub hash: Vec<(HashSource, bool)>,
    /// least_request: random candidates compared (`ChoiceCount`, default 2).
    pub choice_count: u32,
}

impl Lb {
    /// From a resolver's `LoadBalancer`.
    pub fn new(lb: Option<&LoadBalancer>) -> Self {
        let Some(lb) = lb else {
            return Self::default();
        };
        let policy = match lb.policy.as_str() {
            "least_request" => LbPolicy::LeastRequest,
            "random" => LbPolicy::Random,
            "ring_hash" | "maglev" => LbPolicy::Hash,
            _ => LbPolicy::RoundRobin,
        };
        let hash = lb
            .hash_policies
            .iter()
            .filter_map(|h| {
                let src = if h.source_ip {
                    HashSource::SourceIp
                } else {
                    match h.field.as_str() {
                        "header" => HashSource::Header(h.field_value.to_ascii_lowercase()),
                        "query_parameter" => HashSource::Query(h.field_value.clone()),
                        "cookie" => {
                            let c = h.cookie_config.clone().unwrap_or_default();
                            HashSource::Cookie {
                                name: h.field_value.clone(),
                                ttl: c.ttl,
                                session: c.session,
                                path: c.path,
                            }
                        }
                        _ => return None,
                    }
                };
                Some((src, h.terminal))
            })
            .collect();
        let choice_count = lb
            .least_request_config
            .as_ref()
            .map_or(0, |c| c.choice_count);
        Self {
            policy,
            hash,
            choice_count: if choice_count == 0 { 2 } else { choice_count },
        }
    }
}

/// What the hash of a request needs to know besides its headers.
#[derive(Debug, Clone, Copy)]
pub struct HashInput<'a> {
    /// The request headers.
    pub headers: &'a HeaderMap,
    /// The raw query string.
    pub query: Option<&'a str>,
    /// The downstream address.
    pub source: Option<IpAddr>,
}

/// A cookie to generate: its `Set-Cookie` value, whose value was hashed.
pub type NewCookie = String;

/// The request's hash, and the cookie to set on the response when a cookie policy generated one
/// (`fresh` is the value such a cookie gets).
pub fn request_hash(
    lb: &Lb,
    input: HashInput<'_>,
    fresh: &str,
) -> (Option<u64>, Option<NewCookie>) {
    let mut acc: Option<u64> = None;
    let mut cookie = None;
    for (src, terminal) in &lb.hash {
        let value: Option<String> = match src {
            HashSource::Header(name) => joined(input.headers, name),
            HashSource::Query(name) => query_pairs(input.query)
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.to_owned()),
            HashSource::SourceIp => input.source.map(|ip| ip.to_string()),
            HashSource::Cookie {
                name,
                ttl,
                session,
                path,
            } => match cookie_value(input.headers, name) {
                Some(v) => Some(v),
                None if ttl.is_some() || *session => {
                    let mut c = format!("{name}=\"{fresh}\"");
                    if let Some(ttl) = ttl.filter(|_| !*session) {
                        c.push_str(&format!("; Max-Age={}", ttl.as_secs()));
                    }
                    if !path.is_empty() {
                        c.push_str(&format!("; Path={path}"));
                    }
                    c.push_str("; HttpOnly");
                    cookie = Some(c);
                    Some(fresh.to_owned())
                }
                None => None,
            },
        };
        if let Some(v) = value {
            let h = hash_str(&v);
            acc = Some(acc.map_or(h, |a| a.rotate_left(1) ^ h));
            if *terminal {
                break;
            }
        }
    }
    (acc, cookie)
}

/// A cookie's value in the request's `Cookie` headers (quotes removed).
pub fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim_matches('"').to_owned())
}

/// A stable 64-bit hash of `s`.
pub fn hash_str(s: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// The endpoint for `hash` among `keys` (rendezvous hashing); `None` when there is none.
pub fn by_hash(hash: u64, keys: &[String]) -> Option<usize> {
    keys.iter()
        .enumerate()
        .max_by_key(|(_, k)| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (hash, k.as_str()).hash(&mut h);
            h.finish()
        })
        .map(|(i, _)| i)
}

/// Least request as Envoy's unweighted pick: of the `candidates` (random draws, with
/// replacement), the first with the fewest active requests.
pub fn least_of(active: &[usize], candidates: impl IntoIterator<Item = usize>) -> Option<usize> {
    let mut best: Option<usize> = None;
    for c in candidates {
        if best.is_none_or(|b| active.get(c) < active.get(b)) {
            best = Some(c);
        }
    }
    best
}
