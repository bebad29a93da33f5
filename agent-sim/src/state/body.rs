//! `Body`: a JSON answer that many responses and blocked queries share, its Go serialization made
//! once, and the digest a blocked query keeps instead of the whole answer. State, not HTTP: the
//! store caches the roots body, and blocked queries remember digests; the HTTP surface renders it.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// A JSON answer that many responses may share (every watcher of the roots gets the same one):
/// its compact serialization is made once.
#[derive(Debug)]
pub struct Body {
    value: OnceLock<Value>,
    compact: OnceLock<Bytes>,
    /// Made from its compact bytes (`from_compact`): the value is parsed only if asked for.
    from_bytes: bool,
}

impl Body {
    /// Wraps a value.
    pub fn new(value: Value) -> Self {
        Self {
            value: OnceLock::from(value),
            compact: OnceLock::new(),
            from_bytes: false,
        }
    }

    /// A body from its compact Go serialization (a big answer written without building a
    /// `Value`: the intention matches of thousands of watchers).
    pub fn from_compact(bytes: Bytes) -> Self {
        Self {
            value: OnceLock::new(),
            compact: OnceLock::from(bytes),
            from_bytes: true,
        }
    }

    /// The value (parsed on first use for a body made from bytes).
    pub fn value(&self) -> &Value {
        self.value.get_or_init(|| {
            self.compact
                .get()
                .and_then(|b| serde_json::from_slice(b).ok())
                .unwrap_or(Value::Null)
        })
    }

    /// The compact serialization, made on first use.
    pub fn compact(&self) -> Bytes {
        self.compact
            .get_or_init(|| Bytes::from(crate::go::gojson::compact(self.value())))
            .clone()
    }

    /// A SHA-256 of the value (streamed: nothing is kept): what a blocked query keeps to tell an
    /// unchanged answer from a new one, instead of the whole value (a `serde_json::Value` of ~60
    /// intentions is tens of KiB; 3,333 blocked match watchers each kept one). Object keys are
    /// hashed in sorted order, so equal values (`Value`'s `==` ignores key order) have equal
    /// digests. A body made from bytes digests its bytes (one query always makes its bodies
    /// the same way).
    pub fn digest(&self) -> BodyDigest {
        let mut h = Sha256::new();
        if self.from_bytes {
            h.update(b"b");
            h.update(self.compact());
        } else {
            digest_value(&mut h, self.value());
        }
        BodyDigest(h.finalize().into())
    }
}

/// `Body::digest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyDigest([u8; 32]);

/// Feeds `v` to `h` unambiguously: a tag per kind, lengths before contents.
fn digest_value(h: &mut Sha256, v: &Value) {
    let text = |h: &mut Sha256, s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    match v {
        Value::Null => h.update(b"n"),
        Value::Bool(b) => h.update(if *b { b"t" } else { b"f" }),
        Value::Number(n) => {
            h.update(b"#");
            text(h, &n.to_string());
        }
        Value::String(s) => {
            h.update(b"s");
            text(h, s);
        }
        Value::Array(items) => {
            h.update(b"[");
            h.update((items.len() as u64).to_le_bytes());
            for item in items {
                digest_value(h, item);
            }
        }
        Value::Object(map) => {
            h.update(b"{");
            h.update((map.len() as u64).to_le_bytes());
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (k, item) in entries {
                text(h, k);
                digest_value(h, item);
            }
        }
    }
}

impl PartialEq for Body {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

/// What a read returns: a fresh value, or a body shared with other answers.
#[derive(Debug, Clone)]
pub struct SharedBody(pub Arc<Body>);

impl From<Value> for SharedBody {
    fn from(v: Value) -> Self {
        Self(Arc::new(Body::new(v)))
    }
}

impl From<Arc<Body>> for SharedBody {
    fn from(b: Arc<Body>) -> Self {
        Self(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (0u64..4).prop_map(Value::from),
            (0u8..4).prop_map(|n| Value::from(f64::from(n))),
            "[ab]{0,2}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[ab]{0,2}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The digest a blocked query keeps instead of its first answer decides "unchanged"
        /// exactly as comparing the values did (key order aside, as `Value`'s `==` ignores it).
        #[test]
        fn digest_equal_iff_values_equal(a in json_value(), b in json_value()) {
            let (da, db) = (Body::new(a.clone()).digest(), Body::new(b.clone()).digest());
            prop_assert_eq!(da == db, a == b);
        }

        #[test]
        fn digest_ignores_key_order(kv in prop::collection::vec(("[a-c]{1,2}", json_value()), 0..5)) {
            let forward: serde_json::Map<String, Value> = kv.iter().cloned().collect();
            let backward: serde_json::Map<String, Value> = forward
                .iter()
                .rev()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            prop_assert_eq!(
                Body::new(Value::Object(forward)).digest(),
                Body::new(Value::Object(backward)).digest()
            );
        }
    }
}
