//! L7 permission matching (Consul's RBAC semantics): path exact/prefix/regex (query excluded,
//! regexes anchored), methods, headers with present/exact/prefix/suffix/contains/regex, invert
//! and ignore-case. All conditions of one permission must hold.

use http::HeaderMap;
use regex::Regex;

use super::model::{HeaderMatch, Permission};

/// The parts of an HTTP request that permissions look at.
#[derive(Debug, Clone, Copy)]
pub struct RequestInfo<'a> {
    /// Method, e.g. `GET`.
    pub method: &'a str,
    /// Path without the query string.
    pub path: &'a str,
    /// Request headers.
    pub headers: &'a HeaderMap,
    /// The request's verified JWTs ([`crate::jwt::NO_JWT`] when nothing asks for one).
    pub jwt: &'a crate::jwt::JwtResults,
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledPermission {
    allow: bool,
    /// `None` when the permission is unusable (no HTTP block, bad regex): it never matches.
    cond: Option<Conditions>,
    /// The permission's JWT requirement.
    pub(crate) jwt: Option<crate::jwt::JwtRequirement>,
}

#[derive(Debug, Clone)]
struct Conditions {
    path: PathCond,
    methods: Vec<String>,
    headers: Vec<HeaderCond>,
}

#[derive(Debug, Clone)]
enum PathCond {
    Any,
    Exact(String),
    Prefix(String),
    Regex(Regex),
}

#[derive(Debug, Clone)]
struct HeaderCond {
    name: String,
    kind: ValueCond,
    invert: bool,
}

#[derive(Debug, Clone)]
enum ValueCond {
    Present,
    Exact(String, bool),
    Prefix(String, bool),
    Suffix(String, bool),
    Contains(String, bool),
    Regex(Regex),
}

fn anchored(re: &str) -> Option<Regex> {
    match Regex::new(&format!("^(?:{re})$")) {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::warn!(regex = re, error = %e, "unusable regex in L7 permission; it never matches");
            None
        }
    }
}

impl CompiledPermission {
    pub(crate) fn new(p: &Permission) -> Self {
        let cond = p.http.as_ref().and_then(|h| {
            let path = match (&h.path_exact, &h.path_prefix, &h.path_regex) {
                (Some(e), _, _) => PathCond::Exact(e.clone()),
                (_, Some(p), _) => PathCond::Prefix(p.clone()),
                (_, _, Some(r)) => PathCond::Regex(anchored(r)?),
                _ => PathCond::Any,
            };
            let headers = h
                .header
                .iter()
                .map(compile_header)
                .collect::<Option<Vec<_>>>()?;
            Some(Conditions {
                path,
                methods: h.methods.iter().map(|m| m.to_ascii_uppercase()).collect(),
                headers,
            })
        });
        Self {
            allow: p.action.eq_ignore_ascii_case("allow"),
            cond,
            jwt: p.jwt.clone(),
        }
    }

    pub(crate) fn allows(&self) -> bool {
        self.allow
    }

    /// Whether every condition of the permission holds for `req` (never for an unusable one).
    pub(crate) fn matches(&self, req: &RequestInfo<'_>) -> bool {
        let path_ok = self.cond.as_ref().is_some_and(|c| c.path.matches(req.path));
        path_ok && self.matches_ignoring_path(req)
    }

    /// Whether every condition but the path's holds for `req` (never for an unusable permission).
    pub(crate) fn matches_ignoring_path(&self, req: &RequestInfo<'_>) -> bool {
        self.cond.as_ref().is_some_and(|c| {
            let method_ok = c.methods.is_empty()
                || c.methods.iter().any(|m| m.eq_ignore_ascii_case(req.method));
            method_ok && c.headers.iter().all(|h| h.matches(req.headers))
        })
    }
}

impl PathCond {
    fn matches(&self, path: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Exact(e) => path == e,
            Self::Prefix(p) => path.starts_with(p.as_str()),
            Self::Regex(r) => r.is_match(path),
        }
    }
}

fn compile_header(h: &HeaderMatch) -> Option<HeaderCond> {
    let ic = h.ignore_case;
    let kind = if let Some(v) = &h.exact {
        ValueCond::Exact(v.clone(), ic)
    } else if let Some(v) = &h.prefix {
        ValueCond::Prefix(v.clone(), ic)
    } else if let Some(v) = &h.suffix {
        ValueCond::Suffix(v.clone(), ic)
    } else if let Some(v) = &h.contains {
        ValueCond::Contains(v.clone(), ic)
    } else if let Some(r) = &h.regex {
        ValueCond::Regex(anchored(r)?)
    } else if h.present {
        ValueCond::Present
    } else {
        tracing::warn!(header = %h.name, "header matcher without a condition; it never matches");
        return None;
    };
    Some(HeaderCond {
        name: h.name.clone(),
        kind,
        invert: h.invert,
    })
}

fn cmp_with(ic: bool, value: &str, pattern: &str, f: fn(&str, &str) -> bool) -> bool {
    if ic {
        f(&value.to_lowercase(), &pattern.to_lowercase())
    } else {
        f(value, pattern)
    }
}

impl HeaderCond {
    fn matches(&self, headers: &HeaderMap) -> bool {
        // `HeaderMap` looks names up case-insensitively (HTTP field names are).
        let values: Vec<&str> = headers
            .get_all(self.name.as_str())
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let present = headers.contains_key(self.name.as_str());
        self.holds(present, &values.join(","), true)
    }

    /// The condition on the header's joined values (`present`: the header is there at all);
    /// `honour_ignore_case` false compares values exactly whatever `IgnoreCase` says.
    fn holds(&self, present: bool, joined: &str, honour_ignore_case: bool) -> bool {
        let ic = |ic: &bool| *ic && honour_ignore_case;
        let hit = present
            && match &self.kind {
                ValueCond::Present => true,
                ValueCond::Exact(p, i) => cmp_with(ic(i), joined, p, |a, b| a == b),
                ValueCond::Prefix(p, i) => cmp_with(ic(i), joined, p, |a, b| a.starts_with(b)),
                ValueCond::Suffix(p, i) => cmp_with(ic(i), joined, p, |a, b| a.ends_with(b)),
                ValueCond::Contains(p, i) => cmp_with(ic(i), joined, p, |a, b| a.contains(b)),
                ValueCond::Regex(r) => r.is_match(joined),
            };
        hit != self.invert
    }
}

#[cfg(feature = "sabotage")]
impl CompiledPermission {
    /// `case-sensitive-headers`: as [`Self::matches`], but a header rule's name is compared byte
    /// for byte with the request's (lower-case) field names and `IgnoreCase` is ignored.
    pub(crate) fn matches_case_sensitively(&self, req: &RequestInfo<'_>) -> bool {
        self.cond.as_ref().is_some_and(|c| {
            let method_ok = c.methods.is_empty()
                || c.methods.iter().any(|m| m.eq_ignore_ascii_case(req.method));
            let headers_ok = c.headers.iter().all(|h| {
                let values: Vec<&str> = req
                    .headers
                    .iter()
                    .filter(|(k, _)| k.as_str() == h.name)
                    .filter_map(|(_, v)| v.to_str().ok())
                    .collect();
                h.holds(!values.is_empty(), &values.join(","), false)
            });
            c.path.matches(req.path) && method_ok && headers_ok
        })
    }
}
