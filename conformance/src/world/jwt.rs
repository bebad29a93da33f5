//! The JWT issuers a scenario runs (`setup.jwt_providers`): ES256 keys generated per scenario
//! with ring, the `jwt-provider` entry written to the sim (the JWKS inline, or on a loopback
//! HTTP server run here for `remote` providers), tokens of each kind minted with
//! `jsonwebtoken`, and key rotation (`jwt-rotate`): the server then serves only the new key.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use parking_lot::Mutex;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use scenarios::{JwtProviderSpec, JwtToken, TokenKind};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::error::Error;

/// One ES256 key: its PKCS#8 document and public JWK.
#[derive(Debug, Clone)]
struct Key {
    kid: String,
    pkcs8: Vec<u8>,
    jwk: Value,
}

impl Key {
    fn generate(kid: &str) -> Result<Self, Error> {
        let bad = |e: String| Error::Step(format!("JWT key: {e}"));
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|e| bad(e.to_string()))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng)
            .map_err(|e| bad(e.to_string()))?;
        let public = pair.public_key().as_ref();
        if public.len() != 65 {
            return Err(bad("unexpected P-256 public key length".into()));
        }
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        Ok(Self {
            kid: kid.to_owned(),
            pkcs8: doc.as_ref().to_vec(),
            jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
                "x": b64(&public[1..33]), "y": b64(&public[33..65])}),
        })
    }

    fn sign(&self, claims: &Value) -> Result<String, Error> {
        let mut h = Header::new(Algorithm::ES256);
        h.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&h, claims, &EncodingKey::from_ec_der(&self.pkcs8))
            .map_err(|e| Error::Step(format!("JWT signing: {e}")))
    }
}

/// One provider's keys and, when remote, the JWKS it serves.
#[derive(Debug)]
struct Issuer {
    spec: JwtProviderSpec,
    current: Key,
    previous: Option<Key>,
    unknown: Key,
    rotations: u32,
    /// What the JWKS server answers (remote providers).
    served: Arc<Mutex<String>>,
    server: Option<(SocketAddr, JoinHandle<()>)>,
}

/// Every provider of the scenario.
#[derive(Debug, Default)]
pub(crate) struct JwtIssuers {
    issuers: BTreeMap<String, Issuer>,
}

impl Drop for JwtIssuers {
    fn drop(&mut self) {
        for i in self.issuers.values() {
            if let Some((_, task)) = &i.server {
                task.abort();
            }
        }
    }
}

fn jwks(keys: &[&Key]) -> String {
    json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()}).to_string()
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl JwtIssuers {
    /// Keys for every spec, and a JWKS server for each remote one.
    pub(crate) async fn start(specs: &[JwtProviderSpec]) -> Result<Self, Error> {
        let mut out = Self::default();
        for spec in specs {
            let current = Key::generate(&format!("{}-1", spec.name))?;
            let served = Arc::new(Mutex::new(jwks(&[&current])));
            let server = if spec.remote {
                Some(serve(served.clone()).await?)
            } else {
                None
            };
            out.issuers.insert(
                spec.name.clone(),
                Issuer {
                    spec: spec.clone(),
                    current,
                    previous: None,
                    unknown: Key::generate(&format!("{}-unknown", spec.name))?,
                    rotations: 1,
                    served,
                    server,
                },
            );
        }
        Ok(out)
    }

    /// The `jwt-provider` entries to write.
    pub(crate) fn entries(&self) -> Vec<Value> {
        self.issuers
            .values()
            .map(|i| {
                let set = match &i.server {
                    Some((addr, _)) => {
                        let mut remote = json!({"URI": format!("http://{addr}/jwks"),
                            "RequestTimeoutMs": 2000});
                        if let Some(d) = &i.spec.cache_duration {
                            remote["CacheDuration"] = json!(d);
                        }
                        json!({"Remote": remote})
                    }
                    None => {
                        let text = i.served.lock().clone();
                        let b64 = base64::engine::general_purpose::STANDARD.encode(text);
                        json!({"Local": {"JWKS": b64}})
                    }
                };
                let mut entry = json!({"Kind": "jwt-provider", "Name": i.spec.name,
                    "Issuer": i.spec.issuer(), "JSONWebKeySet": set});
                if !i.spec.audiences.is_empty() {
                    entry["Audiences"] = json!(i.spec.audiences);
                }
                for (k, v) in &i.spec.entry {
                    entry[k] = v.clone();
                }
                entry
            })
            .collect()
    }

    /// The `Authorization` value for `t` (`None` for a `missing` token).
    pub(crate) fn authorization(&self, t: &JwtToken) -> Result<Option<String>, Error> {
        let i = self
            .issuers
            .get(&t.provider)
            .ok_or_else(|| Error::Step(format!("no JWT provider {:?}", t.provider)))?;
        let now = now();
        let mut claims = json!({"iss": i.spec.issuer(), "sub": "conformance",
            "iat": now - 5, "exp": now + 600});
        if let Some(aud) = i.spec.audiences.first() {
            claims["aud"] = json!(aud);
        }
        for (k, v) in &t.claims {
            claims[k] = json!(v);
        }
        let key = match t.token {
            TokenKind::Missing => return Ok(None),
            TokenKind::Malformed => return Ok(Some("Bearer not-a-jwt".into())),
            TokenKind::Expired => {
                claims["iat"] = json!(now - 7200);
                claims["exp"] = json!(now - 3600);
                &i.current
            }
            TokenKind::WrongIssuer => {
                claims["iss"] = json!("https://elsewhere.test");
                &i.current
            }
            TokenKind::WrongAudience => {
                claims["aud"] = json!("someone-else");
                &i.current
            }
            TokenKind::UnknownKey => &i.unknown,
            TokenKind::PreviousKey => i
                .previous
                .as_ref()
                .ok_or_else(|| Error::Step(format!("{:?} has not been rotated yet", t.provider)))?,
            TokenKind::Valid => &i.current,
        };
        Ok(Some(format!("Bearer {}", key.sign(&claims)?)))
    }

    /// `jwt-rotate`: a new current key; the JWKS serves only it.
    pub(crate) fn rotate(&mut self, provider: &str) -> Result<String, Error> {
        let i = self
            .issuers
            .get_mut(provider)
            .ok_or_else(|| Error::Step(format!("no JWT provider {provider:?}")))?;
        i.rotations += 1;
        let next = Key::generate(&format!("{provider}-{}", i.rotations))?;
        *i.served.lock() = jwks(&[&next]);
        let old = std::mem::replace(&mut i.current, next);
        let label = format!(
            "rotate JWT key of {provider}: {} -> {}",
            old.kid, i.current.kid
        );
        i.previous = Some(old);
        Ok(label)
    }
}

/// A loopback HTTP/1.1 server answering every request with the current JWKS.
async fn serve(served: Arc<Mutex<String>>) -> Result<(SocketAddr, JoinHandle<()>), Error> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .map_err(|e| Error::Step(format!("JWKS server: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Step(format!("JWKS server: {e}")))?;
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let served = served.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |_req| {
                    let body = served.lock().clone();
                    async move {
                        Response::builder()
                            .status(StatusCode::OK)
                            .header("content-type", "application/json")
                            .body(Full::new(Bytes::from(body)))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Ok((addr, task))
}
