//! The delta-ADS protocol state machine for ONE stream, as Consul's `agent/xds/delta.go` runs it
//! (no IO): per type URL the subscription mode (wildcard or explicit names), what the client has
//! ACKed (name -> hash version), the responses in flight (one per type; listeners and routes wait
//! while clusters or endpoints are unACKed), Consul's send order, the child re-send after a parent
//! upsert (envoy#13009), and NACKs (recorded; the rejected versions are not re-sent until the
//! resource set changes).
//!
//! Drive it with [`DeltaStream::recv`] for every request and [`DeltaStream::set_resources`] for
//! every new resource set, then call [`DeltaStream::poll`] (unless `recv` said not to) and send
//! what it returns, in order.

mod children;
mod diff;

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, Resource as PbResource,
};

use super::types::{CLUSTER, ENDPOINT, LISTENER, ROUTE, Resources, SECRET};

/// One step of Consul's `xDSUpdateOrder`: (type URL, upsert, remove). Secrets (newest Consul's
/// SDS for the sidecar's own leaf and roots) are upserted first so listeners and clusters that
/// name them can warm, and removed last.
pub const UPDATE_ORDER: [(&str, bool, bool); 8] = [
    (SECRET, true, false),
    (CLUSTER, true, false),
    (ENDPOINT, true, false),
    (LISTENER, true, true),
    (ROUTE, true, true),
    (CLUSTER, false, true),
    (ENDPOINT, false, true),
    (SECRET, false, true),
];

/// A request the protocol refuses (the stream ends with this as its gRPC status).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeltaError {
    /// `type_url` was empty (Consul: `codes.InvalidArgument`).
    #[error("type URL is required for ADS")]
    TypeUrlRequired,
}

/// What a request turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
    /// The first request of a type (which also fixes its subscription mode).
    NewSubscription,
    /// An ACK of `nonce`; `matched` is false for a stale or unknown nonce (ignored, as Consul).
    Ack {
        /// The nonce echoed.
        nonce: String,
        /// Whether it acknowledged a response in flight.
        matched: bool,
    },
    /// A NACK of `nonce` with Envoy's detail. Do not [`DeltaStream::poll`] after it.
    Nack {
        /// The nonce echoed.
        nonce: String,
        /// `error_detail.code`.
        code: i32,
        /// `error_detail.message`.
        message: String,
    },
    /// A subscription change without a nonce.
    Subscription,
    /// A type Consul has no handler for: ignored (no response of that type is ever sent).
    UnknownType,
}

impl Received {
    /// Whether the caller should [`DeltaStream::poll`] after this request (Consul skips the
    /// delta computation after a NACK only).
    pub fn triggers_send(&self) -> bool {
        !matches!(self, Self::Nack { .. })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Pending {
    Upsert(String),
    Remove,
}

#[derive(Debug, Default)]
pub(super) struct TypeState {
    registered: bool,
    wildcard: bool,
    sent_once: bool,
    subscriptions: BTreeSet<String>,
    /// What the client has ACKed (name -> version; "" = must be re-sent).
    versions: BTreeMap<String, String>,
    /// nonce -> name -> pending change.
    pending: BTreeMap<String, BTreeMap<String, Pending>>,
    /// NACKed changes (name -> change), not re-sent until the resource set changes.
    rejected: BTreeMap<String, Pending>,
    /// For parent types: parent name -> child names last sent with it.
    children: BTreeMap<String, Vec<String>>,
}

impl TypeState {
    fn subscribed(&self, name: &str) -> bool {
        self.wildcard || self.subscriptions.contains(name)
    }
}

/// The protocol state of one delta stream.
#[derive(Debug, Default)]
pub struct DeltaStream {
    types: BTreeMap<&'static str, TypeState>,
    nonce: u64,
    current: Option<Resources>,
}

fn known_type(type_url: &str) -> Option<&'static str> {
    [CLUSTER, ENDPOINT, LISTENER, ROUTE, SECRET]
        .into_iter()
        .find(|t| *t == type_url)
}

fn child_type(parent: &str) -> Option<&'static str> {
    match parent {
        t if t == CLUSTER => Some(ENDPOINT),
        t if t == LISTENER => Some(ROUTE),
        _ => None,
    }
}

impl DeltaStream {
    /// A fresh stream: nothing subscribed, nothing known, no resources yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Handles one request (Consul's `xDSDeltaType.Recv`).
    pub fn recv(&mut self, req: &DeltaDiscoveryRequest) -> Result<Received, DeltaError> {
        if req.type_url.is_empty() {
            return Err(DeltaError::TypeUrlRequired);
        }
        let Some(type_url) = known_type(&req.type_url) else {
            return Ok(Received::UnknownType);
        };
        let child = child_type(type_url);
        let child_registered = child
            .and_then(|c| self.types.get(c))
            .is_some_and(|c| c.registered);
        let t = self.types.entry(type_url).or_default();
        let registered_now = !t.registered;
        if registered_now {
            t.wildcard = req.resource_names_subscribe.is_empty()
                || req.resource_names_subscribe.iter().any(|n| n == "*");
            t.registered = true;
        }
        let mut ack = None;
        if !req.response_nonce.is_empty() {
            let nonce = req.response_nonce.clone();
            if let Some(detail) = &req.error_detail {
                if let Some(changes) = t.pending.remove(&nonce) {
                    t.rejected.extend(changes);
                }
                return Ok(Received::Nack {
                    nonce,
                    code: detail.code,
                    message: detail.message.clone(),
                });
            }
            let matched = match t.pending.remove(&nonce) {
                Some(changes) => {
                    for (name, change) in changes {
                        match change {
                            Pending::Remove => {
                                t.versions.remove(&name);
                            }
                            Pending::Upsert(v) => {
                                t.versions.insert(name, v);
                            }
                        }
                    }
                    t.sent_once = true;
                    true
                }
                None => false,
            };
            ack = Some(Received::Ack { nonce, matched });
        }
        if registered_now && !req.initial_resource_versions.is_empty() {
            t.versions = req
                .initial_resource_versions
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if !t.wildcard {
                t.subscriptions.extend(t.versions.keys().cloned());
            }
        }
        let mut resend_children = Vec::new();
        if !t.wildcard {
            for name in &req.resource_names_subscribe {
                t.subscriptions.insert(name.clone());
                if let Some(v) = t.versions.get_mut(name) {
                    v.clear();
                }
                if child_registered && let Some(kids) = t.children.get(name) {
                    resend_children.extend(kids.iter().cloned());
                }
            }
            for name in &req.resource_names_unsubscribe {
                t.subscriptions.remove(name);
            }
        }
        if let Some(child) = child {
            self.ensure_child_resend(type_url, child, resend_children);
        }
        Ok(if registered_now {
            Received::NewSubscription
        } else {
            ack.unwrap_or(Received::Subscription)
        })
    }

    /// Installs a new full resource set (a new snapshot). Returns whether it differs from the
    /// previous one; when it does, earlier NACKs stop suppressing re-sends.
    pub fn set_resources(&mut self, resources: Resources) -> bool {
        let changed = self.current.as_ref() != Some(&resources);
        if changed {
            for t in self.types.values_mut() {
                t.rejected.clear();
            }
        }
        self.current = Some(resources);
        changed
    }

    /// Whether a resource set was installed (Consul's `ready`).
    pub fn ready(&self) -> bool {
        self.current.is_some()
    }

    /// The responses to send now, in order (Consul's loop over `xDSUpdateOrder`).
    pub fn poll(&mut self) -> Vec<DeltaDiscoveryResponse> {
        let mut out = Vec::new();
        if self.current.is_none() {
            return out;
        }
        for (type_url, upsert, remove) in UPDATE_ORDER {
            if (type_url == LISTENER || type_url == ROUTE)
                && (self.has_pending(CLUSTER) || self.has_pending(ENDPOINT))
            {
                // Consul: "Skipping delta computation for resource because there are
                // dependent updates pending" -- and the loop stops there.
                break;
            }
            if let Some(resp) = self.send_if_new(type_url, upsert, remove) {
                out.push(resp);
            }
        }
        out
    }

    /// The nonces in flight, as (type URL, nonce).
    pub fn in_flight(&self) -> Vec<(&'static str, String)> {
        self.types
            .iter()
            .flat_map(|(t, s)| s.pending.keys().map(move |n| (*t, n.clone())))
            .collect()
    }

    /// What the client has ACKed for a type (name -> version).
    pub fn acked(&self, type_url: &str) -> BTreeMap<String, String> {
        self.types
            .get(type_url)
            .map(|t| t.versions.clone())
            .unwrap_or_default()
    }

    /// Whether a type was requested with a wildcard subscription.
    pub fn is_wildcard(&self, type_url: &str) -> Option<bool> {
        self.types
            .get(type_url)
            .filter(|t| t.registered)
            .map(|t| t.wildcard)
    }

    /// The explicit subscriptions of a type.
    pub fn subscriptions(&self, type_url: &str) -> BTreeSet<String> {
        self.types
            .get(type_url)
            .map(|t| t.subscriptions.clone())
            .unwrap_or_default()
    }

    fn has_pending(&self, type_url: &str) -> bool {
        self.types
            .get(type_url)
            .is_some_and(|t| t.registered && !t.pending.is_empty())
    }

    /// Marks children of `parent_type` as needing a re-send (Consul's `ensureChildResend`: only
    /// children the client has, and only when subscribed -- checked on the parent's handler).
    fn ensure_child_resend(&mut self, parent_type: &str, child_type: &str, kids: Vec<String>) {
        let Some(parent) = self.types.get(parent_type) else {
            return;
        };
        let kids: Vec<String> = kids.into_iter().filter(|k| parent.subscribed(k)).collect();
        if let Some(child) = self.types.get_mut(child_type) {
            for k in kids {
                if let Some(v) = child.versions.get_mut(&k) {
                    v.clear();
                }
            }
        }
    }

    /// Consul's `SendIfNew` + `createDeltaResponse` for one type.
    fn send_if_new(
        &mut self,
        type_url: &'static str,
        upsert: bool,
        remove: bool,
    ) -> Option<DeltaDiscoveryResponse> {
        let current = self.current.as_ref()?;
        let t = self.types.get_mut(type_url)?;
        if !t.registered || !t.pending.is_empty() {
            return None;
        }
        let versions: BTreeMap<&str, &str> = current
            .of(type_url)
            .map(|r| (r.name.as_str(), r.version.as_str()))
            .collect();
        // Consul: zero-length sets are "no data yet" (a connect proxy allows no empty type).
        if versions.is_empty() {
            return None;
        }
        let diff::Diff {
            updates,
            relevant,
            suppressed,
        } = diff::compute(t, &versions, upsert, remove);
        if !relevant && (t.sent_once || suppressed) {
            return None;
        }
        let mut resp = DeltaDiscoveryResponse {
            type_url: type_url.to_owned(),
            ..Default::default()
        };
        let mut real = BTreeMap::new();
        for (name, change) in updates {
            match &change {
                Pending::Remove if remove => resp.removed_resources.push(name.clone()),
                Pending::Upsert(v) if upsert => {
                    let r = current.get(type_url, &name)?;
                    resp.resources.push(PbResource {
                        name: name.clone(),
                        version: v.clone(),
                        resource: Some(r.any.clone()),
                        ..Default::default()
                    });
                }
                _ => continue,
            }
            real.insert(name, change);
        }
        self.nonce += 1;
        resp.nonce = format!("{:08x}", self.nonce);
        if let Some(child) = child_type(type_url) {
            let mut kids_all = Vec::new();
            for (name, change) in &real {
                if matches!(change, Pending::Upsert(_))
                    && let Some(r) = current.get(type_url, name)
                {
                    let kids = children::of(type_url, r);
                    t.children.insert(name.clone(), kids.clone());
                    kids_all.extend(kids);
                }
            }
            t.pending.insert(resp.nonce.clone(), real);
            self.ensure_child_resend(type_url, child, kids_all);
        } else {
            t.pending.insert(resp.nonce.clone(), real);
        }
        Some(resp)
    }
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
