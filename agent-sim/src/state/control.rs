//! The control handle: faults and state changes a test (or the harness) drives from Rust. Every
//! state change goes through the same code as the HTTP API, so it is validated the same way.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use time::OffsetDateTime;

use crate::model::acl::{Rules, Token};
use crate::model::ca::{ClientIdentity, Forgery};
use crate::model::{config_entry, intention, service};
use crate::state::error::SimError;
use crate::state::error::StateError;
use crate::state::faults::{ActiveFault, Fault, FaultGuard, Faults};
use crate::state::request_log::{LogEntry, RequestLog};
use crate::state::store::{CheckUpdate, Store};

/// Drives a simulated agent. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Control {
    pub(crate) store: Arc<Store>,
    pub(crate) faults: Arc<Faults>,
    pub(crate) log: Arc<RequestLog>,
    pub(crate) checks: Arc<crate::state::checks::Schedule>,
    pub(crate) xds_log: Arc<crate::state::xds_log::XdsLog>,
    /// The bound gRPC (xDS) port, once it is served (what `/v1/agent/self` reports).
    pub(crate) grpc_port: Arc<std::sync::OnceLock<u16>>,
    /// The agent's own TLS (HTTPS, gRPC over TLS), when configured.
    pub(crate) agent_tls: Option<Arc<crate::state::agent_tls::AgentTls>>,
    restart: Arc<tokio::sync::Mutex<()>>,
    /// Serializes [`sync_servers`](Self::sync_servers).
    servers_sync: Arc<parking_lot::Mutex<()>>,
}

impl Control {
    pub(crate) fn new(store: Arc<Store>, faults: Arc<Faults>, log: Arc<RequestLog>) -> Self {
        Self {
            agent_tls: None,
            store,
            faults,
            log,
            checks: Arc::default(),
            xds_log: Arc::default(),
            grpc_port: Arc::default(),
            servers_sync: Arc::default(),
            restart: Arc::default(),
        }
    }

    /// The agent's own TLS (its material, and the switch of the server certificate it
    /// presents), when the agent serves HTTPS.
    pub fn agent_tls(&self) -> Option<&crate::state::agent_tls::AgentTls> {
        self.agent_tls.as_deref()
    }

    // === faults ===

    /// Injects a fault until the guard is dropped.
    pub fn inject(&self, fault: Fault) -> FaultGuard {
        let guard = FaultGuard::new(self.faults.clone(), self.faults.add(fault, None));
        self.sync_servers();
        guard
    }

    /// Injects a fault that undoes itself after `d`; returns its id.
    pub fn inject_for(&self, fault: Fault, d: Duration) -> u64 {
        let id = self.faults.add(fault, Some(d));
        self.sync_servers();
        id
    }

    /// The agent refuses connections.
    pub fn agent_down(&self) -> FaultGuard {
        self.inject(Fault::AgentDown)
    }

    /// The agent accepts but never answers.
    pub fn agent_hung(&self) -> FaultGuard {
        self.inject(Fault::AgentHung)
    }

    /// The agent's servers are unreachable: cached data only.
    pub fn servers_unreachable(&self) -> FaultGuard {
        self.inject(Fault::ServersUnreachable)
    }

    /// Removes a fault by id.
    pub fn remove_fault(&self, id: u64) -> bool {
        let removed = self.faults.remove(id);
        self.sync_servers();
        removed
    }

    /// Removes every fault.
    pub fn clear_faults(&self) {
        self.faults.clear();
        self.sync_servers();
    }

    /// Tells the store whether the servers are reachable, as the active faults say. Called
    /// right after every fault change made through this handle, so the next request sees it;
    /// the background follower calls it for faults that end by themselves (expiry, guards).
    pub(crate) fn sync_servers(&self) {
        let _one_at_a_time = self.servers_sync.lock();
        let down = self.faults.current().servers_down_since.is_some();
        if down == self.store.servers_down() {
            return;
        }
        if down {
            tracing::info!("servers unreachable: serving cached data only");
            self.store.servers_lost();
        } else {
            tracing::info!("servers reachable again");
            self.store.servers_back();
        }
    }

    /// The active faults.
    pub fn faults(&self) -> Vec<ActiveFault> {
        self.faults.list()
    }

    /// Every index goes backwards (snapshot restore); blocked queries return at once.
    pub fn reset_indexes(&self) {
        self.store.reset_indexes();
    }

    /// Restarts the agent: down for `down_for`, then back with an empty agent cache and new
    /// (smaller) indexes; registrations and config are kept.
    pub async fn restart(&self, down_for: Duration) {
        self.restart_with(down_for, self.store.intention_default())
            .await;
    }

    /// [`restart`](Self::restart), coming back with `default_intention_policy` set to
    /// `intention_default` (sim-only: how a test changes agent config across a restart).
    pub async fn restart_with(
        &self,
        down_for: Duration,
        intention_default: Option<crate::state::config::IntentionDefault>,
    ) {
        let _one_at_a_time = self.restart.lock().await;
        let guard = self.agent_down();
        tokio::time::sleep(down_for).await;
        self.store.set_intention_default(intention_default);
        self.store.clear_agent_cache();
        self.store.reset_indexes();
        drop(guard);
    }

    // === CA ===

    /// Rotates the CA, with or without a cross-signed intermediate.
    pub fn rotate_ca(&self, cross_sign: bool) -> Result<(), SimError> {
        let now = OffsetDateTime::now_utc();
        self.store.write(|st| {
            let index = st.next_index();
            self.store
                .with_rng(|r| st.ca.rotate(cross_sign, now, index, r))
        })?;
        Ok(())
    }

    /// Rotates the CA onto a fresh root key of `kind` (cross-signed by the old root when
    /// `cross_sign`); the CA configuration's `PrivateKeyType`/`PrivateKeyBits` follow, so leaves
    /// issued from now on have that kind too.
    pub fn rotate_ca_to(
        &self,
        kind: crate::model::ca::KeyKind,
        cross_sign: bool,
    ) -> Result<(), SimError> {
        let now = OffsetDateTime::now_utc();
        self.store.write(|st| {
            let index = st.next_index();
            self.store
                .with_rng(|r| st.ca.rotate_kind(kind, cross_sign, now, index, r))
        })?;
        Ok(())
    }

    /// Rotates the active root's intermediate alone (simulator-only chain mode; switches it on
    /// if it was off): a new intermediate signs leaves from now on and is appended to the
    /// root's `IntermediateCerts`; the root stays.
    pub fn rotate_intermediate(&self) -> Result<(), SimError> {
        let now = OffsetDateTime::now_utc();
        self.store.write(|st| {
            let index = st.next_index();
            self.store
                .with_rng(|r| st.ca.rotate_intermediate(now, index, r))
        })?;
        Ok(())
    }

    /// Sets the TTL of leaves issued from now on.
    pub fn set_leaf_ttl(&self, ttl: Duration) {
        self.store.write(|st| st.ca.set_leaf_ttl(ttl));
    }

    /// PEMs of every root currently listed.
    pub fn root_pems(&self) -> Vec<String> {
        self.store.read(|st| st.ca.root_certs_pem())
    }

    /// The trust domain (`<cluster-id>.consul`).
    pub fn trust_domain(&self) -> String {
        self.store.read(|st| st.ca.trust_domain().to_owned())
    }

    /// A valid leaf for `service` from the active root, as a client identity.
    pub fn issue_identity(&self, service: &str) -> Result<ClientIdentity, SimError> {
        let now = OffsetDateTime::now_utc();
        let dc = self.store.cfg.datacenter.clone();
        Ok(self.store.write(|st| {
            let index = st.next_index();
            st.ca.issue_identity(service, &dc, now, index)
        })?)
    }

    /// Negative-probe material (untrusted CA, expired, foreign trust domain, ...).
    pub fn forge(&self, what: &Forgery) -> Result<ClientIdentity, SimError> {
        let now = OffsetDateTime::now_utc();
        Ok(self.store.read(|st| st.ca.forge(what, now))?)
    }

    // === config entries and intentions ===

    /// Writes a config entry given in Consul's JSON shape (as `PUT /v1/config`).
    pub fn upsert_config_entry(&self, entry: &Value) -> Result<(), SimError> {
        let body = serde_json::to_vec(entry).unwrap_or_default();
        let decoded = config_entry::decode_entry(&body).map_err(StateError::from)?;
        self.store
            .write(|st| {
                let index = st.next_index();
                st.upsert_config(decoded, None, index)
            })
            .map_err(StateError::from)?;
        Ok(())
    }

    /// Deletes a config entry.
    pub fn delete_config_entry(&self, kind: &str, name: &str) -> Result<(), SimError> {
        let kind = config_entry::Kind::parse(kind).ok_or_else(|| SimError::Rejected {
            status: 400,
            message: format!("invalid config entry kind: {kind}"),
        })?;
        self.store
            .write(|st| {
                let index = st.next_index();
                st.config.delete(kind, name, None, index)
            })
            .map_err(StateError::from)?;
        Ok(())
    }

    /// Upserts one intention (as `PUT /v1/connect/intentions/exact`); `body` is a partial
    /// Intention, e.g. `{"Action":"allow"}` or `{"Permissions":[...]}`.
    pub fn put_intention(
        &self,
        source: &str,
        destination: &str,
        body: &Value,
    ) -> Result<(), SimError> {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        self.store
            .write(|st| {
                let index = st.next_index();
                intention::exact_put(&mut st.config, source, destination, &bytes, index)
            })
            .map_err(StateError::from)?;
        Ok(())
    }

    /// Removes one intention.
    pub fn delete_intention(&self, source: &str, destination: &str) -> Result<(), SimError> {
        self.store
            .write(|st| {
                let index = st.next_index();
                intention::exact_delete(&mut st.config, source, destination, index)
            })
            .map_err(StateError::from)?;
        Ok(())
    }

    // === prepared queries ===

    /// Creates a prepared query (as `POST /v1/query` with a management token); returns its ID.
    pub fn create_prepared_query(&self, definition: &Value) -> Result<String, SimError> {
        let body = serde_json::to_vec(definition).unwrap_or_default();
        let q = crate::model::prepared_query::decode(&body)
            .map_err(|e| StateError::Invalid(format!("Request decode failed: {e}")))?;
        let id = crate::state::prepared_queries::apply(
            &self.store,
            &crate::model::acl::Authorizer::AllowAll,
            crate::state::prepared_queries::Op::Create,
            q,
        )?;
        Ok(id)
    }

    // === catalog and agent state ===

    /// Registers a service with the local agent (as `PUT /v1/agent/service/register`).
    pub fn register(&self, definition: &Value) -> Result<(), SimError> {
        let body = serde_json::to_vec(definition).unwrap_or_default();
        let def = service::decode_register(&body).map_err(StateError::from)?;
        self.store.register_local(def)?;
        Ok(())
    }

    /// Deregisters a local service (and its auto-registered sidecar).
    pub fn deregister(&self, service_id: &str) -> Result<(), SimError> {
        Ok(self.store.deregister_local(service_id)?)
    }

    /// Registers a node/service/checks in the catalog (as `PUT /v1/catalog/register`), e.g. an
    /// upstream instance on another node.
    pub fn catalog_register(&self, body: &Value) -> Result<(), SimError> {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        let reg = service::decode_catalog_register(&bytes, &self.store.cfg.datacenter)
            .map_err(StateError::from)?;
        self.store.catalog_register(reg);
        Ok(())
    }

    /// Removes a service instance from a node in the catalog.
    pub fn catalog_deregister(&self, node: &str, service_id: &str) -> Result<(), SimError> {
        Ok(self
            .store
            .catalog_deregister(node, Some(service_id), None)?)
    }

    /// The virtual IP Consul would have given `service` (from 240.0.0.1 up), once a
    /// connect-enabled instance or a resolver, router or splitter entry made it need one.
    pub fn virtual_ip(&self, service: &str) -> Option<Ipv4Addr> {
        self.store.read(|st| st.virtual_ip(service))
    }

    /// Sets a check's status (any check, on any node).
    pub fn set_check(&self, update: CheckUpdate) -> Result<(), SimError> {
        Ok(self.store.update_check(update)?)
    }

    /// Creates an ACL token from Consul policy rules (HCL or JSON); returns it.
    pub fn create_token(&self, rules: &str, description: &str) -> Result<Token, SimError> {
        self.create_token_with(None, rules, description)
    }

    /// Creates an ACL token with a chosen secret (random when `None`).
    pub fn create_token_with(
        &self,
        secret: Option<String>,
        rules: &str,
        description: &str,
    ) -> Result<Token, SimError> {
        let rules = Rules::parse(rules).map_err(|e| SimError::Rejected {
            status: 400,
            message: e.to_string(),
        })?;
        let mut uuid = || {
            self.store.with_rng(|r| {
                uuid::Builder::from_random_bytes(rand::Rng::random(r))
                    .into_uuid()
                    .to_string()
            })
        };
        let token = Token {
            accessor_id: uuid(),
            secret_id: secret.unwrap_or_else(&mut uuid),
            description: description.to_owned(),
            rules,
            management: false,
        };
        self.store.write(|st| st.tokens.insert(token.clone()));
        Ok(token)
    }

    // === request log ===

    /// Every logged request.
    pub fn request_log(&self) -> Vec<LogEntry> {
        self.log.entries()
    }

    /// Every `POST /v1/agent/connect/authorize` body so far.
    pub fn authorize_calls(&self) -> Vec<crate::state::request_log::AuthorizeCall> {
        self.log.authorize_calls()
    }

    /// The request log itself (to wait for entries).
    pub fn log(&self) -> &RequestLog {
        &self.log
    }

    /// What every xDS stream did (requests, responses, ACKs, NACKs).
    pub fn xds_log(&self) -> &crate::state::xds_log::XdsLog {
        &self.xds_log
    }
}
