//! The vocabulary shared by the xDS builders, the protocol and the transport: type URLs, one
//! packed resource with its hash version, the set of resources for one proxy, and the options.

use std::collections::BTreeMap;

use envoy_types::pb::google::protobuf::Any;

/// `type.googleapis.com/envoy.config.cluster.v3.Cluster`.
pub const CLUSTER: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
/// `type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment`.
pub const ENDPOINT: &str = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
/// `type.googleapis.com/envoy.config.listener.v3.Listener`.
pub const LISTENER: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";
/// `type.googleapis.com/envoy.config.route.v3.RouteConfiguration`.
pub const ROUTE: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
/// `type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret`.
pub const SECRET: &str = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret";

/// Every type URL the server knows, in Consul's upsert order (`xDSUpdateOrder`: clusters,
/// endpoints, listeners, routes; secrets are sent first in the newest Consul so the listeners
/// that name them can warm).
pub const UPSERT_ORDER: [&str; 5] = [SECRET, CLUSTER, ENDPOINT, LISTENER, ROUTE];

pub use crate::state::config::{TlsMode, XdsConfig};

/// One resource, packed, with the version Consul gives it (a hash of its bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// The resource name (listener name, cluster name, ...).
    pub name: String,
    /// Hash version of the packed bytes.
    pub version: String,
    /// The packed message.
    pub any: Any,
}

impl Resource {
    /// Packs `msg` as `Any` and versions it by a hash of its encoding.
    pub fn pack<M: prost::Message + prost::Name>(name: impl Into<String>, msg: &M) -> Self {
        use sha2::Digest as _;
        let value = msg.encode_to_vec();
        let version = hex::encode(&sha2::Sha256::digest(&value)[..8]);
        Self {
            name: name.into(),
            version,
            any: Any {
                type_url: M::type_url(),
                value,
            },
        }
    }
}

/// Every resource of one proxy, by type URL then name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resources {
    /// type URL -> name -> resource.
    pub by_type: BTreeMap<&'static str, BTreeMap<String, Resource>>,
}

impl Resources {
    /// Adds a resource under its type URL (the type URL must be one of the constants above).
    pub fn insert(&mut self, type_url: &'static str, r: Resource) {
        self.by_type
            .entry(type_url)
            .or_default()
            .insert(r.name.clone(), r);
    }

    /// The resources of one type (empty when none).
    pub fn of(&self, type_url: &str) -> impl Iterator<Item = &Resource> {
        self.by_type
            .iter()
            .filter(move |(t, _)| **t == type_url)
            .flat_map(|(_, m)| m.values())
    }

    /// One resource by type and name.
    pub fn get(&self, type_url: &str, name: &str) -> Option<&Resource> {
        self.by_type
            .iter()
            .find(|(t, _)| **t == type_url)
            .and_then(|(_, m)| m.get(name))
    }
}
