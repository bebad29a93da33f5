//! Resolver nodes (`getResolverNode`): follows redirects and default subsets (rejecting redirect
//! loops), applies the resolver's timeouts, subsets, load balancer and locality settings, the
//! service's external SNI and the mesh-gateway / transparent-proxy defaults, then failover.

use std::collections::BTreeSet;
use std::rc::Rc;

use super::targets::TargetOpts;
use super::{Compiler, graph_error};
use crate::model::chain::ChainError;
use crate::model::chain::entries::{Failover, Resolver};
use crate::model::chain::gofmt::go_quote;
use crate::model::chain::model::{
    DiscoveryFailover, DiscoveryResolver, GraphNode, PrioritizeByLocality,
};

const DEFAULT_CONNECT_TIMEOUT_NS: i64 = 5_000_000_000;

impl Compiler<'_> {
    /// Returns the ID of the target the node resolves. With `for_failover` the node is built only
    /// for its target (and side effects on it), not recorded, and its own failover is ignored.
    pub(crate) fn resolver_node(
        &mut self,
        mut target_id: String,
        for_failover: bool,
    ) -> Result<String, ChainError> {
        let mut history = BTreeSet::new();
        let mut order: Vec<String> = Vec::new();
        let (target_id, resolver) = loop {
            if self.resolve_nodes.contains(&target_id) {
                return Ok(target_id);
            }
            let target = self.target(&target_id)?;
            let (service, subset, peer) = (
                target.service.clone(),
                target.service_subset.clone(),
                target.peer.clone(),
            );
            if peer.is_empty() {
                self.record_service_protocol(&service)?;
            }
            let resolver = self.entries.resolver(&service)?.unwrap_or_default();
            order.push(target_id.clone());
            if !history.insert(target_id.clone()) {
                return Err(graph_error(&format!(
                    "detected circular resolver redirect: [{}]",
                    order.join(" -> ")
                )));
            }
            // Redirects to sameness groups are failovers, handled below.
            if let Some(redirect) = resolver
                .redirect
                .as_ref()
                .filter(|r| r.sameness_group.is_empty())
            {
                let opts = TargetOpts {
                    service: redirect.service.clone(),
                    service_subset: redirect.service_subset.clone(),
                    namespace: redirect.namespace.clone(),
                    partition: redirect.partition.clone(),
                    datacenter: redirect.datacenter.clone(),
                    peer: redirect.peer.clone(),
                };
                let redirected = self.rewrite_target(&target_id, opts)?;
                if redirected != target_id {
                    target_id = redirected;
                    continue;
                }
            }
            if subset.is_empty() && !resolver.default_subset.is_empty() {
                let opts = TargetOpts {
                    service_subset: resolver.default_subset.clone(),
                    ..TargetOpts::default()
                };
                target_id = self.rewrite_target(&target_id, opts)?;
                continue;
            }
            if !resolver.subset_exists(&subset) {
                return Err(graph_error(&format!(
                    "service {} does not have a subset named {}",
                    go_quote(&service),
                    go_quote(&subset)
                )));
            }
            break (target_id, resolver);
        };

        let node = self.configure_target(&target_id, &resolver)?;
        self.retained_targets.insert(target_id.clone());
        if for_failover {
            return Ok(target_id);
        }
        // Recorded before failover so that failing over to an existing node finds it.
        let key = self.record_node(node);
        let Some(failover) = self.failover(&target_id, &resolver)? else {
            return Ok(target_id);
        };
        if let Some(resolver) = self.nodes.get_mut(&key).and_then(|n| n.resolver.as_mut()) {
            resolver.failover = Some(failover);
        }
        Ok(target_id)
    }

    /// Applies the resolver and defaults to the (shared) target and builds its resolver node.
    fn configure_target(
        &mut self,
        target_id: &str,
        resolver: &Resolver,
    ) -> Result<GraphNode, ChainError> {
        let mut connect_timeout = resolver.connect_timeout;
        if connect_timeout < 1 {
            connect_timeout = DEFAULT_CONNECT_TIMEOUT_NS;
        }
        if self.override_connect_timeout > 0 && connect_timeout != self.override_connect_timeout {
            connect_timeout = self.override_connect_timeout;
            self.customized.connect_timeout = true;
        }
        let proxy = self.entries.proxy_defaults()?;
        let own_partition = self.target(target_id)?.partition == super::DEFAULT;
        let service = self.target(target_id)?.service.clone();
        let defaults = self.entries.service_defaults(&service)?;
        let wanted_mode = self.override_mesh_gateway.clone();
        let mut mode_overridden = false;

        let target = self.target_mut(target_id)?;
        target.connect_timeout = connect_timeout;
        if own_partition && target.peer.is_empty() {
            if let Some(pbl) = &resolver.prioritize_by_locality {
                target.prioritize_by_locality = Some(PrioritizeByLocality {
                    mode: pbl.mode.clone(),
                });
            }
            if target.prioritize_by_locality.is_none() {
                let from_proxy = proxy
                    .as_ref()
                    .and_then(|p| p.prioritize_by_locality.as_ref());
                target.prioritize_by_locality = from_proxy.map(|p| PrioritizeByLocality {
                    mode: p.mode.clone(),
                });
            }
        }
        target.subset = resolver
            .subsets
            .get(&target.service_subset)
            .cloned()
            .unwrap_or_default();
        if let Some(sni) = defaults
            .as_ref()
            .map(|d| &d.external_sni)
            .filter(|s| !s.is_empty())
        {
            target.sni = sni.clone();
            target.external = true;
        }
        if target.external {
            let refused = if resolver.redirect.is_some() {
                Some("redirects")
            } else if !resolver.subsets.is_empty() {
                Some("subsets")
            } else if !resolver.failover.is_empty() {
                Some("failover")
            } else {
                None
            };
            if let Some(what) = refused {
                return Err(graph_error(&format!(
                    "service {} has an external SNI set; cannot define {what} for external services",
                    go_quote(&service)
                )));
            }
            // External services bypass mesh gateways.
            target.mesh_gateway.mode.clear();
        } else {
            if let Some(d) = &defaults {
                target.mesh_gateway.mode = d.mesh_gateway.mode.clone();
                target.transparent_proxy.dialed_directly = d.transparent_proxy.dialed_directly;
            }
            if let Some(p) = &proxy {
                if target.mesh_gateway.mode.is_empty() {
                    target.mesh_gateway.mode = p.mesh_gateway.mode.clone();
                }
                if !target.transparent_proxy.dialed_directly {
                    target.transparent_proxy.dialed_directly = p.transparent_proxy.dialed_directly;
                }
            }
            if !wanted_mode.is_empty() && target.mesh_gateway.mode != wanted_mode {
                target.mesh_gateway.mode = wanted_mode;
                mode_overridden = true;
            }
        }
        self.customized.mesh_gateway |= mode_overridden;
        Ok(GraphNode {
            node_type: GraphNode::RESOLVER.to_owned(),
            name: target_id.to_owned(),
            resolver: Some(DiscoveryResolver {
                connect_timeout,
                default: resolver.is_default(),
                request_timeout: resolver.request_timeout,
                target: target_id.to_owned(),
                failover: None,
            }),
            load_balancer: resolver.load_balancer.clone(),
            ..GraphNode::default()
        })
    }

    /// The resolver's failover for this target's subset (or `*`), with its targets resolved.
    fn failover(
        &mut self,
        target_id: &str,
        resolver: &Rc<Resolver>,
    ) -> Result<Option<DiscoveryFailover>, ChainError> {
        let service = self.target(target_id)?.service.clone();
        let sameness_missing = || {
            graph_error(&format!(
                "sameness group missing for service {}",
                go_quote(&service)
            ))
        };
        // CE has no sameness groups, so any reference to one cannot be satisfied.
        if resolver
            .redirect
            .as_ref()
            .is_some_and(|r| !r.sameness_group.is_empty())
        {
            return Err(sameness_missing());
        }
        if resolver.failover.is_empty() {
            return Ok(None);
        }
        let subset = self.target(target_id)?.service_subset.clone();
        let Some(f) = resolver
            .failover
            .get(&subset)
            .or_else(|| resolver.failover.get("*"))
        else {
            return Ok(None);
        };
        let mut policy = self
            .entries
            .proxy_defaults()?
            .and_then(|p| p.failover_policy.clone());
        if f.policy.is_some() {
            policy = f.policy.clone();
        }
        let candidates = if !f.datacenters.is_empty() {
            f.datacenters
                .iter()
                .map(|dc| TargetOpts {
                    datacenter: dc.clone(),
                    ..failover_opts(f)
                })
                .collect()
        } else if !f.targets.is_empty() {
            f.targets
                .iter()
                .map(|t| TargetOpts {
                    service: t.service.clone(),
                    service_subset: t.service_subset.clone(),
                    namespace: t.namespace.clone(),
                    partition: t.partition.clone(),
                    datacenter: t.datacenter.clone(),
                    peer: t.peer.clone(),
                })
                .collect()
        } else if !f.sameness_group.is_empty() {
            return Err(sameness_missing());
        } else {
            vec![failover_opts(f)]
        };
        let mut failover_targets = Vec::new();
        for opts in candidates {
            let candidate = self.rewrite_target(target_id, opts)?;
            // Never fail over to yourself.
            if candidate != target_id {
                failover_targets.push(candidate);
            }
        }
        if failover_targets.is_empty() {
            return Ok(None);
        }
        let mut targets = Vec::with_capacity(failover_targets.len());
        for candidate in failover_targets {
            targets.push(self.resolver_node(candidate, true)?);
        }
        Ok(Some(DiscoveryFailover {
            targets,
            policy,
            regions: Vec::new(),
        }))
    }
}

fn failover_opts(f: &Failover) -> TargetOpts {
    TargetOpts {
        service: f.service.clone(),
        service_subset: f.service_subset.clone(),
        namespace: f.namespace.clone(),
        ..TargetOpts::default()
    }
}
