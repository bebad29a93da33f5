//! JWT requirements of intentions (Consul 1.16+ `jwt-provider` entries), checked the way
//! Envoy runs under Consul's config: every provider some intention names verifies the request's
//! token (`jwt_authn` with `allow_missing_or_failed`: a missing or bad token is not refused
//! here), and authorization then asks whether the governing intention's (or permission's)
//! providers verified it with the right `iss` and every `VerifyClaims` value (Consul's RBAC
//! metadata matchers: a claim must be a string equal to the value). Refusals are therefore
//! RBAC's 403.
//!
//! A provider's `Forwarding.HeaderName` carries a verified token's payload to the application
//! as Envoy's `forward_payload_header` does (the token's own base64url payload segment, padded
//! with `=` under `PadForwardPayloadHeader`), and, as Envoy's verifiers do before verifying,
//! a caller's own header of that name never reaches the application.
//!
//! [`provider`] holds the wire types of `/v1/config/jwt-provider`, [`keys`] the inline, file
//! and remote (cached, refetched after `CacheDuration`) key sets, [`token`] one token's
//! extraction and validation (the `jsonwebtoken` crate, ring).

mod fetch_tls;
mod keys;
pub mod provider;
#[cfg(test)]
mod tests;
mod token;

use std::collections::{BTreeMap, BTreeSet};

use http::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::Value;

use self::keys::Keys;
use self::provider::ProviderEntry;
use self::token::{check, extract};

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

/// One provider's verified token.
#[derive(Debug)]
struct Verified {
    /// The provider's issuer.
    issuer: String,
    /// The decoded claims.
    payload: Value,
    /// The token's payload segment as it came (base64url, no padding).
    segment: String,
}

/// What verification found for one request: each verified provider's token.
#[derive(Debug, Default)]
pub struct JwtResults {
    verified: BTreeMap<String, Verified>,
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
            let Some(Verified {
                issuer, payload, ..
            }) = self.verified.get(&p.name)
            else {
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
    /// `Forwarding.HeaderName` is ignored: no payload reaches the application.
    pub no_forward_payload: bool,
    /// A caller's own header of a `Forwarding.HeaderName` is passed on.
    pub forward_spoofable: bool,
}

/// The stored providers and their key sources.
#[derive(Debug, Default)]
pub struct Verifier {
    providers: BTreeMap<String, Provider>,
    weakened: Weakened,
}

/// One provider: its entry, its keys and where a verified payload goes.
#[derive(Debug)]
struct Provider {
    entry: ProviderEntry,
    keys: Keys,
    /// `Forwarding.HeaderName`, parsed once, and whether the payload is padded.
    forward: Option<(HeaderName, bool)>,
}

impl Verifier {
    /// A verifier for `entries`.
    pub fn new(entries: Vec<ProviderEntry>, weakened: Weakened) -> Self {
        let providers = entries
            .into_iter()
            .map(|entry| {
                let keys = Keys::new(entry.json_web_key_set.as_ref(), weakened.stale_jwks);
                let forward = entry
                    .forwarding
                    .as_ref()
                    .filter(|f| !f.header_name.is_empty())
                    .and_then(|f| match HeaderName::from_bytes(f.header_name.as_bytes()) {
                        Ok(h) => Some((h, f.pad_forward_payload_header)),
                        Err(_) => {
                            tracing::warn!(provider = %entry.name, header = %f.header_name, "Forwarding.HeaderName is no HTTP header name; the payload is not forwarded");
                            None
                        }
                    });
                let name = entry.name.clone();
                (
                    name,
                    Provider {
                        entry,
                        keys,
                        forward,
                    },
                )
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
            let Some(Provider { entry, keys, .. }) = self.providers.get(name) else {
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
                    let segment = token.split('.').nth(1).unwrap_or_default().to_owned();
                    let v = Verified {
                        issuer: entry.issuer.clone(),
                        payload,
                        segment,
                    };
                    out.verified.insert(name.clone(), v);
                }
                Err(e) => tracing::debug!(provider = %name, error = %e, "JWT not verified"),
            }
        }
        out
    }

    /// Before verification, as Envoy's verifiers do: removes the caller's own headers named by
    /// the `Forwarding.HeaderName` of each of `names` (only a verified payload may arrive
    /// under that name).
    pub fn sanitize(&self, names: &BTreeSet<String>, headers: &mut HeaderMap) {
        if self.weakened.forward_spoofable {
            return;
        }
        for name in names {
            if let Some((h, _)) = self.providers.get(name).and_then(|p| p.forward.as_ref()) {
                headers.remove(h);
            }
        }
    }

    /// After an allowed request's verification: Envoy's `forward: false` (the headers a
    /// verified token came in are removed), then each verified payload added under its
    /// provider's `Forwarding.HeaderName` (appended: two providers may share a name).
    pub fn finish(&self, results: &JwtResults, headers: &mut HeaderMap) {
        for (name, verified) in &results.verified {
            let Some(Provider { entry, forward, .. }) = self.providers.get(name) else {
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
            if self.weakened.no_forward_payload {
                continue;
            }
            let Some((header, pad)) = forward else {
                continue;
            };
            let mut value = verified.segment.clone();
            if *pad {
                while value.len() % 4 != 0 {
                    value.push('=');
                }
            }
            if let Ok(v) = HeaderValue::from_str(&value) {
                headers.append(header.clone(), v);
            }
        }
    }
}
