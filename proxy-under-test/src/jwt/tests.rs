//! Token checks against inline keys: a valid ES256 token verifies, and the refusals Consul's
//! RBAC would make (expired, wrong issuer, wrong audience, other key, malformed, missing,
//! claim mismatch) leave the requirement unmet; the sabotages weaken exactly what they name;
//! `Forwarding` carries a verified payload and only a verified one.

use std::collections::BTreeSet;

use base64::Engine as _;
use http::HeaderMap;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

use super::provider::ProviderEntry;
use super::{ClaimCheck, JwtRequirement, ProviderRef, Verifier, Weakened};

struct Key {
    pkcs8: Vec<u8>,
    jwk: Value,
}

fn key(kid: &str) -> Key {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .unwrap()
        .as_ref()
        .to_vec();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng).unwrap();
    let public = pair.public_key().as_ref();
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let jwk = json!({"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256",
        "x": b64(&public[1..33]), "y": b64(&public[33..65])});
    Key { pkcs8, jwk }
}

fn token(k: &Key, claims: &Value) -> String {
    let mut h = Header::new(Algorithm::ES256);
    h.kid = k.jwk["kid"].as_str().map(str::to_owned);
    jsonwebtoken::encode(&h, claims, &EncodingKey::from_ec_der(&k.pkcs8)).unwrap()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn provider(k: &Key) -> ProviderEntry {
    let jwks = json!({"keys": [k.jwk]}).to_string();
    serde_json::from_value(json!({"Name": "okta", "Issuer": "https://okta",
        "Audiences": ["web"], "ClockSkewSeconds": 30,
        "JSONWebKeySet": {"Local": {"JWKS": base64::engine::general_purpose::STANDARD.encode(jwks)}}}))
    .unwrap()
}

fn req(claims: bool) -> JwtRequirement {
    JwtRequirement {
        providers: vec![ProviderRef {
            name: "okta".into(),
            verify_claims: if claims {
                vec![ClaimCheck {
                    path: vec!["role".into()],
                    value: "admin".into(),
                }]
            } else {
                Vec::new()
            },
        }],
    }
}

async fn satisfied(v: &Verifier, bearer: Option<&str>, r: &JwtRequirement) -> bool {
    let mut h = HeaderMap::new();
    if let Some(t) = bearer {
        h.insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    let names: BTreeSet<String> = ["okta".to_owned()].into();
    v.verify(&names, &h, None).await.satisfies(r)
}

#[tokio::test]
async fn valid_tokens_pass_and_each_refusal_holds() {
    let (k, other) = (key("k1"), key("k2"));
    let v = Verifier::new(vec![provider(&k)], Weakened::default());
    let good = json!({"iss": "https://okta", "aud": "web", "exp": now() + 600, "role": "admin"});
    assert!(satisfied(&v, Some(&token(&k, &good)), &req(true)).await);
    let with = |patch: Value| {
        let mut c = good.clone();
        for (kk, vv) in patch.as_object().unwrap() {
            c[kk] = vv.clone();
        }
        c
    };
    let refused = [
        ("missing", None),
        ("malformed", Some("not.a.jwt".to_owned())),
        (
            "expired",
            Some(token(&k, &with(json!({"exp": now() - 3600})))),
        ),
        (
            "wrong issuer",
            Some(token(&k, &with(json!({"iss": "https://evil"})))),
        ),
        (
            "wrong audience",
            Some(token(&k, &with(json!({"aud": "other"})))),
        ),
        ("other key", Some(token(&other, &good))),
        (
            "wrong claim",
            Some(token(&k, &with(json!({"role": "guest"})))),
        ),
    ];
    for (what, t) in &refused {
        assert!(!satisfied(&v, t.as_deref(), &req(true)).await, "{what}");
    }
    // Without VerifyClaims the claim does not matter.
    assert!(satisfied(&v, refused[6].1.as_deref(), &req(false)).await);

    let skip = Verifier::new(
        vec![provider(&k)],
        Weakened {
            skip_verify: true,
            ..Weakened::default()
        },
    );
    assert!(
        satisfied(&skip, refused[5].1.as_deref(), &req(true)).await,
        "jwt-skip-verify"
    );
    assert!(satisfied(&skip, refused[2].1.as_deref(), &req(true)).await);
    let ignore = Verifier::new(
        vec![provider(&k)],
        Weakened {
            ignore_claims: true,
            ..Weakened::default()
        },
    );
    assert!(
        satisfied(&ignore, refused[6].1.as_deref(), &req(true)).await,
        "jwt-ignore-claims"
    );
    assert!(!satisfied(&ignore, refused[5].1.as_deref(), &req(true)).await);
}

fn forwarding(k: &Key, header: &str, pad: bool) -> ProviderEntry {
    let mut p = provider(k);
    p.forwarding = Some(super::provider::Forwarding {
        header_name: header.into(),
        pad_forward_payload_header: pad,
    });
    p
}

/// Verifies `bearer` with the headers `extra`, then applies what an allowed request gets.
async fn forwarded(v: &Verifier, bearer: Option<&str>, extra: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    if let Some(t) = bearer {
        h.insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    for (k, val) in extra {
        h.append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            val.parse().unwrap(),
        );
    }
    let names: BTreeSet<String> = ["okta".to_owned()].into();
    v.sanitize(&names, &mut h);
    let results = v.verify(&names, &h, None).await;
    v.finish(&results, &mut h);
    h
}

fn values(h: &HeaderMap, name: &str) -> Vec<String> {
    h.get_all(name)
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_verified_payload_is_forwarded_and_a_callers_own_never_is() {
    let k = key("k1");
    // A payload whose base64url needs padding (length not a multiple of 4).
    let claims = json!({"iss": "https://okta", "aud": "web", "exp": now() + 600, "x": "ab"});
    let mut t = token(&k, &claims);
    let mut extra = 0;
    while t.split('.').nth(1).unwrap().len().is_multiple_of(4) {
        extra += 1;
        let mut c = claims.clone();
        c["pad"] = json!("p".repeat(extra));
        t = token(&k, &c);
    }
    let segment = t.split('.').nth(1).unwrap().to_owned();
    let forged = [("x-jwt-payload", "forged")];

    let v = Verifier::new(
        vec![forwarding(&k, "x-jwt-payload", false)],
        Weakened::default(),
    );
    let h = forwarded(&v, Some(&t), &forged).await;
    assert_eq!(values(&h, "x-jwt-payload"), std::slice::from_ref(&segment));
    assert!(
        h.get("authorization").is_none(),
        "forward: false strips the token"
    );
    let h = forwarded(&v, None, &forged).await;
    assert!(
        values(&h, "x-jwt-payload").is_empty(),
        "no token: the forged one is gone too"
    );
    let h = forwarded(&v, Some("not.a.jwt"), &forged).await;
    assert!(values(&h, "x-jwt-payload").is_empty());

    let padded = Verifier::new(
        vec![forwarding(&k, "x-jwt-payload", true)],
        Weakened::default(),
    );
    let h = forwarded(&padded, Some(&t), &[]).await;
    let got = values(&h, "x-jwt-payload");
    assert_eq!(got.len(), 1);
    assert!(
        got[0].starts_with(&segment) && got[0].len().is_multiple_of(4) && got[0].ends_with('=')
    );
    let decoded = base64::engine::general_purpose::URL_SAFE
        .decode(&got[0])
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&decoded).unwrap()["x"],
        "ab"
    );

    // Without Forwarding nothing is added, and a caller's header of any name passes.
    let plain = Verifier::new(vec![provider(&k)], Weakened::default());
    let h = forwarded(&plain, Some(&t), &forged).await;
    assert_eq!(values(&h, "x-jwt-payload"), ["forged"]);

    let none = Verifier::new(
        vec![forwarding(&k, "x-jwt-payload", false)],
        Weakened {
            no_forward_payload: true,
            ..Weakened::default()
        },
    );
    let h = forwarded(&none, Some(&t), &forged).await;
    assert!(
        values(&h, "x-jwt-payload").is_empty(),
        "jwt-no-forward-payload"
    );
    let spoofable = Verifier::new(
        vec![forwarding(&k, "x-jwt-payload", false)],
        Weakened {
            forward_spoofable: true,
            ..Weakened::default()
        },
    );
    let h = forwarded(&spoofable, None, &forged).await;
    assert_eq!(
        values(&h, "x-jwt-payload"),
        ["forged"],
        "jwt-forward-spoofable"
    );
}

#[tokio::test]
async fn a_cookie_token_is_read_as_envoy_parses_cookies() {
    let k = key("k1");
    let mut p = provider(&k);
    p.locations = serde_json::from_value(json!([{"Cookie": {"Name": "jwt"}}])).unwrap();
    let v = Verifier::new(vec![p], Weakened::default());
    let t = token(
        &k,
        &json!({"iss": "https://okta", "aud": "web", "exp": now() + 600}),
    );
    let names: BTreeSet<String> = ["okta".to_owned()].into();
    for cookie in [format!("a=1; jwt={t}"), format!("jwt=\"{t}\"; b=2")] {
        let mut h = HeaderMap::new();
        h.insert("cookie", cookie.parse().unwrap());
        assert!(
            v.verify(&names, &h, None).await.satisfies(&req(false)),
            "{cookie}"
        );
    }
}
