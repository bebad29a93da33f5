//! Catalog writes through the store: registering and deregistering services and checks (locally,
//! with Consul's registration expansion and ACL checks, or on any node) and check status updates,
//! each failing with Consul's texts as a [`StateError`].

use time::OffsetDateTime;

use super::catalog::CheckUpdate;
use super::{NodeKey, Store};
use crate::model::acl::{self, Authorizer, Level, Resource};
use crate::model::service::{
    self, CatalogRegistration, HealthCheck, NodeService, RegisterContext, ServiceDefinition,
};
use crate::state::error::StateError;

impl Store {
    /// Registers with the local agent; `authz` (when given) must grant what the registration
    /// needs (sidecar permissions checked with the sidecar's own token when it has one).
    pub(crate) fn register_local_with(
        &self,
        def: ServiceDefinition,
        replace_checks: bool,
        authz: Option<&Authorizer>,
    ) -> Result<(), StateError> {
        let node = self.cfg.node_name.clone();
        self.write(|st| {
            let index = st.next_index();
            let existing: Vec<&NodeService> = st.services_on(&node);
            let existing_checks: Vec<&HealthCheck> = st
                .checks
                .iter()
                .filter(|((n, _), _)| *n == node)
                .map(|(_, c)| c)
                .collect();
            let ctx = RegisterContext {
                existing_checks: &existing_checks,
                ..RegisterContext::new(&node, &existing, index)
            };
            let reg = service::expand_registration(def, &ctx).map_err(StateError::from)?;
            if let Some(authz) = authz {
                for need in &reg.acl {
                    let who = match &need.token {
                        Some(secret) => acl::resolve(&self.cfg.acl, &st.tokens, Some(secret))
                            .map_err(|e| StateError::Rpc(e.to_string()))?,
                        None => authz.clone(),
                    };
                    who.require(Resource::Service, &need.service, Level::Write)
                        .map_err(StateError::Rpc)?;
                }
            }
            st.apply_registration(&node, reg, replace_checks, index);
            Ok(())
        })
    }

    /// Registers with the local agent without ACL checks (control handle).
    pub(crate) fn register_local(&self, def: ServiceDefinition) -> Result<(), StateError> {
        self.register_local_with(def, false, None)
    }

    /// Deregisters a local service and the sidecar registered with it; Consul's 404 otherwise.
    pub(crate) fn deregister_local_with(
        &self,
        id: &str,
        authz: Option<&Authorizer>,
    ) -> Result<(), StateError> {
        let node = self.cfg.node_name.clone();
        self.write(|st| {
            let key = (node.clone(), id.to_owned());
            let Some(svc) = st.services.get(&key) else {
                return Err(StateError::NotFound(format!(
                    "Unknown service ID {id:?}. Ensure that the service ID is passed, not the service name."
                )));
            };
            if let Some(a) = authz {
                a.require(Resource::Service, &svc.service, Level::Write).map_err(StateError::Rpc)?;
            }
            let index = st.next_index();
            st.remove_service(&key, index);
            let sidecars: Vec<NodeKey> = st
                .services
                .iter()
                .filter(|((n, _), s)| *n == node && s.locally_registered_as_sidecar && s.proxy.destination_service_id == id)
                .map(|(k, _)| k.clone())
                .collect();
            for k in sidecars {
                st.remove_service(&k, index);
            }
            Ok(())
        })
    }

    /// Deregisters without ACL checks (control handle).
    pub(crate) fn deregister_local(&self, id: &str) -> Result<(), StateError> {
        self.deregister_local_with(id, None)
    }

    /// Applies a catalog registration (node, service, checks) on any node.
    pub(crate) fn catalog_register(&self, reg: CatalogRegistration) {
        self.write(|st| {
            let index = st.next_index();
            let name = reg.node.name.clone();
            let node_changed = st.nodes.get(&name).is_none_or(|old| {
                !reg.skip_node_update
                    && (old.address != reg.node.address
                        || old.meta != reg.node.meta
                        || old.tagged_addresses != reg.node.tagged_addresses)
            });
            if node_changed {
                let mut node = reg.node;
                node.create_index = st.nodes.get(&name).map_or(index, |o| o.create_index);
                node.modify_index = index;
                st.nodes.insert(name.clone(), node);
            }
            if let Some(svc) = reg.service {
                st.put_service(&name, svc, index);
            }
            for check in reg.checks {
                st.put_check(check, index);
            }
        });
    }

    /// Removes a node (no service/check given), one service, or one check from the catalog.
    pub(crate) fn catalog_deregister(
        &self,
        node: &str,
        service_id: Option<&str>,
        check_id: Option<&str>,
    ) -> Result<(), StateError> {
        self.write(|st| {
            let index = st.next_index();
            match (service_id, check_id) {
                (Some(id), _) => {
                    st.remove_service(&(node.to_owned(), id.to_owned()), index);
                }
                (None, Some(cid)) => {
                    if let Some(c) = st.checks.remove(&(node.to_owned(), cid.to_owned())) {
                        st.bump_service(&c.service_name, index);
                    }
                }
                (None, None) => {
                    let keys: Vec<NodeKey> = st
                        .services
                        .keys()
                        .filter(|(n, _)| n == node)
                        .cloned()
                        .collect();
                    for k in keys {
                        st.remove_service(&k, index);
                    }
                    st.checks.retain(|(n, _), _| n != node);
                    st.nodes.remove(node);
                }
            }
            Ok(())
        })
    }

    /// Sets a check's status (and output). Consul's texts for unknown checks and bad statuses.
    pub(crate) fn update_check(&self, u: CheckUpdate) -> Result<(), StateError> {
        if !service::valid_status(&u.status) {
            return Err(StateError::Invalid(format!(
                "Invalid check status: {:?}",
                u.status
            )));
        }
        let node = u.node.clone().unwrap_or_else(|| self.cfg.node_name.clone());
        self.write(|st| {
            let key = (node.clone(), u.check_id.clone());
            let Some(old) = st.checks.get(&key).cloned() else {
                return Err(StateError::NotFound(format!("Unknown check ID {:?}. Ensure that the check ID is passed, not the check name.", u.check_id)));
            };
            if old.ttl.is_some() {
                st.ttl_touched.insert(key, OffsetDateTime::now_utc());
            }
            let mut check = old;
            check.status = u.status;
            if let Some(out) = u.output {
                check.output = out;
            }
            let index = st.next_index();
            st.put_check(check, index);
            Ok(())
        })
    }
}
