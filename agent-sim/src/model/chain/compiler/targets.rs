//! Discovery targets: their IDs (`[<subset>.]<svc>.<ns>.<ap>.<dc>`, or
//! `<svc>.<ns>.<ap>.external.<peer>`), SNI names, and the compiler's `newTarget` /
//! `rewriteTarget`, which intern targets by ID so later mutations are shared like Go's pointers.

use super::{Compiler, DEFAULT};
use crate::model::chain::ChainError;
use crate::model::chain::gofmt::go_quote;
use crate::model::chain::model::DiscoveryTarget;

/// `DiscoveryTargetOpts`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TargetOpts {
    pub(crate) service: String,
    pub(crate) service_subset: String,
    pub(crate) namespace: String,
    pub(crate) partition: String,
    pub(crate) datacenter: String,
    pub(crate) peer: String,
}

impl TargetOpts {
    pub(crate) fn service(name: &str) -> Self {
        Self {
            service: name.to_owned(),
            ..Self::default()
        }
    }

    fn of(t: &DiscoveryTarget) -> Self {
        Self {
            service: t.service.clone(),
            service_subset: t.service_subset.clone(),
            namespace: t.namespace.clone(),
            partition: t.partition.clone(),
            datacenter: t.datacenter.clone(),
            peer: t.peer.clone(),
        }
    }

    /// `ChainID`.
    fn id(&self) -> String {
        let Self {
            service: svc,
            service_subset: subset,
            namespace: ns,
            partition: ap,
            datacenter: dc,
            peer,
        } = self;
        if !peer.is_empty() {
            format!("{svc}.{ns}.{ap}.external.{peer}")
        } else if subset.is_empty() {
            format!("{svc}.{ns}.{ap}.{dc}")
        } else {
            format!("{subset}.{svc}.{ns}.{ap}.{dc}")
        }
    }
}

/// `connect.TargetSNI`: `[<subset>.]<svc>.<ns>.<dc>.internal.<td>` in the default partition,
/// `[<subset>.]<svc>.<ns>.<ap>.<dc>.internal-v1.<td>` elsewhere.
pub(crate) fn service_sni(o: &TargetOpts, trust_domain: &str) -> String {
    let ns = if o.namespace.is_empty() {
        DEFAULT
    } else {
        &o.namespace
    };
    let ap = if o.partition.is_empty() {
        DEFAULT
    } else {
        &o.partition
    };
    let mut parts: Vec<&str> = Vec::with_capacity(7);
    if !o.service_subset.is_empty() {
        parts.push(&o.service_subset);
    }
    parts.push(&o.service);
    parts.push(ns);
    if ap == DEFAULT {
        parts.extend([o.datacenter.as_str(), "internal", trust_domain]);
    } else {
        parts.extend([ap, o.datacenter.as_str(), "internal-v1", trust_domain]);
    }
    parts.join(".")
}

impl Compiler<'_> {
    /// `newTarget`: fills in the evaluation context and returns the ID of the (possibly already
    /// loaded) target.
    pub(crate) fn new_target(&mut self, mut o: TargetOpts) -> String {
        if o.peer.is_empty() {
            for (field, default) in [
                (&mut o.datacenter, self.datacenter.as_str()),
                (&mut o.namespace, DEFAULT),
                (&mut o.partition, DEFAULT),
            ] {
                if field.is_empty() {
                    *field = default.to_owned();
                }
            }
        } else {
            // Peer targets have no datacenter; in CE namespace and partition are `default`.
            o.datacenter.clear();
            o.partition = DEFAULT.to_owned();
            o.namespace = DEFAULT.to_owned();
        }
        let id = o.id();
        if !self.loaded_targets.contains_key(&id) {
            // Peer targets get no SNI: the peer's trust domain is unknown here.
            let sni = if o.peer.is_empty() {
                service_sni(&o, &self.trust_domain)
            } else {
                String::new()
            };
            let target = DiscoveryTarget {
                id: id.clone(),
                service: o.service,
                service_subset: o.service_subset,
                namespace: o.namespace,
                partition: o.partition,
                datacenter: o.datacenter,
                peer: o.peer,
                name: sni.clone(),
                sni,
                ..DiscoveryTarget::default()
            };
            self.loaded_targets.insert(id.clone(), target);
        }
        id
    }

    /// `rewriteTarget`: applies a redirect / failover / default-subset onto a target.
    pub(crate) fn rewrite_target(
        &mut self,
        target_id: &str,
        opts: TargetOpts,
    ) -> Result<String, ChainError> {
        let mut merged = TargetOpts::of(self.target(target_id)?);
        if !opts.service.is_empty() && opts.service != merged.service {
            merged.service = opts.service;
            // A different service does not share our subsets.
            merged.service_subset.clear();
        }
        if !opts.service_subset.is_empty() {
            merged.service_subset = opts.service_subset;
        }
        if !opts.partition.is_empty() {
            merged.partition = opts.partition;
        }
        if !opts.namespace.is_empty() || !opts.peer.is_empty() {
            merged.namespace = opts.namespace;
        }
        if !opts.datacenter.is_empty() {
            merged.datacenter = opts.datacenter;
        }
        merged.peer = opts.peer;
        Ok(self.new_target(merged))
    }

    pub(crate) fn target(&self, id: &str) -> Result<&DiscoveryTarget, ChainError> {
        self.loaded_targets.get(id).ok_or_else(|| {
            ChainError::Internal(format!("unknown discovery target {}", go_quote(id)))
        })
    }

    pub(crate) fn target_mut(&mut self, id: &str) -> Result<&mut DiscoveryTarget, ChainError> {
        self.loaded_targets.get_mut(id).ok_or_else(|| {
            ChainError::Internal(format!("unknown discovery target {}", go_quote(id)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(subset: &str, ap: &str) -> TargetOpts {
        TargetOpts {
            service: "db".into(),
            service_subset: subset.into(),
            namespace: "default".into(),
            partition: ap.into(),
            datacenter: "dc1".into(),
            peer: String::new(),
        }
    }

    #[test]
    fn ids_and_sni_follow_consul() {
        let td = "7e567ac2-551d-463f-8497-f78972856fc1.consul";
        assert_eq!(opts("", "default").id(), "db.default.default.dc1");
        assert_eq!(opts("v1", "default").id(), "v1.db.default.default.dc1");
        assert_eq!(
            service_sni(&opts("", "default"), td),
            format!("db.default.dc1.internal.{td}")
        );
        assert_eq!(
            service_sni(&opts("v1", "default"), td),
            format!("v1.db.default.dc1.internal.{td}")
        );
        assert_eq!(
            service_sni(&opts("v1", "ap1"), td),
            format!("v1.db.default.ap1.dc1.internal-v1.{td}")
        );
        let peer = TargetOpts {
            peer: "cluster-01".into(),
            datacenter: String::new(),
            ..opts("", "default")
        };
        assert_eq!(peer.id(), "db.default.default.external.cluster-01");
    }
}
