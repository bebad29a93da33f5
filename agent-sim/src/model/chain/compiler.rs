//! The discovery-chain compiler, a re-implementation of Consul CE's `discoverychain.Compile`:
//! assembles router, splitter and resolver nodes from the config entries, then rejects cycles,
//! flattens adjacent splitters, prunes unused nodes and targets, and applies the overrides.
//! Resolver nodes (redirects, subsets, failover) live in `compiler/resolve.rs`, the graph passes in
//! `compiler/graph.rs`.

mod graph;
mod resolve;
mod targets;

use std::collections::{BTreeMap, BTreeSet};

use super::ChainError;
use super::ChainRequest;
use super::definition::{EnvoyExtension, HttpMatch, RouteDestination, RouteMatch, ServiceRoute};
use super::entries::EntrySet;
use super::gofmt::go_quote;
use super::hash::customization_hash;
use super::model::{CompiledChain, DiscoveryRoute, DiscoverySplit, DiscoveryTarget, GraphNode};

pub(crate) use targets::TargetOpts;

/// CE has one namespace and one partition.
pub(crate) const DEFAULT: &str = "default";

/// Which overrides actually changed the result (`customizationMarkers`).
#[derive(Debug, Default, Clone, Copy)]
struct Customized {
    mesh_gateway: bool,
    protocol: bool,
    connect_timeout: bool,
}

pub(crate) struct Compiler<'e> {
    entries: &'e EntrySet,
    service: String,
    datacenter: String,
    trust_domain: String,
    override_mesh_gateway: String,
    override_protocol: String,
    override_connect_timeout: i64,

    /// Splitter node names and resolver target IDs that already have a node.
    splitter_nodes: BTreeSet<String>,
    resolve_nodes: BTreeSet<String>,
    uses_advanced_routing: bool,
    disable_advanced_routing: bool,
    customized: Customized,
    protocol: String,
    start_node: String,
    nodes: BTreeMap<String, GraphNode>,
    loaded_targets: BTreeMap<String, DiscoveryTarget>,
    retained_targets: BTreeSet<String>,
}

/// A `ConfigEntryGraphError`, as the server reports it after `ServiceDiscoveryChain` wraps it.
pub(crate) fn graph_error(message: &str) -> ChainError {
    ChainError::Internal(format!("failed to compile discovery chain: {message}"))
}

pub(crate) fn is_http_like(protocol: &str) -> bool {
    matches!(protocol, "http" | "http2" | "grpc")
}

fn or_default<'a>(value: &'a str, default: &'a str) -> &'a str {
    if value.is_empty() { default } else { value }
}

/// `serviceIDString`: `<name>.<namespace>.<partition>`.
fn service_id_string(name: &str) -> String {
    format!("{name}.{DEFAULT}.{DEFAULT}")
}

impl<'e> Compiler<'e> {
    pub(crate) fn new(entries: &'e EntrySet, req: &ChainRequest) -> Self {
        let override_protocol = req.override_protocol.clone().unwrap_or_default();
        Self {
            entries,
            service: req.service.clone(),
            datacenter: req.datacenter.clone(),
            trust_domain: req.trust_domain.clone(),
            override_mesh_gateway: req.override_mesh_gateway_mode.clone().unwrap_or_default(),
            disable_advanced_routing: !override_protocol.is_empty()
                && !is_http_like(&override_protocol),
            override_protocol,
            override_connect_timeout: req.override_connect_timeout.map_or(0, |d| d.0),
            splitter_nodes: BTreeSet::new(),
            resolve_nodes: BTreeSet::new(),
            uses_advanced_routing: false,
            customized: Customized::default(),
            protocol: String::new(),
            start_node: String::new(),
            nodes: BTreeMap::new(),
            loaded_targets: BTreeMap::new(),
            retained_targets: BTreeSet::new(),
        }
    }

    /// `compile()`: everything after the request has been validated.
    pub(crate) fn compile(mut self) -> Result<CompiledChain, ChainError> {
        for (what, value) in [
            ("datacenter", &self.datacenter),
            ("trust domain", &self.trust_domain),
        ] {
            if value.is_empty() {
                return Err(ChainError::Internal(format!(
                    "failed to compile discovery chain: {what} is required"
                )));
            }
        }
        let (service_meta, envoy_extensions) = self.service_context()?;
        self.assemble_chain()?;
        self.detect_circular_references()?;
        self.flatten_adjacent_splitter_nodes()?;
        self.remove_unused_nodes()?;
        let retained = std::mem::take(&mut self.retained_targets);
        self.loaded_targets.retain(|id, _| retained.contains(id));

        if !is_http_like(&self.protocol) && self.uses_advanced_routing {
            return Err(graph_error(&format!(
                "discovery chain {} uses a protocol {} that does not permit advanced routing or splitting behavior",
                go_quote(&self.service),
                go_quote(&self.protocol)
            )));
        }
        if !self.override_protocol.is_empty() && self.override_protocol != self.protocol {
            self.protocol = self.override_protocol.clone();
            self.customized.protocol = true;
        }
        let c = self.customized;
        let customization_hash = if c.mesh_gateway || c.protocol || c.connect_timeout {
            customization_hash(
                if c.mesh_gateway {
                    &self.override_mesh_gateway
                } else {
                    ""
                },
                if c.protocol {
                    &self.override_protocol
                } else {
                    ""
                },
                if c.connect_timeout {
                    self.override_connect_timeout
                } else {
                    0
                },
            )
        } else {
            String::new()
        };
        let default = self.is_default_chain();
        Ok(CompiledChain {
            service_name: self.service,
            namespace: DEFAULT.to_owned(),
            partition: DEFAULT.to_owned(),
            datacenter: self.datacenter,
            customization_hash,
            default,
            protocol: self.protocol,
            service_meta,
            envoy_extensions,
            start_node: self.start_node,
            nodes: self.nodes,
            targets: self.loaded_targets,
            auto_virtual_ips: None,
            manual_virtual_ips: None,
        })
    }

    /// Service meta from the chain service's `service-defaults`, and the Envoy extensions of
    /// `proxy-defaults` followed by the service's own.
    fn service_context(
        &self,
    ) -> Result<(BTreeMap<String, String>, Vec<EnvoyExtension>), ChainError> {
        let mut extensions = Vec::new();
        if let Some(proxy) = self.entries.proxy_defaults()? {
            extensions.extend(proxy.envoy_extensions.iter().cloned());
        }
        let mut meta = BTreeMap::new();
        if let Some(defaults) = self.entries.service_defaults(&self.service)? {
            meta = defaults.meta.clone();
            extensions.extend(defaults.envoy_extensions.iter().cloned());
        }
        Ok((meta, extensions))
    }

    fn record_node(&mut self, node: GraphNode) -> String {
        let key = node.map_key();
        if node.node_type == GraphNode::SPLITTER {
            self.splitter_nodes.insert(node.name.clone());
        } else if node.node_type == GraphNode::RESOLVER {
            self.resolve_nodes.insert(node.name.clone());
        }
        self.nodes.insert(key.clone(), node);
        key
    }

    fn record_service_protocol(&mut self, service: &str) -> Result<(), ChainError> {
        if let Some(defaults) = self.entries.service_defaults(service)? {
            return self.record_protocol(service, &defaults.protocol);
        }
        if let Some(proxy) = self.entries.proxy_defaults()? {
            let protocol = proxy.protocol();
            if !protocol.is_empty() {
                return self.record_protocol(service, &protocol);
            }
        }
        self.record_protocol(service, "")
    }

    fn record_protocol(&mut self, service: &str, protocol: &str) -> Result<(), ChainError> {
        let protocol = if protocol.is_empty() {
            "tcp".to_owned()
        } else {
            protocol.to_lowercase()
        };
        if self.protocol.is_empty() {
            self.protocol = protocol;
        } else if self.protocol != protocol {
            return Err(graph_error(&format!(
                "discovery chain {} uses inconsistent protocols; service {} has {} which is not {}",
                go_quote(&self.service),
                go_quote(service),
                go_quote(&protocol),
                go_quote(&self.protocol)
            )));
        }
        Ok(())
    }

    fn assemble_chain(&mut self) -> Result<(), ChainError> {
        let mut router = self.entries.router(&self.service)?;
        if router.is_some() && self.disable_advanced_routing {
            router = None;
            self.customized.protocol = true;
        }
        let service = self.service.clone();
        let Some(router) = router else {
            let target = self.new_target(TargetOpts::service(&service));
            self.start_node = self.splitter_or_resolver_node(&target)?;
            return Ok(());
        };

        self.uses_advanced_routing = true;
        self.record_service_protocol(&service)?;
        let mut routes = Vec::with_capacity(router.routes.len() + 1);
        for route in &router.routes {
            let dest = route.destination.clone().unwrap_or_default();
            let opts = TargetOpts {
                service: or_default(&dest.service, &service).to_owned(),
                namespace: or_default(&dest.namespace, DEFAULT).to_owned(),
                partition: or_default(&dest.partition, DEFAULT).to_owned(),
                ..TargetOpts::default()
            };
            let next_node = if dest.service_subset.is_empty() {
                let target = self.new_target(opts);
                self.splitter_or_resolver_node(&target)?
            } else {
                let target = self.new_target(TargetOpts {
                    service_subset: dest.service_subset.clone(),
                    ..opts
                });
                self.resolver_node_key(target)?
            };
            routes.push(DiscoveryRoute {
                definition: route.clone(),
                next_node,
            });
        }
        let target = self.new_target(TargetOpts {
            namespace: DEFAULT.to_owned(),
            partition: DEFAULT.to_owned(),
            ..TargetOpts::service(&service)
        });
        routes.push(DiscoveryRoute {
            definition: catch_all_route(&service),
            next_node: self.splitter_or_resolver_node(&target)?,
        });
        self.start_node = self.record_node(GraphNode {
            node_type: GraphNode::ROUTER.to_owned(),
            name: service_id_string(&service),
            routes,
            ..GraphNode::default()
        });
        Ok(())
    }

    fn splitter_or_resolver_node(&mut self, target_id: &str) -> Result<String, ChainError> {
        let service = self.target(target_id)?.service.clone();
        match self.splitter_node(&service)? {
            Some(key) => Ok(key),
            None => self.resolver_node_key(target_id.to_owned()),
        }
    }

    fn resolver_node_key(&mut self, target_id: String) -> Result<String, ChainError> {
        let id = self.resolver_node(target_id, false)?;
        Ok(format!("{}:{id}", GraphNode::RESOLVER))
    }

    fn splitter_node(&mut self, service: &str) -> Result<Option<String>, ChainError> {
        let name = service_id_string(service);
        if self.splitter_nodes.contains(&name) {
            return Ok(Some(format!("{}:{name}", GraphNode::SPLITTER)));
        }
        let mut splitter = self.entries.splitter(service)?;
        if splitter.is_some() && self.disable_advanced_routing {
            splitter = None;
            self.customized.protocol = true;
        }
        let Some(splitter) = splitter else {
            return Ok(None);
        };
        // Recorded before recursing so that a loop below finds it instead of recursing forever.
        let key = self.record_node(GraphNode {
            node_type: GraphNode::SPLITTER.to_owned(),
            name,
            ..GraphNode::default()
        });
        let mut splits = Vec::with_capacity(splitter.splits.len());
        let mut load_balancer = None;
        for split in &splitter.splits {
            let split_service = or_default(&split.service, service).to_owned();
            let mut next_node = None;
            if split_service != service && split.service_subset.is_empty() {
                next_node = self.splitter_node(&split_service)?;
            }
            let next_node = match next_node {
                Some(key) => key,
                None => {
                    let target = self.new_target(TargetOpts {
                        service: split_service,
                        service_subset: split.service_subset.clone(),
                        namespace: DEFAULT.to_owned(),
                        partition: DEFAULT.to_owned(),
                        ..TargetOpts::default()
                    });
                    let node_key = self.resolver_node_key(target)?;
                    // Only one hash policy can apply to a split route: the first one wins.
                    if load_balancer.is_none() {
                        load_balancer = self
                            .nodes
                            .get(&node_key)
                            .and_then(|n| n.load_balancer.clone())
                            .filter(|lb| lb.is_hash_based());
                    }
                    node_key
                }
            };
            splits.push(DiscoverySplit {
                definition: split.clone(),
                weight: split.weight,
                next_node,
            });
        }
        if let Some(node) = self.nodes.get_mut(&key) {
            node.splits = splits;
            node.load_balancer = load_balancer;
        }
        self.uses_advanced_routing = true;
        Ok(Some(key))
    }
}

/// The route appended to every router: everything else goes to the router's own service.
fn catch_all_route(service: &str) -> ServiceRoute {
    ServiceRoute {
        r#match: Some(RouteMatch {
            http: Some(HttpMatch {
                path_prefix: "/".to_owned(),
                ..HttpMatch::default()
            }),
        }),
        destination: Some(RouteDestination {
            service: service.to_owned(),
            namespace: DEFAULT.to_owned(),
            partition: DEFAULT.to_owned(),
            ..RouteDestination::default()
        }),
    }
}
