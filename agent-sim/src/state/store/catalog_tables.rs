//! Lookup tables over the catalog, derived from it after each write and kept until the next
//! one (in [`super::Memo`]): instances by service name, connect proxies by destination, and
//! check IDs by (node, service ID). Health queries read candidates from here instead of
//! scanning every instance and every check of the node; the tables only narrow the search, the
//! predicates stay those of the scan.

use std::collections::{BTreeMap, HashMap};

use super::NodeKey;
use crate::model::service::{HealthCheck, NodeService, ServiceKind};

#[cfg(test)]
mod tests;

/// The tables. Every list is in the catalog's key order (the order a scan sees).
#[derive(Debug, Default)]
pub(crate) struct CatalogTables {
    by_name: HashMap<String, Vec<NodeKey>>,
    by_destination: HashMap<String, Vec<NodeKey>>,
    /// Check IDs by (node, service ID); node checks under (node, "").
    checks: HashMap<NodeKey, Vec<String>>,
}

impl CatalogTables {
    pub(crate) fn build(
        services: &BTreeMap<NodeKey, NodeService>,
        checks: &BTreeMap<NodeKey, HealthCheck>,
    ) -> Self {
        let mut out = Self::default();
        for (key, svc) in services {
            out.by_name
                .entry(svc.service.clone())
                .or_default()
                .push(key.clone());
            if svc.kind == ServiceKind::ConnectProxy {
                out.by_destination
                    .entry(svc.proxy.destination_service_name.clone())
                    .or_default()
                    .push(key.clone());
            }
        }
        for ((node, id), c) in checks {
            out.checks
                .entry((node.clone(), c.service_id.clone()))
                .or_default()
                .push(id.clone());
        }
        out
    }

    /// Instances that may match a health query for `service`, in key order: those named
    /// `service`, and with `connect` the proxies whose destination it is.
    pub(crate) fn candidates(&self, service: &str, connect: bool) -> Vec<&NodeKey> {
        let named = self.by_name.get(service).map_or(&[][..], Vec::as_slice);
        let proxies = match connect {
            true => self
                .by_destination
                .get(service)
                .map_or(&[][..], Vec::as_slice),
            false => &[][..],
        };
        merge(named, proxies)
    }

    /// The check IDs of `node` that `checks_for(node, service_id)` returns, in key order: the
    /// node's own checks and the service's.
    pub(crate) fn check_ids(&self, node: &str, service_id: &str) -> Vec<&String> {
        let get = |sid: &str| {
            self.checks
                .get(&(node.to_owned(), sid.to_owned()))
                .map_or(&[][..], Vec::as_slice)
        };
        let own = if service_id.is_empty() {
            &[][..]
        } else {
            get(service_id)
        };
        merge(get(""), own)
    }
}

/// The sorted union of two sorted lists.
fn merge<'a, T: Ord>(a: &'a [T], b: &'a [T]) -> Vec<&'a T> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let take_a = j >= b.len() || (i < a.len() && a[i] <= b[j]);
        if take_a {
            if j < b.len() && a[i] == b[j] {
                j += 1;
            }
            out.push(&a[i]);
            i += 1;
        } else {
            out.push(&b[j]);
            j += 1;
        }
    }
    out
}
