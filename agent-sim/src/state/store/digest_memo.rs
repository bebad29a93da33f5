//! The digests of answers a blocked query compares against, remembered per (query, index): a
//! client that re-arms right after an answer blocks on the index it was just given, and the
//! query needs that answer's digest to tell a later unchanged answer from a new one. Without the
//! memo it renders the answer again just to digest it (3,333 intention-match watchers re-armed
//! after one write doubled the work of the wake-up). Only for answers that are a function of
//! their key and index alone.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::state::body::BodyDigest;

/// At most this many queries are remembered; past it the memo starts over (a miss only costs
/// the render it saves).
pub(crate) const CAPACITY: usize = 65_536;

/// `(abandon generation, index, digest)` per query key. The generation (bumped by index resets)
/// keeps an index from before a reset from answering for the same index after it.
#[derive(Debug, Default)]
pub(crate) struct DigestMemo {
    inner: Mutex<HashMap<String, (u64, u64, BodyDigest)>>,
}

impl DigestMemo {
    /// The digest of `key`'s answer at `index` in generation `generation`, if remembered.
    pub(crate) fn get(&self, key: &str, generation: u64, index: u64) -> Option<BodyDigest> {
        match self.inner.lock().get(key) {
            Some(&(g, i, d)) if g == generation && i == index => Some(d),
            _ => None,
        }
    }

    /// Remembers `key`'s answer digest at `index` (rendered in `generation`).
    pub(crate) fn put(&self, key: &str, generation: u64, index: u64, digest: BodyDigest) {
        let mut inner = self.inner.lock();
        if inner.len() >= CAPACITY && !inner.contains_key(key) {
            inner.clear();
        }
        inner.insert(key.to_owned(), (generation, index, digest));
    }

    /// How many queries are remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::body::Body;
    use serde_json::json;

    #[test]
    fn remembers_per_key_generation_and_index() {
        let m = DigestMemo::default();
        let d = Body::new(json!([1])).digest();
        m.put("a", 0, 5, d);
        assert_eq!(m.get("a", 0, 5), Some(d));
        assert_eq!(m.get("a", 0, 6), None, "another index");
        assert_eq!(m.get("a", 1, 5), None, "after an index reset");
        assert_eq!(m.get("b", 0, 5), None, "another query");
        let d2 = Body::new(json!([2])).digest();
        m.put("a", 0, 6, d2);
        assert_eq!(m.get("a", 0, 6), Some(d2));
        assert_eq!(m.get("a", 0, 5), None, "one index per query");
    }

    #[test]
    fn bounded() {
        let m = DigestMemo::default();
        let d = Body::new(json!(null)).digest();
        for i in 0..=CAPACITY {
            m.put(&i.to_string(), 0, 1, d);
            assert!(m.len() <= CAPACITY);
        }
        assert_eq!(m.get(&CAPACITY.to_string(), 0, 1), Some(d));
    }
}
