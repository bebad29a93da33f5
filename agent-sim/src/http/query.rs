//! Query-string parsing shared by the endpoints: Consul's `parse()` helper (dc, token,
//! consistency flags, `?cached`, `wait`, `index`, Enterprise-only parameters) with its exact texts.

use axum::http::HeaderMap;

use super::error::ApiError;
use crate::go::duration::GoDuration;

/// The raw query pairs in request order; bare flags (`?stale`) have an empty value.
#[derive(Debug, Clone, Default)]
pub struct RawQuery(pub Vec<(String, String)>);

impl RawQuery {
    /// Parses `a=1&b&c=x%20y`.
    pub fn parse(query: Option<&str>) -> Self {
        let pairs = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Self(pairs)
    }

    /// The first value of `name` (Go's `Query().Get`: empty when the flag is bare).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first value of `name`, treating an empty value as absent (Go's `Get(x) != ""`).
    pub fn non_empty(&self, name: &str) -> Option<&str> {
        self.get(name).filter(|v| !v.is_empty())
    }

    /// Whether `name` is present at all, even bare.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(k, _)| k == name)
    }

    /// Every value of a repeatable parameter, in order.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// A boolean flag: absent = false, bare = true, else Go's `ParseBool`; `None` when the value
    /// is not a boolean.
    pub fn flag(&self, name: &str) -> Option<bool> {
        match self.get(name) {
            None => Some(false),
            Some("") => Some(true),
            Some(v) => parse_go_bool(v),
        }
    }
}

/// Go's `strconv.ParseBool`.
pub fn parse_go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

pub use crate::state::request_log::TokenSource;

/// The token a request carries, and where from.
pub fn request_token(query: &RawQuery, headers: &HeaderMap) -> (Option<String>, TokenSource) {
    if let Some(t) = query.non_empty("token") {
        return (Some(t.to_owned()), TokenSource::Query);
    }
    if let Some(t) = headers
        .get("x-consul-token")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
    {
        return (Some(t.to_owned()), TokenSource::Header);
    }
    if let Some(auth) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        let mut words = auth.split_whitespace();
        if let (Some(scheme), Some(tok)) = (words.next(), words.next())
            && scheme.eq_ignore_ascii_case("bearer")
        {
            return (Some(tok.to_owned()), TokenSource::Bearer);
        }
    }
    (None, TokenSource::None)
}

/// Options common to server-backed GETs (Consul's `QueryOptions`).
#[derive(Debug, Clone, Default)]
pub struct QueryOpts {
    /// Datacenter asked for (`datacenter` wins over `dc`); `None` = the agent's.
    pub dc: Option<String>,
    /// `?stale`.
    pub stale: bool,
    /// `?consistent`.
    pub consistent: bool,
    /// `?cached`.
    pub cached: bool,
    /// `?index=N` (0 when absent).
    pub min_index: u64,
    /// `?wait=` as given.
    pub wait: Option<GoDuration>,
    /// `?filter=`.
    pub filter: Option<String>,
}

impl QueryOpts {
    /// Runs Consul's checks in its order and returns its texts.
    pub fn parse(q: &RawQuery, headers: &HeaderMap) -> Result<Self, ApiError> {
        reject_enterprise(q, headers)?;
        let dc = q
            .non_empty("datacenter")
            .or_else(|| q.non_empty("dc"))
            .map(str::to_owned);
        let stale = q.has("stale");
        let consistent = q.has("consistent");
        if stale && consistent {
            return Err(ApiError::bad_request(
                "Cannot specify ?stale with ?consistent, conflicting semantics.",
            ));
        }
        let cached = q.has("cached");
        if cached && consistent {
            return Err(ApiError::bad_request(
                "Cannot specify ?cached with ?consistent, conflicting semantics.",
            ));
        }
        if let Some(ms) = q.non_empty("max_stale") {
            GoDuration::parse(ms)
                .map_err(|_| ApiError::bad_request(format!("Invalid max_stale value {ms:?}")))?;
        }
        if let Some(cc) = headers.get("cache-control") {
            parse_cache_control(cc.to_str().unwrap_or("\u{0}"))?;
        }
        let (wait, min_index) = parse_wait_index(q)?;
        Ok(Self {
            dc,
            stale,
            consistent,
            cached,
            min_index,
            wait,
            filter: q.non_empty("filter").map(str::to_owned),
        })
    }
}

/// `wait` and `index` with Consul's `Invalid wait time` / `Invalid index`.
pub fn parse_wait_index(q: &RawQuery) -> Result<(Option<GoDuration>, u64), ApiError> {
    let wait = match q.non_empty("wait") {
        Some(w) => {
            Some(GoDuration::parse(w).map_err(|_| ApiError::bad_request("Invalid wait time"))?)
        }
        None => None,
    };
    let index = match q.non_empty("index") {
        Some(i) => i
            .parse::<u64>()
            .map_err(|_| ApiError::bad_request("Invalid index"))?,
        None => 0,
    };
    Ok((wait, index))
}

/// CE rejects namespaces and partitions in every form.
pub fn reject_enterprise(q: &RawQuery, headers: &HeaderMap) -> Result<(), ApiError> {
    if q.non_empty("ns").is_some() || headers.contains_key("x-consul-namespace") {
        return Err(ApiError::bad_request(
            "Invalid query parameter: \"ns\" - Namespaces are a Consul Enterprise feature",
        ));
    }
    if q.non_empty("partition").is_some() || headers.contains_key("x-consul-partition") {
        return Err(ApiError::bad_request(
            "Invalid query parameter: \"partition\" - Partitions are a Consul Enterprise feature",
        ));
    }
    Ok(())
}

fn parse_cache_control(value: &str) -> Result<(), ApiError> {
    let bad = || ApiError::bad_request("Invalid Cache-Control header.");
    for directive in value.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let (name, arg) = directive.split_once('=').unwrap_or((directive, ""));
        match name.trim() {
            "max-age" | "stale-if-error" => {
                arg.trim().parse::<u64>().map_err(|_| bad())?;
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(q: &str) -> Result<QueryOpts, ApiError> {
        QueryOpts::parse(&RawQuery::parse(Some(q)), &HeaderMap::new())
    }

    #[test]
    fn consul_texts_for_bad_options() {
        let cases = [
            (
                "stale&consistent",
                "Cannot specify ?stale with ?consistent, conflicting semantics.",
            ),
            (
                "cached&consistent",
                "Cannot specify ?cached with ?consistent, conflicting semantics.",
            ),
            ("wait=10", "Invalid wait time"),
            ("wait=abc", "Invalid wait time"),
            ("index=-1", "Invalid index"),
            ("index=x", "Invalid index"),
            ("max_stale=x", "Invalid max_stale value \"x\""),
            (
                "ns=foo",
                "Invalid query parameter: \"ns\" - Namespaces are a Consul Enterprise feature",
            ),
        ];
        for (q, text) in cases {
            let err = opts(q).unwrap_err();
            assert_eq!(err.status, 400, "{q}");
            assert_eq!(err.body, text, "{q}");
        }
    }

    #[test]
    fn parses_good_options() {
        let o = opts("dc=dc2&datacenter=dc3&stale&index=42&wait=300000ms&cached").unwrap();
        assert_eq!(o.dc.as_deref(), Some("dc3"));
        assert!(o.stale && o.cached && !o.consistent);
        assert_eq!(o.min_index, 42);
        assert_eq!(o.wait.unwrap().to_std().as_secs(), 300);
    }

    #[test]
    fn token_precedence() {
        let mut h = HeaderMap::new();
        h.insert("x-consul-token", "hdr".parse().unwrap());
        h.insert("authorization", "bearer bear".parse().unwrap());
        let q = RawQuery::parse(Some("token=qry"));
        assert_eq!(
            request_token(&q, &h),
            (Some("qry".into()), TokenSource::Query)
        );
        assert_eq!(
            request_token(&RawQuery::default(), &h),
            (Some("hdr".into()), TokenSource::Header)
        );
        h.remove("x-consul-token");
        assert_eq!(
            request_token(&RawQuery::default(), &h),
            (Some("bear".into()), TokenSource::Bearer)
        );
        assert_eq!(
            request_token(&RawQuery::default(), &HeaderMap::new()),
            (None, TokenSource::None)
        );
    }

    #[test]
    fn cache_control_validation() {
        let mut h = HeaderMap::new();
        h.insert("cache-control", "max-age=abc".parse().unwrap());
        let err = QueryOpts::parse(&RawQuery::default(), &h).unwrap_err();
        assert_eq!(err.body, "Invalid Cache-Control header.");
    }
}
