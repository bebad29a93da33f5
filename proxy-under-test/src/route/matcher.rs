//! Route matches as Consul configures Envoy's (`makeRouteMatchForDiscoveryRoute`): the path
//! (exact, prefix or whole-path regex, optionally case-insensitive; the query string excluded),
//! headers (present, exact, prefix, suffix, whole-value regex, each optionally inverted; several
//! values of one header are joined with `,`), query parameters (present, exact, whole-value regex)
//! and methods; every part must hold.

use http::HeaderMap;
use regex::Regex;

use crate::agent::types::{HeaderMatch, HttpMatch, QueryMatch};

/// The parts of a request a route looks at.
#[derive(Debug, Clone, Copy)]
pub struct RequestView<'a> {
    /// `GET`, `POST`, ...
    pub method: &'a str,
    /// The path, without the query string.
    pub path: &'a str,
    /// The raw query string (without `?`), if any.
    pub query: Option<&'a str>,
    /// The request headers.
    pub headers: &'a HeaderMap,
}

/// How a path is matched.
#[derive(Debug, Clone)]
pub enum PathMatch {
    /// Any path (prefix `/`).
    Any,
    /// The whole path.
    Exact(String),
    /// A prefix of the path.
    Prefix(String),
    /// A regex matching the whole path.
    Regex(Regex),
}

#[derive(Debug, Clone)]
enum ValueMatch {
    Present,
    Exact(String),
    Prefix(String),
    Suffix(String),
    Regex(Regex),
}

impl ValueMatch {
    fn holds(&self, v: &str) -> bool {
        match self {
            Self::Present => true,
            Self::Exact(e) => v == e,
            Self::Prefix(p) => v.starts_with(p.as_str()),
            Self::Suffix(s) => v.ends_with(s.as_str()),
            Self::Regex(r) => r.is_match(v),
        }
    }
}

/// A compiled route match.
#[derive(Debug, Clone)]
pub struct Matcher {
    /// The path part.
    pub path: PathMatch,
    case_insensitive: bool,
    headers: Vec<(String, ValueMatch, bool)>,
    query: Vec<(String, ValueMatch)>,
    methods: Vec<String>,
}

/// A regex anchored to the whole input (Envoy's `safe_regex` matches fully); `None` when invalid.
pub fn anchored(re: &str, case_insensitive: bool) -> Option<Regex> {
    let flags = if case_insensitive { "(?i)" } else { "" };
    Regex::new(&format!("^{flags}(?:{re})$")).ok()
}

impl Matcher {
    /// Matches everything.
    pub fn any() -> Self {
        Self {
            path: PathMatch::Any,
            case_insensitive: false,
            headers: Vec::new(),
            query: Vec::new(),
            methods: Vec::new(),
        }
    }

    /// Compiles `m`; `None` when one of its regexes is invalid (the route never matches then).
    pub fn compile(m: Option<&HttpMatch>) -> Option<Self> {
        let Some(m) = m else {
            return Some(Self::any());
        };
        let ci = m.case_insensitive;
        let path = if !m.path_exact.is_empty() {
            PathMatch::Exact(m.path_exact.clone())
        } else if !m.path_prefix.is_empty() {
            PathMatch::Prefix(m.path_prefix.clone())
        } else if !m.path_regex.is_empty() {
            PathMatch::Regex(anchored(&m.path_regex, ci)?)
        } else {
            PathMatch::Any
        };
        let headers = m
            .header
            .iter()
            .map(|h| Some((h.name.to_ascii_lowercase(), header_value(h)?, h.invert)))
            .collect::<Option<Vec<_>>>()?;
        let query = m
            .query_param
            .iter()
            .map(|q| Some((q.name.clone(), query_value(q)?)))
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            path,
            case_insensitive: ci,
            headers,
            query,
            methods: m.methods.iter().map(|x| x.to_ascii_uppercase()).collect(),
        })
    }

    /// Whether `req` matches.
    pub fn matches(&self, req: &RequestView<'_>) -> bool {
        self.path_holds(req.path)
            && (self.methods.is_empty() || self.methods.iter().any(|m| m == req.method))
            && self.headers.iter().all(|(name, vm, invert)| {
                let joined = joined(req.headers, name);
                let held = joined.as_deref().is_some_and(|v| vm.holds(v));
                held != *invert
            })
            && self
                .query
                .iter()
                .all(|(name, vm)| query_pairs(req.query).any(|(k, v)| k == name && vm.holds(v)))
    }

    fn path_holds(&self, path: &str) -> bool {
        match &self.path {
            PathMatch::Any => true,
            PathMatch::Exact(e) if self.case_insensitive => path.eq_ignore_ascii_case(e),
            PathMatch::Exact(e) => path == e,
            PathMatch::Prefix(p) if self.case_insensitive => path
                .get(..p.len())
                .is_some_and(|h| h.eq_ignore_ascii_case(p)),
            PathMatch::Prefix(p) => path.starts_with(p.as_str()),
            PathMatch::Regex(r) => r.is_match(path),
        }
    }
}

fn header_value(h: &HeaderMatch) -> Option<ValueMatch> {
    Some(if !h.exact.is_empty() {
        ValueMatch::Exact(h.exact.clone())
    } else if !h.prefix.is_empty() {
        ValueMatch::Prefix(h.prefix.clone())
    } else if !h.suffix.is_empty() {
        ValueMatch::Suffix(h.suffix.clone())
    } else if !h.regex.is_empty() {
        ValueMatch::Regex(anchored(&h.regex, false)?)
    } else {
        ValueMatch::Present
    })
}

fn query_value(q: &QueryMatch) -> Option<ValueMatch> {
    Some(if !q.exact.is_empty() {
        ValueMatch::Exact(q.exact.clone())
    } else if !q.regex.is_empty() {
        ValueMatch::Regex(anchored(&q.regex, false)?)
    } else {
        ValueMatch::Present
    })
}

/// The values of header `name` joined with `,` (Envoy's matching of repeated headers).
pub fn joined(headers: &HeaderMap, name: &str) -> Option<String> {
    let mut vals = headers.get_all(name).iter().peekable();
    vals.peek()?;
    Some(
        vals.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect::<Vec<_>>()
            .join(","),
    )
}

/// The query's `(name, value)` pairs as sent (not percent-decoded, as Envoy's route matching
/// reads them); a name without `=` has an empty value.
pub fn query_pairs(query: Option<&str>) -> impl Iterator<Item = (&str, &str)> + '_ {
    query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
}
