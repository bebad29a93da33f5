//! Where a provider's keys come from: an inline or file JWKS, read once; or a remote JWKS
//! fetched when first needed and again once `CacheDuration` (Envoy's 10 minutes when unset)
//! has passed, so a key rotation at the issuer is followed. A failed fetch leaves no keys
//! (every token of that provider fails) until the next request tries again. An `https` URI is
//! verified as Envoy verifies it under Consul ([`super::fetch_tls`]). Each set's keys are
//! decoded once, when it is read or fetched, not per request.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::JwkSet;
use tokio::sync::Mutex;

use super::fetch_tls::Trust;
use super::provider::KeySet;

/// Envoy's default `cache_duration` for a remote JWKS.
const DEFAULT_CACHE: Duration = Duration::from_secs(600);
/// The fetch timeout when `RequestTimeoutMs` is 0.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// A key set with each key decoded (keys that do not decode are left out).
#[derive(Clone)]
pub(crate) struct Decoded {
    /// Each key's `kid` and its decoded form, in the set's order.
    pub(crate) keys: Vec<(Option<String>, DecodingKey)>,
}

impl std::fmt::Debug for Decoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoded")
            .field(
                "kids",
                &self.keys.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Decoded {
    fn of(set: &JwkSet) -> Self {
        let keys = set
            .keys
            .iter()
            .filter_map(|jwk| {
                let key = DecodingKey::from_jwk(jwk).ok()?;
                Some((jwk.common.key_id.clone(), key))
            })
            .collect();
        Self { keys }
    }

    /// The keys a token may be signed with: those of its `kid` (the first, as
    /// `JwkSet::find`), else every key.
    pub(crate) fn candidates<'a>(
        &'a self,
        kid: Option<&'a str>,
    ) -> Box<dyn Iterator<Item = &'a DecodingKey> + 'a> {
        match kid {
            Some(kid) => Box::new(
                self.keys
                    .iter()
                    .find(|(k, _)| k.as_deref() == Some(kid))
                    .map(|(_, key)| key)
                    .into_iter(),
            ),
            None => Box::new(self.keys.iter().map(|(_, key)| key)),
        }
    }
}

/// A provider's key source.
#[derive(Debug)]
pub(crate) enum Keys {
    /// Read once (`None`: the JWKS did not decode).
    Fixed(Option<Arc<Decoded>>),
    /// Fetched over HTTP and cached.
    Remote(Remote),
}

/// A remote JWKS and its cache.
#[derive(Debug)]
pub(crate) struct Remote {
    uri: String,
    timeout: Duration,
    cache_for: Duration,
    /// What an `https` server is verified against.
    trust: Trust,
    /// Never fetch again once something is cached (the `jwt-stale-jwks` sabotage).
    stale: bool,
    cached: Mutex<Option<(Instant, Arc<Decoded>)>>,
}

impl Keys {
    /// The source `set` describes; `stale` keeps the first remote answer for ever.
    pub(crate) fn new(set: Option<&KeySet>, stale: bool) -> Self {
        let Some(set) = set else {
            return Self::Fixed(None);
        };
        if let Some(r) = set.remote.as_ref().filter(|r| !r.uri.is_empty()) {
            let tls = r.cluster.as_ref().and_then(|c| c.tls_certificates.as_ref());
            let trust = Trust::for_uri(&r.uri, tls);
            match &trust {
                Trust::Any => tracing::warn!(
                    uri = %r.uri,
                    "remote JWKS over https with no JWKSCluster.TLSCertificates: the server \
                     is not verified (as Envoy under Consul); set TrustedCA to verify it"
                ),
                Trust::Unusable(why) => {
                    tracing::error!(uri = %r.uri, error = %why, "remote JWKS cannot be fetched");
                }
                Trust::Roots(_) | Trust::Plain => {}
            }
            return Self::Remote(Remote {
                trust,
                uri: r.uri.clone(),
                timeout: match r.request_timeout_ms {
                    0 => DEFAULT_TIMEOUT,
                    ms => Duration::from_millis(ms),
                },
                cache_for: if r.cache_duration.is_zero() {
                    DEFAULT_CACHE
                } else {
                    r.cache_duration
                },
                stale,
                cached: Mutex::new(None),
            });
        }
        let text = set.local.as_ref().and_then(|l| {
            if !l.jwks.is_empty() {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(&l.jwks)
                    .ok()?;
                String::from_utf8(bytes).ok()
            } else {
                std::fs::read_to_string(&l.filename).ok()
            }
        });
        let parsed = text.and_then(|t| match serde_json::from_str::<JwkSet>(&t) {
            Ok(s) => Some(Arc::new(Decoded::of(&s))),
            Err(e) => {
                tracing::warn!(error = %e, "local JWKS does not parse; its tokens all fail");
                None
            }
        });
        Self::Fixed(parsed)
    }

    /// The keys now (fetching a remote set when absent or expired).
    pub(crate) async fn get(&self) -> Option<Arc<Decoded>> {
        match self {
            Self::Fixed(k) => k.clone(),
            Self::Remote(r) => r.get().await,
        }
    }
}

impl Remote {
    async fn get(&self) -> Option<Arc<Decoded>> {
        let mut cached = self.cached.lock().await;
        if let Some((at, set)) = cached.as_ref()
            && (self.stale || at.elapsed() < self.cache_for)
        {
            return Some(set.clone());
        }
        match self.fetch().await {
            Ok(set) => {
                let set = Arc::new(Decoded::of(&set));
                *cached = Some((Instant::now(), set.clone()));
                Some(set)
            }
            Err(e) => {
                tracing::warn!(uri = %self.uri, error = %e, "remote JWKS fetch failed");
                // Envoy keeps using a set it has when a refetch fails.
                cached.as_ref().map(|(_, s)| s.clone())
            }
        }
    }

    async fn fetch(&self) -> Result<JwkSet, String> {
        let tls = self.trust.client_config()?;
        let client = reqwest::Client::builder()
            .timeout(self.timeout)
            .tls_backend_preconfigured(tls)
            .build()
            .map_err(|e| e.to_string())?;
        let resp = client
            .get(&self.uri)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !resp.status().is_success() {
            return Err(format!("status {}", resp.status()));
        }
        let body = resp.bytes().await.map_err(|e| e.to_string())?;
        serde_json::from_slice(&body).map_err(|e| e.to_string())
    }
}
