//! JWT in scenarios: the providers the harness runs (its own signing keys, the `jwt-provider`
//! entry it writes, a JWKS HTTP server for remote ones) and the token a request carries.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `[[setup.jwt_providers]]`: a provider whose keys the harness generates (ES256). It writes
/// the `jwt-provider` entry `name` before anything else, with `Issuer = "https://<name>.test"`,
/// the given audiences, and the JWKS inline (base64) or, with `remote`, on a loopback HTTP
/// server the harness runs (`RequestTimeoutMs = 2000` and the given `CacheDuration`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtProviderSpec {
    /// The entry's name (what intentions name).
    pub name: String,
    /// Serve the JWKS over HTTP (`JSONWebKeySet.Remote`) instead of inline.
    #[serde(default)]
    pub remote: bool,
    /// `Remote.CacheDuration` (Go duration), remote only.
    #[serde(default)]
    pub cache_duration: Option<String>,
    /// `Audiences`.
    #[serde(default)]
    pub audiences: Vec<String>,
    /// More top-level fields of the entry (e.g. `Locations`), Consul's JSON shape.
    #[serde(default)]
    pub entry: BTreeMap<String, Value>,
}

impl JwtProviderSpec {
    /// The issuer the harness signs as.
    pub fn issuer(&self) -> String {
        format!("https://{}.test", self.name)
    }
}

/// The token an `http` check sends as `Authorization: Bearer <token>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtToken {
    /// The provider (one of `setup.jwt_providers`).
    pub provider: String,
    /// What kind of token.
    pub token: TokenKind,
    /// Extra string claims (for `VerifyClaims`).
    #[serde(default)]
    pub claims: BTreeMap<String, String>,
}

/// Kinds of token the harness mints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenKind {
    /// Signed by the current key, right issuer and first audience, expiring in 10 minutes.
    Valid,
    /// No `Authorization` header at all.
    Missing,
    /// `Bearer not-a-jwt`.
    Malformed,
    /// As `valid`, expired an hour ago.
    Expired,
    /// As `valid`, issued by `https://elsewhere.test`.
    WrongIssuer,
    /// As `valid`, for audience `someone-else`.
    WrongAudience,
    /// As `valid`, signed by a key the JWKS never held.
    UnknownKey,
    /// As `valid`, signed by the key the last `jwt-rotate` replaced.
    PreviousKey,
}
