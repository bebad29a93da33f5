//! A speculative discovery-chain walk for one service: the compiler's checks in its order
//! (protocol consistency, routing/splitting needing L7, subsets, redirect and splitter cycles,
//! external SNI limits) without building the compiled chain.

use std::collections::BTreeSet;

use super::{is_http_like, protocol_in};
use crate::model::config_entry::{ConfigEntry, Kind, ServiceResolver, go_quote};

/// Reads an entry, with the proposed change applied.
pub(super) type Lookup<'a> = dyn Fn(Kind, &str) -> Option<&'a ConfigEntry> + 'a;

/// A discovery target (CE: namespace and partition are always `default`).
#[derive(Clone, Debug, Default)]
struct Target {
    service: String,
    subset: String,
    datacenter: String,
    peer: String,
}

impl Target {
    fn id(&self) -> String {
        if !self.peer.is_empty() {
            return format!("{}.default.default.external.{}", self.service, self.peer);
        }
        let base = format!("{}.default.default.{}", self.service, self.datacenter);
        if self.subset.is_empty() {
            base
        } else {
            format!("{}.{base}", self.subset)
        }
    }

    /// `rewriteTarget`.
    fn rewrite(&self, service: &str, subset: &str, datacenter: &str, peer: &str) -> Self {
        let mut t = self.clone();
        if !service.is_empty() && service != t.service {
            t.service = service.to_owned();
            t.subset.clear();
        }
        if !subset.is_empty() {
            t.subset = subset.to_owned();
        }
        if !datacenter.is_empty() {
            t.datacenter = datacenter.to_owned();
        }
        t.peer = peer.to_owned();
        if t.peer.is_empty() {
            if t.datacenter.is_empty() {
                t.datacenter = DC.into();
            }
        } else {
            t.datacenter.clear();
        }
        t
    }
}

/// The compiler validates with a fixed throwaway datacenter.
const DC: &str = "dc1";

pub(super) struct Compiler<'a, 'v> {
    get: &'v Lookup<'a>,
    chain: &'v str,
    protocol: Option<String>,
    advanced: bool,
    /// Node names on the current splitter recursion path (for cycle errors).
    path: Vec<String>,
    splitters_done: BTreeSet<String>,
    resolved: BTreeSet<String>,
}

impl<'a, 'v> Compiler<'a, 'v> {
    pub(super) fn new(get: &'v Lookup<'a>, chain: &'v str) -> Self {
        Self {
            get,
            chain,
            protocol: None,
            advanced: false,
            path: Vec::new(),
            splitters_done: BTreeSet::new(),
            resolved: BTreeSet::new(),
        }
    }

    /// Returns the chain's protocol.
    pub(super) fn compile(mut self) -> Result<String, String> {
        let router = match (self.get)(Kind::ServiceRouter, self.chain) {
            Some(ConfigEntry::ServiceRouter(r)) => Some(r),
            _ => None,
        };
        let chain = self.chain;
        if let Some(router) = router {
            self.advanced = true;
            self.record_protocol(chain)?;
            self.path.push(format!("router:{chain}.default.default"));
            for route in router.routes.iter().flatten() {
                let (svc, subset) = match &route.destination {
                    Some(d) => (
                        if d.service.is_empty() {
                            chain
                        } else {
                            &d.service
                        },
                        d.service_subset.as_str(),
                    ),
                    None => (chain, ""),
                };
                if subset.is_empty() {
                    self.splitter_or_resolver(svc)?;
                } else {
                    self.resolver(self.target(svc, subset), false)?;
                }
            }
        }
        self.splitter_or_resolver(chain)?;
        let proto = self.protocol.unwrap_or_else(|| "tcp".into());
        if self.advanced && !is_http_like(&proto) {
            return Err(format!(
                "discovery chain {} uses a protocol {} that does not permit advanced routing or splitting behavior",
                go_quote(chain),
                go_quote(&proto)
            ));
        }
        Ok(proto)
    }

    fn target(&self, service: &str, subset: &str) -> Target {
        Target {
            service: service.into(),
            subset: subset.into(),
            datacenter: DC.into(),
            peer: String::new(),
        }
    }

    fn record_protocol(&mut self, service: &str) -> Result<(), String> {
        let proto = protocol_in(self.get, service);
        match &self.protocol {
            None => self.protocol = Some(proto),
            Some(p) if *p != proto => {
                return Err(format!(
                    "discovery chain {} uses inconsistent protocols; service {} has {} which is not {}",
                    go_quote(self.chain),
                    go_quote(service),
                    go_quote(&proto),
                    go_quote(p)
                ));
            }
            Some(_) => {}
        }
        Ok(())
    }

    fn splitter_or_resolver(&mut self, service: &str) -> Result<(), String> {
        if !self.splitter(service)? {
            self.resolver(self.target(service, ""), false)?;
        }
        Ok(())
    }

    /// Walks the splitter for `service`; false when there is none.
    fn splitter(&mut self, service: &str) -> Result<bool, String> {
        let node = format!("splitter:{service}.default.default");
        if self.path.contains(&node) {
            let mut cycle = self.path.clone();
            cycle.push(node);
            return Err(format!(
                "detected circular reference: [{}]",
                cycle.join(" -> ")
            ));
        }
        if self.splitters_done.contains(&node) {
            return Ok(true);
        }
        let Some(ConfigEntry::ServiceSplitter(splitter)) =
            (self.get)(Kind::ServiceSplitter, service)
        else {
            return Ok(false);
        };
        self.path.push(node.clone());
        for split in &splitter.splits {
            let svc = if split.service.is_empty() {
                service
            } else {
                &split.service
            };
            if svc != service && split.service_subset.is_empty() && self.splitter(svc)? {
                continue;
            }
            self.resolver(self.target(svc, &split.service_subset), false)?;
        }
        self.path.pop();
        self.splitters_done.insert(node);
        self.advanced = true;
        Ok(true)
    }

    /// `getResolverNode`: redirects, default subsets, subset existence, external SNI, failover.
    fn resolver(&mut self, mut target: Target, for_failover: bool) -> Result<(), String> {
        let mut history: Vec<String> = Vec::new();
        let default_resolver = ServiceResolver::default();
        let resolver = loop {
            let id = target.id();
            if self.resolved.contains(&id) {
                return Ok(());
            }
            if target.peer.is_empty() {
                self.record_protocol(&target.service)?;
            }
            let resolver = match (self.get)(Kind::ServiceResolver, &target.service) {
                Some(ConfigEntry::ServiceResolver(r)) => r,
                _ => &default_resolver,
            };
            if history.contains(&id) {
                history.push(id);
                return Err(format!(
                    "detected circular resolver redirect: [{}]",
                    history.join(" -> ")
                ));
            }
            history.push(id.clone());
            if let Some(r) = &resolver.redirect {
                let next = target.rewrite(&r.service, &r.service_subset, &r.datacenter, &r.peer);
                if next.id() != id {
                    target = next;
                    continue;
                }
            }
            if target.subset.is_empty() && !resolver.default_subset.is_empty() {
                target = target.rewrite("", &resolver.default_subset, "", &target.peer.clone());
                continue;
            }
            break resolver.clone();
        };
        if !target.subset.is_empty() && !resolver.subsets.contains_key(&target.subset) {
            return Err(format!(
                "service {} does not have a subset named {}",
                go_quote(&target.service),
                go_quote(&target.subset)
            ));
        }
        let external = matches!((self.get)(Kind::ServiceDefaults, &target.service),
            Some(ConfigEntry::ServiceDefaults(sd)) if !sd.external_sni.is_empty());
        if external {
            let what = if resolver.redirect.is_some() {
                Some("redirects")
            } else if !resolver.subsets.is_empty() {
                Some("subsets")
            } else if !resolver.failover.is_empty() {
                Some("failover")
            } else {
                None
            };
            if let Some(what) = what {
                return Err(format!(
                    "service {} has an external SNI set; cannot define {what} for external services",
                    go_quote(&target.service)
                ));
            }
        }
        if for_failover {
            return Ok(());
        }
        let id = target.id();
        self.resolved.insert(id.clone());
        let failover = resolver
            .failover
            .get(&target.subset)
            .or_else(|| resolver.failover.get("*"));
        let Some(f) = failover else { return Ok(()) };
        let mut targets = Vec::new();
        if !f.datacenters.is_empty() {
            for dc in &f.datacenters {
                targets.push(target.rewrite(&f.service, &f.service_subset, dc, ""));
            }
        } else if !f.targets.is_empty() {
            for t in &f.targets {
                targets.push(target.rewrite(&t.service, &t.service_subset, &t.datacenter, &t.peer));
            }
        } else {
            targets.push(target.rewrite(&f.service, &f.service_subset, "", ""));
        }
        for t in targets.into_iter().filter(|t| t.id() != id) {
            self.resolver(t, true)?;
        }
        Ok(())
    }
}
