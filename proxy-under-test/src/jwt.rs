//! JWT requirements of intentions (Consul 1.16+ `jwt-provider` entries), checked the way
//! Envoy runs under Consul's config: every provider some intention names verifies the request's
//! token (`jwt_authn` with `allow_missing_or_failed`: a missing or bad token is not refused
//! here), and authorization then asks whether the governing intention's (or permission's)
//! providers verified it with the right `iss` and every `VerifyClaims` value (Consul's RBAC
//! metadata matchers: a claim must be a string equal to the value). Refusals are therefore
//! RBAC's 403.
//!
//! [`provider`] holds the wire types of `/v1/config/jwt-provider`, [`keys`] the inline, file
//! and remote (cached, refetched after `CacheDuration`) key sets. Tokens are validated with
//! the `jsonwebtoken` crate (ring).

mod keys;
pub mod provider;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use http::HeaderMap;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{DecodingKey, Validation};
use serde::Deserialize;
use serde_json::Value;

use self::keys::Keys;
use self::provider::{Location, ProviderEntry};

/// `IntentionJWTRequirement`: any one of the providers must have verified the token.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct JwtRequirement {
    /// The providers.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub providers: Vec<ProviderRef>,
}

/// `IntentionJWTProvider`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ProviderRef {
    /// The `jwt-provider` entry's name.
    #[serde(default)]
    pub name: String,
    /// Claims that must hold.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub verify_claims: Vec<ClaimCheck>,
}

/// `IntentionJWTClaimVerification`: the claim at `path` equals `value`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ClaimCheck {
    /// Path into the payload.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub path: Vec<String>,
    /// Required string value.
    #[serde(default)]
    pub value: String,
}

fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// What verification found for one request: each verified provider's issuer and payload.
#[derive(Debug, Default)]
pub struct JwtResults {
    verified: BTreeMap<String, (String, Value)>,
    ignore_claims: bool,
    skip_issuer: bool,
}

/// No token verified (requests on services without JWT requirements).
pub static NO_JWT: JwtResults = JwtResults {
    verified: BTreeMap::new(),
    ignore_claims: false,
    skip_issuer: false,
};

impl JwtResults {
    /// Whether `req` holds: some provider verified the token with its issuer as `iss` and every
    /// claim check true.
    pub fn satisfies(&self, req: &JwtRequirement) -> bool {
        req.providers.iter().any(|p| {
            let Some((issuer, payload)) = self.verified.get(&p.name) else {
                return false;
            };
            let claim = |path: &[String], want: &str| {
                path.iter()
                    .try_fold(payload, |v, k| v.get(k))
                    .and_then(Value::as_str)
                    == Some(want)
            };
            (self.skip_issuer || claim(&["iss".to_owned()], issuer))
                && (self.ignore_claims || p.verify_claims.iter().all(|c| claim(&c.path, &c.value)))
        })
    }
}

/// What the sabotages change in verification (all false in a real proxy).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Weakened {
    /// Any decodable token passes: no signature, time, issuer (not even the RBAC-side `iss`
    /// match) or audience check.
    pub skip_verify: bool,
    /// `VerifyClaims` is not looked at.
    pub ignore_claims: bool,
    /// A remote JWKS is fetched once and never again.
    pub stale_jwks: bool,
}

/// The stored providers and their key sources.
#[derive(Debug, Default)]
pub struct Verifier {
    providers: BTreeMap<String, (ProviderEntry, Keys)>,
    weakened: Weakened,
}

impl Verifier {
    /// A verifier for `entries`.
    pub fn new(entries: Vec<ProviderEntry>, weakened: Weakened) -> Self {
        let providers = entries
            .into_iter()
            .map(|e| {
                let keys = Keys::new(e.json_web_key_set.as_ref(), weakened.stale_jwks);
                (e.name.clone(), (e, keys))
            })
            .collect();
        Self {
            providers,
            weakened,
        }
    }

    /// Verifies the request's token for each of `names` (the providers the intentions name).
    pub async fn verify(
        &self,
        names: &BTreeSet<String>,
        headers: &HeaderMap,
        query: Option<&str>,
    ) -> JwtResults {
        let mut out = JwtResults {
            ignore_claims: self.weakened.ignore_claims,
            skip_issuer: self.weakened.skip_verify,
            ..Default::default()
        };
        for name in names {
            let Some((entry, keys)) = self.providers.get(name) else {
                continue;
            };
            let Some(token) = extract(&entry.locations, headers, query) else {
                continue;
            };
            let Some(set) = keys.get().await else {
                continue;
            };
            match check(entry, &set, &token, self.weakened.skip_verify) {
                Ok(payload) => {
                    out.verified
                        .insert(name.clone(), (entry.issuer.clone(), payload));
                }
                Err(e) => tracing::debug!(provider = %name, error = %e, "JWT not verified"),
            }
        }
        out
    }

    /// Envoy's `forward: false`: the headers a verified token came in are removed.
    pub fn strip(&self, results: &JwtResults, headers: &mut HeaderMap) {
        for name in results.verified.keys() {
            let Some((entry, _)) = self.providers.get(name) else {
                continue;
            };
            if entry.locations.is_empty() {
                headers.remove(http::header::AUTHORIZATION);
            }
            for h in entry.locations.iter().filter_map(|l| l.header.as_ref()) {
                if !h.forward {
                    headers.remove(h.name.as_str());
                }
            }
        }
    }
}

/// The token, from the first location that has one (Envoy's defaults without locations:
/// `Authorization: Bearer` and the `access_token` query parameter).
fn extract(locations: &[Location], headers: &HeaderMap, query: Option<&str>) -> Option<String> {
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
    let cookie = |name: &str| {
        headers
            .get_all(http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_owned())
    };
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
fn check(entry: &ProviderEntry, set: &JwkSet, token: &str, skip: bool) -> Result<Value, String> {
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
    let candidates: Vec<_> = match &header.kid {
        Some(kid) => set.find(kid).into_iter().collect(),
        None => set.keys.iter().collect(),
    };
    let mut last = "no key for the token".to_owned();
    for jwk in candidates {
        let Ok(key) = DecodingKey::from_jwk(jwk) else {
            continue;
        };
        match jsonwebtoken::decode::<Value>(token, &key, &v) {
            Ok(d) => return Ok(d.claims),
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}
