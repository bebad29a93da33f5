//! Header manipulation as Consul configures Envoy's (`injectHeaderManipToRoute`,
//! `injectHeaderManipToWeightedCluster`): at each level, removes first, then `Add` appends
//! (`APPEND_IF_EXISTS_OR_ADD`) and `Set` overwrites (`OVERWRITE_IF_EXISTS_OR_ADD`); the split's
//! level is applied before the route's, so the route's `Set` wins (Envoy's default
//! `most_specific_header_mutations_wins: false`).

use http::{HeaderMap, HeaderName, HeaderValue};

use crate::agent::types::HeaderModifiers;

/// One level's header changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderOps {
    remove: Vec<HeaderName>,
    add: Vec<(HeaderName, HeaderValue)>,
    set: Vec<(HeaderName, HeaderValue)>,
}

impl HeaderOps {
    /// Compiled from the chain's modifiers (invalid names or values are skipped).
    pub fn new(m: Option<&HeaderModifiers>) -> Self {
        let Some(m) = m else {
            return Self::default();
        };
        let pairs = |map: &std::collections::BTreeMap<String, String>| {
            map.iter()
                .filter_map(|(k, v)| {
                    Some((
                        HeaderName::try_from(k.as_str()).ok()?,
                        HeaderValue::try_from(v.as_str()).ok()?,
                    ))
                })
                .collect()
        };
        Self {
            remove: m
                .remove
                .iter()
                .filter_map(|k| HeaderName::try_from(k.as_str()).ok())
                .collect(),
            add: pairs(&m.add),
            set: pairs(&m.set),
        }
    }

    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.remove.is_empty() && self.add.is_empty() && self.set.is_empty()
    }

    /// Applies the changes to `headers`.
    pub fn apply(&self, headers: &mut HeaderMap) {
        for name in &self.remove {
            headers.remove(name);
        }
        for (name, value) in &self.add {
            headers.append(name.clone(), value.clone());
        }
        for (name, value) in &self.set {
            headers.insert(name.clone(), value.clone());
        }
    }
}
