//! The server's config-entries table: upsert/delete with check-and-set, the table index, the
//! effective protocol of a service and the central config merged into sidecar registrations.

use std::collections::BTreeMap;

use super::{ConfigEntry, ConfigError, Kind, MeshConfigEntry, ServiceIntentions, graph};

/// `permissiveModeNotAllowedError` (state store, `checkMutualTLSMode`).
const PERMISSIVE_NOT_ALLOWED: &str = "cannot set MutualTLSMode=permissive because AllowEnablingPermissiveMutualTLS=false in the mesh config entry";

/// All config entries, keyed by kind and name. Cheap enough to clone for snapshots.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConfigEntries {
    entries: BTreeMap<(Kind, String), ConfigEntry>,
    /// Index of the table: raised by every write and every effective deletion.
    index: u64,
}

/// Central config for a proxy; the service model owns the type.
pub use crate::model::service::CentralConfig;

impl ConfigEntries {
    pub fn new() -> Self {
        Self::default()
    }

    /// Normalizes, validates (including cross-entry rules) and stores `entry`. With `cas`, writes
    /// only if the current `ModifyIndex` equals it (`Some(0)`: only if absent) and returns
    /// `Ok(false)` otherwise. Sets `CreateIndex`/`ModifyIndex` from `index`.
    pub fn upsert(
        &mut self,
        mut entry: ConfigEntry,
        cas: Option<u64>,
        index: u64,
    ) -> Result<bool, ConfigError> {
        entry.normalize().map_err(ConfigError::Invalid)?;
        entry.validate().map_err(ConfigError::Invalid)?;
        let key = (entry.kind(), entry.name().to_owned());
        let existing = self.entries.get(&key);
        if let Some(cas) = cas {
            let ok = match existing {
                None => cas == 0,
                Some(e) => cas != 0 && e.modify_index() == cas,
            };
            if !ok {
                return Ok(false);
            }
        }
        self.check_mutual_tls_mode(&entry, existing)?;
        super::jwt_refs::check_providers_exist(self, &entry).map_err(ConfigError::Invalid)?;
        graph::validate_proposed(self, key.0, &key.1, Some(&entry))
            .map_err(ConfigError::Invalid)?;
        let create = existing.map_or(index, ConfigEntry::create_index);
        entry.set_indexes(create, index);
        self.entries.insert(key, entry);
        self.index = self.index.max(index);
        Ok(true)
    }

    /// `checkMutualTLSMode`: *changing* a proxy-defaults or service-defaults `MutualTLSMode` to
    /// `permissive` needs `AllowEnablingPermissiveMutualTLS` in the mesh entry; an entry that
    /// already is permissive may stay so after the mesh entry stops allowing it.
    fn check_mutual_tls_mode(
        &self,
        new: &ConfigEntry,
        existing: Option<&ConfigEntry>,
    ) -> Result<(), ConfigError> {
        let mode = |e: &ConfigEntry| match e {
            ConfigEntry::ProxyDefaults(p) => Some(p.mutual_tls_mode.clone()),
            ConfigEntry::ServiceDefaults(s) => Some(s.mutual_tls_mode.clone()),
            _ => None,
        };
        let Some(new_mode) = mode(new) else {
            return Ok(());
        };
        if new_mode != "permissive" || existing.and_then(mode).as_deref() == Some("permissive") {
            return Ok(());
        }
        if self
            .mesh()
            .is_some_and(|m| m.allow_enabling_permissive_mutual_tls)
        {
            return Ok(());
        }
        Err(ConfigError::Invalid(PERMISSIVE_NOT_ALLOWED.into()))
    }

    /// The `mesh` entry, when one is stored.
    pub fn mesh(&self) -> Option<&MeshConfigEntry> {
        match self.get(Kind::Mesh, super::MESH_NAME)? {
            ConfigEntry::Mesh(m) => Some(m),
            _ => None,
        }
    }

    /// Stores a `service-intentions` entry written through the legacy (by-ID) intention API:
    /// `LegacyNormalize` + `LegacyValidate` (legacy IDs, times and meta kept), then the same
    /// cross-entry rules as `upsert`.
    pub fn upsert_legacy_intentions(
        &mut self,
        mut entry: ServiceIntentions,
        index: u64,
    ) -> Result<(), ConfigError> {
        entry.normalize_as(true);
        entry.validate_as(true).map_err(ConfigError::Invalid)?;
        let entry = ConfigEntry::ServiceIntentions(entry);
        let key = (entry.kind(), entry.name().to_owned());
        graph::validate_proposed(self, key.0, &key.1, Some(&entry))
            .map_err(ConfigError::Invalid)?;
        let mut entry = entry;
        let create = self
            .entries
            .get(&key)
            .map_or(index, ConfigEntry::create_index);
        entry.set_indexes(create, index);
        self.entries.insert(key, entry);
        self.index = self.index.max(index);
        Ok(())
    }

    /// Deletes an entry. Deleting an absent entry succeeds (`Ok(true)`) without touching the
    /// index; with `cas` it returns `Ok(false)` unless the entry exists with that `ModifyIndex`.
    /// Fails when the remaining entries would form an invalid graph (e.g. a router left without
    /// an L7 protocol).
    pub fn delete(
        &mut self,
        kind: Kind,
        name: &str,
        cas: Option<u64>,
        index: u64,
    ) -> Result<bool, ConfigError> {
        if kind == Kind::ProxyDefaults && !name.is_empty() && name != "global" {
            return Err(ConfigError::Invalid(format!(
                "invalid name ({}), only \"global\" is supported",
                super::go_quote(name)
            )));
        }
        let name = if kind == Kind::ProxyDefaults {
            "global"
        } else {
            name
        };
        let key = (kind, name.to_owned());
        let Some(existing) = self.entries.get(&key) else {
            return Ok(cas.is_none());
        };
        if cas.is_some_and(|c| c != existing.modify_index()) {
            return Ok(false);
        }
        graph::validate_proposed(self, kind, name, None).map_err(ConfigError::Invalid)?;
        self.entries.remove(&key);
        self.index = self.index.max(index);
        Ok(true)
    }

    pub fn get(&self, kind: Kind, name: &str) -> Option<&ConfigEntry> {
        self.entries.get(&(kind, name.to_owned()))
    }

    /// Entries of one kind, sorted by name.
    pub fn list(&self, kind: Kind) -> Vec<&ConfigEntry> {
        self.entries
            .iter()
            .filter(|((k, _), _)| *k == kind)
            .map(|(_, e)| e)
            .collect()
    }

    /// The `service-intentions` entries, sorted by destination name.
    pub(crate) fn intentions(&self) -> impl Iterator<Item = &ServiceIntentions> {
        self.entries.values().filter_map(|e| match e {
            ConfigEntry::ServiceIntentions(i) => Some(i),
            _ => None,
        })
    }

    /// The `service-intentions` entry for destination `name` (a lookup by key, not a scan).
    pub(crate) fn intentions_for(&self, name: &str) -> Option<&ServiceIntentions> {
        match self.get(Kind::ServiceIntentions, name)? {
            ConfigEntry::ServiceIntentions(i) => Some(i),
            _ => None,
        }
    }

    /// The table index (max `ModifyIndex` ever written, raised by deletions too).
    pub fn max_index(&self) -> u64 {
        self.index
    }

    /// The effective protocol as the discovery chain sees it: an existing `service-defaults`
    /// decides (its empty `Protocol` means `tcp`), else `proxy-defaults` `Config.protocol`, else
    /// `tcp`; lowercased.
    pub fn protocol_of(&self, service: &str) -> String {
        graph::protocol_in(|k, n| self.get(k, n), service)
    }

    /// Central config for a proxy whose destination is `destination_service`
    /// (`ComputeResolvedServiceConfig`): proxy-defaults first, service-defaults override.
    pub fn central_config_for(&self, destination_service: &str) -> CentralConfig {
        let mut out = CentralConfig::default();
        if let Some(ConfigEntry::ProxyDefaults(pd)) = self.get(Kind::ProxyDefaults, "global") {
            out.proxy_config = pd.config.clone().unwrap_or_default();
            out.mode = Some(pd.mode.clone()).filter(|m| !m.is_empty());
            out.mutual_tls_mode = Some(pd.mutual_tls_mode.clone()).filter(|m| !m.is_empty());
            if !pd.transparent_proxy.is_zero() {
                out.transparent_proxy = serde_json::to_value(&pd.transparent_proxy).ok();
            }
            out.mesh_gateway_mode = Some(pd.mesh_gateway.mode.clone()).filter(|m| !m.is_empty());
            if !pd.expose.is_zero() {
                out.expose = serde_json::to_value(&pd.expose).ok();
            }
        }
        if let Some(ConfigEntry::ServiceDefaults(sd)) =
            self.get(Kind::ServiceDefaults, destination_service)
        {
            if !sd.protocol.is_empty() {
                out.protocol = Some(sd.protocol.clone());
            }
            if !sd.mode.is_empty() {
                out.mode = Some(sd.mode.clone());
            }
            if !sd.mutual_tls_mode.is_empty() {
                out.mutual_tls_mode = Some(sd.mutual_tls_mode.clone());
            }
            if !sd.transparent_proxy.is_zero() {
                out.transparent_proxy = serde_json::to_value(&sd.transparent_proxy).ok();
            }
            if !sd.mesh_gateway.mode.is_empty() {
                out.mesh_gateway_mode = Some(sd.mesh_gateway.mode.clone());
            }
            if !sd.expose.is_zero() {
                out.expose = serde_json::to_value(&sd.expose).ok();
            }
            // `ComputeResolvedServiceConfig` (agent/configentry/resolve.go): these four land in
            // the resolved `ProxyConfig`, over the proxy-defaults' keys of the same name.
            let pc = &mut out.proxy_config;
            if !sd.balance_inbound_connections.is_empty() {
                pc.insert(
                    "balance_inbound_connections".into(),
                    sd.balance_inbound_connections.clone().into(),
                );
            }
            for (key, value) in [
                ("max_inbound_connections", sd.max_inbound_connections),
                ("local_connect_timeout_ms", sd.local_connect_timeout_ms),
                ("local_request_timeout_ms", sd.local_request_timeout_ms),
            ] {
                if value > 0 {
                    pc.insert(key.into(), value.into());
                }
            }
        }
        out
    }

    /// Re-numbers every index to `index` (the "index reset" fault after a snapshot restore).
    pub fn reset_indexes(&mut self, index: u64) {
        for e in self.entries.values_mut() {
            e.set_indexes(index, index);
        }
        self.index = index;
    }
}
