//! Catalog and agent-local state: the table operations (services and checks put and removed
//! with the per-service indexes Consul reports) and the health queries built on them. The
//! validated writes on top are in `catalog_writes`.

use std::collections::BTreeMap;

use rand::Rng;
use serde::Deserialize;
use time::OffsetDateTime;

use super::{NodeKey, State};
use crate::model::service::{self, HealthCheck, Node, NodeService, Registration};
use crate::state::config::SimConfig;

/// A status change for one check (control API and the agent's check endpoints).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct CheckUpdate {
    /// The node; the agent's own node when absent.
    #[serde(default)]
    pub node: Option<String>,
    /// The check ID.
    #[serde(rename = "CheckID")]
    pub check_id: String,
    /// `passing`, `warning` or `critical`.
    pub status: String,
    /// New output; kept when absent.
    #[serde(default)]
    pub output: Option<String>,
}

/// The agent's own node, with the `serfHealth` check every agent node has.
pub(super) fn agent_node(cfg: &SimConfig, rng: &mut impl Rng, index: u64) -> Node {
    let addr = cfg.node_address.clone();
    let tagged = ["lan", "lan_ipv4", "wan", "wan_ipv4"].map(|k| (k.to_owned(), addr.clone()));
    Node {
        id: uuid::Builder::from_random_bytes(rng.random())
            .into_uuid()
            .to_string(),
        name: cfg.node_name.clone(),
        address: addr,
        datacenter: cfg.datacenter.clone(),
        tagged_addresses: BTreeMap::from(tagged),
        meta: BTreeMap::from([
            ("consul-network-segment".to_owned(), String::new()),
            ("consul-version".to_owned(), cfg.version.clone()),
        ]),
        create_index: index,
        modify_index: index,
    }
}

/// The `serfHealth` check of a node.
pub(super) fn serf_health(node: &str, index: u64) -> HealthCheck {
    HealthCheck {
        node: node.to_owned(),
        check_id: "serfHealth".into(),
        name: "Serf Health Status".into(),
        status: service::HEALTH_PASSING.into(),
        output: "Agent alive and reachable".into(),
        create_index: index,
        modify_index: index,
        ..HealthCheck::default()
    }
}

/// One health entry: the node, the instance, and its checks plus the node's.
pub(crate) type HealthEntry<'a> = (&'a Node, &'a NodeService, Vec<&'a HealthCheck>);

impl State {
    /// Services registered on node `node`.
    pub(crate) fn services_on(&self, node: &str) -> Vec<&NodeService> {
        self.services
            .iter()
            .filter(|((n, _), _)| n == node)
            .map(|(_, s)| s)
            .collect()
    }

    /// Checks of one service instance plus its node's node-level checks, in check-ID order.
    /// Reads only the node's range of the check table (keyed by node first): a health query or
    /// an xDS build over N instances is O(N log N), not O(N x all checks).
    pub(crate) fn checks_for(&self, node: &str, service_id: &str) -> Vec<&HealthCheck> {
        // The check IDs come from the derived tables (a node with 20,000 sidecars has 40,000
        // checks); the filter is the definition.
        let tables = self.catalog_tables();
        tables
            .check_ids(node, service_id)
            .into_iter()
            .filter_map(|id| self.checks.get(&(node.to_owned(), id.clone())))
            .filter(|c| c.service_id.is_empty() || c.service_id == service_id)
            .collect()
    }

    /// Health entries for `service`: connect-capable instances (sidecars for it and connect-native
    /// instances) when `connect`, else instances named `service`. Returns the index to report.
    pub(crate) fn health_entries(
        &self,
        service: &str,
        connect: bool,
        passing_only: bool,
    ) -> (u64, Vec<HealthEntry<'_>>) {
        let mut index = self.service_index.get(service).copied().unwrap_or(0);
        let mut out = Vec::new();
        // Candidates from the derived tables instead of every instance; `matches` decides.
        let tables = self.catalog_tables();
        let candidates = tables.candidates(service, connect);
        for (node, svc) in candidates
            .into_iter()
            .filter_map(|k| Some((&k.0, self.services.get(k)?)))
        {
            let matches = if connect {
                (svc.kind == service::ServiceKind::ConnectProxy
                    && svc.proxy.destination_service_name == service)
                    || (svc.service == service && svc.connect.native)
            } else {
                svc.service == service
            };
            if !matches {
                continue;
            }
            index = index.max(self.service_index.get(&svc.service).copied().unwrap_or(0));
            let Some(n) = self.nodes.get(node) else {
                continue;
            };
            let checks = self.checks_for(node, &svc.id);
            if passing_only && !service::is_passing(&checks) {
                continue;
            }
            out.push((n, svc, checks));
        }
        if index == 0 {
            // Nothing ever existed under this name: Consul falls back to the table's index.
            index = self.catalog_index;
        }
        (index, out)
    }

    pub(super) fn bump_service(&mut self, name: &str, index: u64) {
        self.catalog_index = self.catalog_index.max(index);
        self.service_index.insert(name.to_owned(), index);
    }

    pub(super) fn put_service(&mut self, node: &str, mut svc: NodeService, index: u64) {
        let key = (node.to_owned(), svc.id.clone());
        if let Some(old) = self.services.get(&key) {
            if old.is_same(&svc) {
                return;
            }
            svc.create_index = old.create_index;
            let old_name = old.service.clone();
            if old_name != svc.service {
                self.bump_service(&old_name, index);
            }
        } else {
            svc.create_index = index;
        }
        svc.modify_index = index;
        if let Some(name) = super::virtual_ip::connect_name(&svc) {
            self.assign_virtual_ip(name);
        }
        self.bump_service(&svc.service.clone(), index);
        self.services.insert(key, svc);
    }

    pub(super) fn put_check(&mut self, mut check: HealthCheck, index: u64) {
        let key = (check.node.clone(), check.check_id.clone());
        if let Some(old) = self.checks.get(&key) {
            if old.is_same(&check) {
                return;
            }
            check.create_index = old.create_index;
        } else {
            check.create_index = index;
        }
        check.modify_index = index;
        if check.ttl.is_some() {
            self.ttl_touched
                .insert(key.clone(), OffsetDateTime::now_utc());
        }
        if !check.service_name.is_empty() {
            self.bump_service(&check.service_name.clone(), index);
        }
        self.checks.insert(key, check);
    }

    pub(super) fn remove_service(&mut self, key: &NodeKey, index: u64) -> Option<NodeService> {
        let svc = self.services.remove(key)?;
        self.checks
            .retain(|(n, _), c| !(n == &key.0 && c.service_id == key.1));
        let checks = &self.checks;
        self.ttl_touched.retain(|k, _| checks.contains_key(k));
        self.bump_service(&svc.service, index);
        Some(svc)
    }

    pub(super) fn apply_registration(
        &mut self,
        node: &str,
        reg: Registration,
        replace_checks: bool,
        index: u64,
    ) {
        for svc in &reg.services {
            if replace_checks {
                let keep: Vec<&str> = reg
                    .checks
                    .iter()
                    .filter(|c| c.service_id == svc.id)
                    .map(|c| c.check_id.as_str())
                    .collect();
                self.checks.retain(|(n, id), c| {
                    !(n == node && c.service_id == svc.id && !keep.contains(&id.as_str()))
                });
            }
        }
        for svc in reg.services {
            self.put_service(node, svc, index);
        }
        for check in reg.checks {
            self.put_check(check, index);
        }
    }
}

#[cfg(test)]
mod tests;
