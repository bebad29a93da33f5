//! The compiler's view of the config entries: lenient serde structs over the canonical JSON read
//! shape (PascalCase keys, unknown keys ignored, missing or `null` fields defaulted), parsed up
//! front with errors kept per entry so only entries the chain actually uses can fail it.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::ChainEntries;
use super::ChainError;
use super::definition::{
    EnvoyExtension, FailoverPolicy, LoadBalancer, ServiceRoute, ServiceSplit, Subset,
};
use super::gofmt::de_duration;

/// `service-defaults`: the fields the chain reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct ServiceDefaults {
    pub(crate) protocol: String,
    pub(crate) transparent_proxy: TransparentProxyIn,
    pub(crate) mesh_gateway: MeshGatewayIn,
    #[serde(rename = "ExternalSNI")]
    pub(crate) external_sni: String,
    pub(crate) envoy_extensions: Vec<EnvoyExtension>,
    pub(crate) meta: BTreeMap<String, String>,
}

/// `proxy-defaults` (the `global` entry): the fields the chain reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct ProxyDefaults {
    pub(crate) config: Map<String, Value>,
    pub(crate) transparent_proxy: TransparentProxyIn,
    pub(crate) mesh_gateway: MeshGatewayIn,
    pub(crate) envoy_extensions: Vec<EnvoyExtension>,
    pub(crate) failover_policy: Option<FailoverPolicy>,
    pub(crate) prioritize_by_locality: Option<PrioritizeByLocalityIn>,
}

impl ProxyDefaults {
    /// `Config.protocol` as mapstructure's `WeakDecode` reads it: the key matches
    /// case-insensitively (exact spelling first), bools become `1`/`0`, numbers their decimal
    /// text; anything else fails the decode in Consul, which leaves the protocol unset.
    pub(crate) fn protocol(&self) -> String {
        let value = self.config.get("protocol").or_else(|| {
            let mut keys: Vec<&String> = self.config.keys().collect();
            keys.sort();
            keys.into_iter()
                .find(|k| k.eq_ignore_ascii_case("protocol"))
                .and_then(|k| self.config.get(k))
        });
        match value {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => if *b { "1" } else { "0" }.to_owned(),
            Some(Value::Number(n)) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => i.to_string(),
                (None, Some(u)) => u.to_string(),
                _ => n.as_f64().map(|f| f.to_string()).unwrap_or_default(),
            },
            _ => String::new(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct TransparentProxyIn {
    pub(crate) dialed_directly: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct MeshGatewayIn {
    pub(crate) mode: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct PrioritizeByLocalityIn {
    pub(crate) mode: String,
}

/// `service-resolver`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct Resolver {
    pub(crate) default_subset: String,
    pub(crate) subsets: BTreeMap<String, Subset>,
    pub(crate) redirect: Option<Redirect>,
    pub(crate) failover: BTreeMap<String, Failover>,
    pub(crate) prioritize_by_locality: Option<PrioritizeByLocalityIn>,
    #[serde(deserialize_with = "de_duration")]
    pub(crate) connect_timeout: i64,
    #[serde(deserialize_with = "de_duration")]
    pub(crate) request_timeout: i64,
    pub(crate) load_balancer: Option<LoadBalancer>,
}

impl Resolver {
    /// Consul's `IsDefault`: nothing configured that changes resolution.
    pub(crate) fn is_default(&self) -> bool {
        self.default_subset.is_empty()
            && self.subsets.is_empty()
            && self.redirect.is_none()
            && self.failover.is_empty()
            && self.connect_timeout == 0
            && self.request_timeout == 0
            && self.load_balancer.is_none()
            && self.prioritize_by_locality.is_none()
    }

    pub(crate) fn subset_exists(&self, name: &str) -> bool {
        name.is_empty() || self.subsets.contains_key(name)
    }
}

/// `ServiceResolverRedirect`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct Redirect {
    pub(crate) service: String,
    pub(crate) service_subset: String,
    pub(crate) namespace: String,
    pub(crate) partition: String,
    pub(crate) datacenter: String,
    pub(crate) peer: String,
    pub(crate) sameness_group: String,
}

/// `ServiceResolverFailover`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct Failover {
    pub(crate) service: String,
    pub(crate) service_subset: String,
    pub(crate) namespace: String,
    pub(crate) datacenters: Vec<String>,
    pub(crate) targets: Vec<FailoverTarget>,
    pub(crate) policy: Option<FailoverPolicy>,
    pub(crate) sameness_group: String,
}

/// `ServiceResolverFailoverTarget`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct FailoverTarget {
    pub(crate) service: String,
    pub(crate) service_subset: String,
    pub(crate) partition: String,
    pub(crate) namespace: String,
    pub(crate) datacenter: String,
    pub(crate) peer: String,
}

/// `service-splitter`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct Splitter {
    pub(crate) splits: Vec<ServiceSplit>,
}

/// `service-router`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct Router {
    pub(crate) routes: Vec<ServiceRoute>,
}

/// An entry parsed once; a malformed entry only matters if the compiler asks for it.
type Parsed<T> = Result<Rc<T>, String>;

/// All entries, parsed, keyed by service name.
pub(crate) struct EntrySet {
    service_defaults: BTreeMap<String, Parsed<ServiceDefaults>>,
    proxy_defaults: Option<Parsed<ProxyDefaults>>,
    resolvers: BTreeMap<String, Parsed<Resolver>>,
    splitters: BTreeMap<String, Parsed<Splitter>>,
    routers: BTreeMap<String, Parsed<Router>>,
}

impl EntrySet {
    pub(crate) fn parse(raw: &ChainEntries) -> Self {
        Self {
            service_defaults: parse_all(&raw.service_defaults),
            proxy_defaults: raw.proxy_defaults.as_ref().map(parse_one),
            resolvers: parse_all(&raw.resolvers),
            splitters: parse_all(&raw.splitters),
            routers: parse_all(&raw.routers),
        }
    }

    pub(crate) fn service_defaults(
        &self,
        name: &str,
    ) -> Result<Option<Rc<ServiceDefaults>>, ChainError> {
        lookup(&self.service_defaults, "service-defaults", name)
    }

    pub(crate) fn proxy_defaults(&self) -> Result<Option<Rc<ProxyDefaults>>, ChainError> {
        match &self.proxy_defaults {
            None => Ok(None),
            Some(Ok(entry)) => Ok(Some(Rc::clone(entry))),
            Some(Err(e)) => Err(bad_entry("proxy-defaults", "global", e)),
        }
    }

    pub(crate) fn resolver(&self, name: &str) -> Result<Option<Rc<Resolver>>, ChainError> {
        lookup(&self.resolvers, "service-resolver", name)
    }

    pub(crate) fn splitter(&self, name: &str) -> Result<Option<Rc<Splitter>>, ChainError> {
        lookup(&self.splitters, "service-splitter", name)
    }

    pub(crate) fn router(&self, name: &str) -> Result<Option<Rc<Router>>, ChainError> {
        lookup(&self.routers, "service-router", name)
    }
}

fn parse_all<T: DeserializeOwned>(raw: &BTreeMap<String, Value>) -> BTreeMap<String, Parsed<T>> {
    raw.iter().map(|(k, v)| (k.clone(), parse_one(v))).collect()
}

fn parse_one<T: DeserializeOwned>(raw: &Value) -> Parsed<T> {
    serde_path_to_error::deserialize(strip_nulls(raw.clone()))
        .map(Rc::new)
        .map_err(|e| e.to_string())
}

fn lookup<T>(
    map: &BTreeMap<String, Parsed<T>>,
    kind: &str,
    name: &str,
) -> Result<Option<Rc<T>>, ChainError> {
    match map.get(name) {
        None => Ok(None),
        Some(Ok(entry)) => Ok(Some(Rc::clone(entry))),
        Some(Err(e)) => Err(bad_entry(kind, name, e)),
    }
}

fn bad_entry(kind: &str, name: &str, err: &str) -> ChainError {
    ChainError::Internal(format!("invalid {kind} config entry {name:?}: {err}"))
}

/// Drops `null` object members so they read as missing (Go never distinguishes the two for these
/// fields); `Arguments` of Envoy extensions are user data and keep their nulls.
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    let v = if k == "Arguments" { v } else { strip_nulls(v) };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn proxy(config: &Value) -> ProxyDefaults {
        serde_json::from_value(json!({ "Kind": "proxy-defaults", "Config": config })).unwrap()
    }

    #[test]
    fn proxy_protocol_is_weakly_decoded() {
        assert_eq!(proxy(&json!({"protocol": "HTTP"})).protocol(), "HTTP");
        assert_eq!(proxy(&json!({"Protocol": "grpc"})).protocol(), "grpc");
        assert_eq!(
            proxy(&json!({"protocol": "http", "PROTOCOL": "tcp"})).protocol(),
            "http"
        );
        assert_eq!(proxy(&json!({"protocol": true})).protocol(), "1");
        assert_eq!(proxy(&json!({"protocol": 2})).protocol(), "2");
        assert_eq!(proxy(&json!({"protocol": ["http"]})).protocol(), "");
        assert_eq!(proxy(&json!({})).protocol(), "");
    }

    #[test]
    fn read_shape_is_lenient() {
        let resolver: Resolver = serde_json::from_value(strip_nulls(json!({
            "Kind": "service-resolver", "Name": "db", "ConnectTimeout": "15s",
            "RequestTimeout": 2_000_000_000_i64, "Subsets": null, "Redirect": null,
            "CreateIndex": 5, "Meta": {"a": "b"}
        })))
        .unwrap();
        assert_eq!(resolver.connect_timeout, 15_000_000_000);
        assert_eq!(resolver.request_timeout, 2_000_000_000);
        assert!(resolver.redirect.is_none());
        assert!(!resolver.is_default());
        let empty: Router = serde_json::from_value(strip_nulls(json!({"Routes": null}))).unwrap();
        assert!(empty.routes.is_empty());
    }

    #[test]
    fn malformed_entries_fail_only_when_used() {
        let mut raw = ChainEntries::default();
        raw.resolvers
            .insert("bad".into(), json!({"ConnectTimeout": "soon"}));
        raw.resolvers
            .insert("good".into(), json!({"ConnectTimeout": "1s"}));
        let set = EntrySet::parse(&raw);
        assert!(set.resolver("good").unwrap().is_some());
        assert!(set.resolver("missing").unwrap().is_none());
        let err = set.resolver("bad").unwrap_err();
        assert!(err.to_string().contains("ConnectTimeout"), "{err}");
    }
}
