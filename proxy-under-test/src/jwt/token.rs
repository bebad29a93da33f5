//! One token: where a provider finds it in a request (header, query parameter, cookie, or
//! Envoy's defaults) and its verification against a key set (signature by `kid` or any fitting
//! key, `exp`/`nbf` within the clock skew, issuer, audiences) with `jsonwebtoken` (ring).

use http::HeaderMap;
use jsonwebtoken::{DecodingKey, Validation};
use serde_json::Value;

use super::keys::Decoded;
use super::provider::{Location, ProviderEntry};

/// The token, from the first location that has one (Envoy's defaults without locations:
/// `Authorization: Bearer` and the `access_token` query parameter).
pub(super) fn extract(
    locations: &[Location],
    headers: &HeaderMap,
    query: Option<&str>,
) -> Option<String> {
    let header = |name: &str, prefix: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|v| v.strip_prefix(prefix).map(|t| t.trim().to_owned()))
    };
    let param = |name: &str| {
        form_pairs(query?)
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    };
    // Envoy's extractor reads cookies with `parseCookieValue`, which drops surrounding quotes.
    let cookie = |name: &str| crate::route::lb::cookie_value(headers, name);
    if locations.is_empty() {
        return header("authorization", "Bearer ").or_else(|| param("access_token"));
    }
    locations.iter().find_map(|l| {
        if let Some(h) = &l.header {
            header(&h.name, &h.value_prefix)
        } else if let Some(q) = &l.query_param {
            param(&q.name)
        } else {
            l.cookie.as_ref().and_then(|c| cookie(&c.name))
        }
    })
}

fn form_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// One token against one provider: signature by a key of `set` (by `kid`, else any key
/// whose algorithm fits), `exp`/`nbf` within the clock skew, issuer and audiences.
pub(super) fn check(
    entry: &ProviderEntry,
    set: &Decoded,
    token: &str,
    skip: bool,
) -> Result<Value, String> {
    let header = jsonwebtoken::decode_header(token).map_err(|e| e.to_string())?;
    let mut v = Validation::new(header.alg);
    v.required_spec_claims.clear();
    v.leeway = entry.clock_skew_seconds;
    v.validate_nbf = true;
    v.validate_aud = !entry.audiences.is_empty();
    if v.validate_aud {
        v.set_audience(&entry.audiences);
    }
    if !entry.issuer.is_empty() {
        v.set_issuer(&[&entry.issuer]);
    }
    if skip {
        v.insecure_disable_signature_validation();
        v.validate_exp = false;
        v.validate_nbf = false;
        v.validate_aud = false;
        v.iss = None;
        let dummy = DecodingKey::from_secret(&[]);
        return jsonwebtoken::decode::<Value>(token, &dummy, &v)
            .map(|d| d.claims)
            .map_err(|e| e.to_string());
    }
    let mut last = "no key for the token".to_owned();
    for key in set.candidates(header.kid.as_deref()) {
        match jsonwebtoken::decode::<Value>(token, key, &v) {
            Ok(d) => return Ok(d.claims),
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}
