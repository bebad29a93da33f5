//! The `service-resolver` config entry: subsets, redirect, failover, timeouts, load balancer;
//! validation as Consul CE does it (Enterprise-only fields rejected).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::{
    FAILOVER_POLICY, FailoverPolicy, PRIORITIZE_BY_LOCALITY, PrioritizeByLocality, is_false,
    is_zero_i64, ser_duration_string, validate_meta,
};
use super::load_balancer::{LOAD_BALANCER, LoadBalancer, validate_load_balancer};
use super::{go_quote, multierror};
use crate::go::duration::GoDuration;
use crate::go::filter::{Filter, FilterError};
use crate::go::mapstructure::{Field, Schema, Ty};

/// A `service-resolver` entry. Field order follows Go's custom `MarshalJSON`, which writes
/// `ConnectTimeout` and `RequestTimeout` (as duration strings) before everything else.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceResolver {
    /// Nanoseconds.
    #[serde(
        rename = "ConnectTimeout",
        skip_serializing_if = "is_zero_i64",
        serialize_with = "ser_duration_string"
    )]
    pub connect_timeout: i64,
    /// Nanoseconds.
    #[serde(
        rename = "RequestTimeout",
        skip_serializing_if = "is_zero_i64",
        serialize_with = "ser_duration_string"
    )]
    pub request_timeout: i64,
    #[serde(rename = "Kind")]
    pub kind: String,
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "DefaultSubset", skip_serializing_if = "String::is_empty")]
    pub default_subset: String,
    #[serde(rename = "Subsets", skip_serializing_if = "BTreeMap::is_empty")]
    pub subsets: BTreeMap<String, ResolverSubset>,
    #[serde(rename = "Redirect", skip_serializing_if = "Option::is_none")]
    pub redirect: Option<ResolverRedirect>,
    #[serde(rename = "Failover", skip_serializing_if = "BTreeMap::is_empty")]
    pub failover: BTreeMap<String, ResolverFailover>,
    #[serde(
        rename = "PrioritizeByLocality",
        skip_serializing_if = "Option::is_none"
    )]
    pub prioritize_by_locality: Option<PrioritizeByLocality>,
    #[serde(rename = "LoadBalancer", skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancer>,
    #[serde(rename = "Meta", skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
    #[serde(rename = "Hash", skip_serializing)]
    pub hash: u64,
    #[serde(rename = "CreateIndex", skip_deserializing)]
    pub create_index: u64,
    #[serde(rename = "ModifyIndex", skip_deserializing)]
    pub modify_index: u64,
}

/// `ServiceResolverSubset`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ResolverSubset {
    #[serde(rename = "Filter", skip_serializing_if = "String::is_empty")]
    pub filter: String,
    #[serde(rename = "OnlyPassing", skip_serializing_if = "is_false")]
    pub only_passing: bool,
}

/// `ServiceResolverRedirect`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ResolverRedirect {
    #[serde(rename = "Service", skip_serializing_if = "String::is_empty")]
    pub service: String,
    #[serde(rename = "ServiceSubset", skip_serializing_if = "String::is_empty")]
    pub service_subset: String,
    #[serde(rename = "Namespace", skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(rename = "Partition", skip_serializing_if = "String::is_empty")]
    pub partition: String,
    #[serde(rename = "Datacenter", skip_serializing_if = "String::is_empty")]
    pub datacenter: String,
    #[serde(rename = "Peer", skip_serializing_if = "String::is_empty")]
    pub peer: String,
    #[serde(rename = "SamenessGroup", skip_serializing_if = "String::is_empty")]
    pub sameness_group: String,
}

/// `ServiceResolverFailover`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ResolverFailover {
    #[serde(rename = "Service", skip_serializing_if = "String::is_empty")]
    pub service: String,
    #[serde(rename = "ServiceSubset", skip_serializing_if = "String::is_empty")]
    pub service_subset: String,
    #[serde(rename = "Namespace", skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(rename = "SamenessGroup", skip_serializing_if = "String::is_empty")]
    pub sameness_group: String,
    #[serde(rename = "Datacenters", skip_serializing_if = "Vec::is_empty")]
    pub datacenters: Vec<String>,
    #[serde(rename = "Targets", skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<FailoverTarget>,
    #[serde(rename = "Policy", skip_serializing_if = "Option::is_none")]
    pub policy: Option<FailoverPolicy>,
}

/// `ServiceResolverFailoverTarget`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FailoverTarget {
    #[serde(rename = "Service", skip_serializing_if = "String::is_empty")]
    pub service: String,
    #[serde(rename = "ServiceSubset", skip_serializing_if = "String::is_empty")]
    pub service_subset: String,
    #[serde(rename = "Partition", skip_serializing_if = "String::is_empty")]
    pub partition: String,
    #[serde(rename = "Namespace", skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(rename = "Datacenter", skip_serializing_if = "String::is_empty")]
    pub datacenter: String,
    #[serde(rename = "Peer", skip_serializing_if = "String::is_empty")]
    pub peer: String,
}

static SUBSET: Schema = Schema {
    fields: &[Field("Filter", Ty::Str), Field("OnlyPassing", Ty::Bool)],
};
static SUBSET_TY: Ty = Ty::Struct(&SUBSET);
static REDIRECT: Schema = Schema {
    fields: &[
        Field("Service", Ty::Str),
        Field("ServiceSubset", Ty::Str),
        Field("Namespace", Ty::Str),
        Field("Partition", Ty::Str),
        Field("Datacenter", Ty::Str),
        Field("Peer", Ty::Str),
        Field("SamenessGroup", Ty::Str),
    ],
};
static TARGET: Schema = Schema {
    fields: &[
        Field("Service", Ty::Str),
        Field("ServiceSubset", Ty::Str),
        Field("Partition", Ty::Str),
        Field("Namespace", Ty::Str),
        Field("Datacenter", Ty::Str),
        Field("Peer", Ty::Str),
    ],
};
static TARGET_TY: Ty = Ty::Struct(&TARGET);
static FAILOVER: Schema = Schema {
    fields: &[
        Field("Service", Ty::Str),
        Field("ServiceSubset", Ty::Str),
        Field("Namespace", Ty::Str),
        Field("SamenessGroup", Ty::Str),
        Field("Datacenters", Ty::Slice(&Ty::Str)),
        Field("Targets", Ty::Slice(&TARGET_TY)),
        Field("Policy", Ty::Struct(&FAILOVER_POLICY)),
    ],
};
static FAILOVER_TY: Ty = Ty::Struct(&FAILOVER);
pub(crate) static SCHEMA: Schema = Schema {
    fields: &[
        Field("Kind", Ty::Str),
        Field("Name", Ty::Str),
        Field("DefaultSubset", Ty::Str),
        Field("Subsets", Ty::Map(&SUBSET_TY)),
        Field("Redirect", Ty::Struct(&REDIRECT)),
        Field("Failover", Ty::Map(&FAILOVER_TY)),
        Field("ConnectTimeout", Ty::Duration),
        Field("RequestTimeout", Ty::Duration),
        Field("PrioritizeByLocality", Ty::Struct(&PRIORITIZE_BY_LOCALITY)),
        Field("LoadBalancer", Ty::Struct(&LOAD_BALANCER)),
        Field("Meta", Ty::Map(&Ty::Str)),
        Field("Hash", Ty::Uint("uint64")),
    ],
};

/// Subset names must be usable as DNS labels (they end up in SNI names).
fn valid_subset_name(name: &str) -> bool {
    let b = name.as_bytes();
    let inner_ok = b
        .iter()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    let edge = |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    !b.is_empty() && b.len() <= 63 && inner_ok && edge(b.first()) && edge(b.last())
}

impl ServiceResolver {
    /// True for a resolver that changes nothing (`IsDefault`).
    pub fn is_default(&self) -> bool {
        self.default_subset.is_empty()
            && self.subsets.is_empty()
            && self.redirect.is_none()
            && self.failover.is_empty()
            && self.connect_timeout == 0
            && self.request_timeout == 0
            && self.load_balancer.is_none()
    }

    pub(crate) fn normalize(&mut self) {
        self.kind = "service-resolver".into();
    }

    /// `ServiceResolverConfigEntry.Validate` (CE).
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("Name is required".into());
        }
        let meta_errs = validate_meta(&self.meta);
        if !meta_errs.is_empty() {
            return Err(multierror(&meta_errs));
        }
        for (name, subset) in &self.subsets {
            if name.is_empty() {
                return Err("Subset defined with empty name".into());
            }
            if !valid_subset_name(name) {
                return Err(format!(
                    "Subset {} is invalid: must be 63 characters or less and begin or end with lower case alphanumeric characters, and contain lower case alphanumeric characters or '-' in between",
                    go_quote(name)
                ));
            }
            // `bexpr.CreateEvaluator(subset.Filter, nil)`: the parser's message, unprefixed.
            if !subset.filter.is_empty()
                && let Err(e) = Filter::parse(&subset.filter)
            {
                let text = match e {
                    FilterError::Syntax(s) => s,
                    other => other.to_string(),
                };
                return Err(format!(
                    "Filter for subset {} is not a valid expression: {text}",
                    go_quote(name)
                ));
            }
        }
        let is_subset = |s: &str| self.subsets.contains_key(s);
        if !self.default_subset.is_empty() && !is_subset(&self.default_subset) {
            return Err(format!(
                "DefaultSubset {} is not a valid subset",
                go_quote(&self.default_subset)
            ));
        }
        if let Some(r) = &self.redirect {
            self.validate_redirect(r)?;
        }
        for (subset, f) in &self.failover {
            self.validate_failover(subset, f)?;
        }
        if self.connect_timeout < 0 {
            return Err(format!(
                "Bad ConnectTimeout '{}', must be >= 0",
                GoDuration(self.connect_timeout)
            ));
        }
        if self.request_timeout < 0 {
            return Err(format!(
                "Bad RequestTimeout '{}', must be >= 0",
                GoDuration(self.request_timeout)
            ));
        }
        PrioritizeByLocality::validate(self.prioritize_by_locality.as_ref())?;
        if let Some(lb) = &self.load_balancer {
            validate_load_balancer(lb)?;
        }
        Ok(())
    }

    fn validate_redirect(&self, r: &ResolverRedirect) -> Result<(), String> {
        if !r.partition.is_empty() {
            return Err("Redirect: Setting Partition requires Consul Enterprise".into());
        }
        if !r.namespace.is_empty() {
            return Err("Redirect: Setting Namespace requires Consul Enterprise".into());
        }
        if !r.sameness_group.is_empty() {
            return Err("Redirect: Setting SamenessGroup requires Consul Enterprise".into());
        }
        if !self.failover.is_empty() {
            return Err("Redirect and Failover cannot both be set".into());
        }
        if r.service.is_empty()
            && r.service_subset.is_empty()
            && r.datacenter.is_empty()
            && r.peer.is_empty()
        {
            return Err("Redirect is empty".into());
        }
        if !r.peer.is_empty() && !r.service_subset.is_empty() {
            return Err("Redirect.Peer cannot be set with Redirect.ServiceSubset".into());
        }
        if !r.peer.is_empty() && !r.datacenter.is_empty() {
            return Err("Redirect.Peer cannot be set with Redirect.Datacenter".into());
        }
        if r.service.is_empty() {
            if !r.service_subset.is_empty() {
                return Err("Redirect.ServiceSubset defined without Redirect.Service".into());
            }
            if !r.peer.is_empty() {
                return Err("Redirect.Peer defined without Redirect.Service".into());
            }
        } else if !r.service_subset.is_empty()
            && r.service == self.name
            && !self.subsets.contains_key(&r.service_subset)
        {
            return Err(format!(
                "Redirect.ServiceSubset {} is not a valid subset of {}",
                go_quote(&r.service_subset),
                go_quote(&self.name)
            ));
        }
        Ok(())
    }

    fn validate_failover(&self, subset: &str, f: &ResolverFailover) -> Result<(), String> {
        let prefix = format!("Bad Failover[{}]: ", go_quote(subset));
        if !f.namespace.is_empty() {
            return Err(format!(
                "{prefix}Setting Namespace requires Consul Enterprise"
            ));
        }
        if !f.sameness_group.is_empty() {
            return Err(format!(
                "{prefix}Setting SamenessGroup requires Consul Enterprise"
            ));
        }
        if f.policy.as_ref().is_some_and(|p| !p.mode.is_empty()) {
            return Err(format!(
                "{prefix}Setting failover policies requires Consul Enterprise"
            ));
        }
        if subset != "*" && !self.subsets.contains_key(subset) {
            return Err(format!("{prefix}not a valid subset subset"));
        }
        if f.service.is_empty()
            && f.service_subset.is_empty()
            && f.datacenters.is_empty()
            && f.targets.is_empty()
        {
            return Err(format!(
                "{prefix}one of Service, ServiceSubset, Namespace, Targets, or Datacenters is required"
            ));
        }
        if !f.service_subset.is_empty()
            && (f.service.is_empty() || f.service == self.name)
            && !self.subsets.contains_key(&f.service_subset)
        {
            return Err(format!(
                "{prefix}ServiceSubset {} is not a valid subset of {}",
                go_quote(&f.service_subset),
                go_quote(&f.service)
            ));
        }
        if !f.datacenters.is_empty() && !f.targets.is_empty() {
            return Err(format!("{prefix}Targets cannot be set with Datacenters"));
        }
        if !f.service_subset.is_empty() && !f.targets.is_empty() {
            return Err(format!("{prefix}Targets cannot be set with ServiceSubset"));
        }
        if !f.service.is_empty() && !f.targets.is_empty() {
            return Err(format!("{prefix}Targets cannot be set with Service"));
        }
        for (i, t) in f.targets.iter().enumerate() {
            let tp = format!("Bad Failover[{}].Targets[{i}]: ", go_quote(subset));
            let err = if !t.partition.is_empty() {
                Some("Setting Partition requires Consul Enterprise".to_owned())
            } else if !t.namespace.is_empty() {
                Some("Setting Namespace requires Consul Enterprise".to_owned())
            } else if !t.peer.is_empty() && !t.service_subset.is_empty() {
                Some("Peer cannot be set with ServiceSubset".to_owned())
            } else if !t.peer.is_empty() && !t.datacenter.is_empty() {
                Some("Peer cannot be set with Datacenter".to_owned())
            } else if !t.service_subset.is_empty()
                && (t.service.is_empty() || t.service == self.name)
                && !self.subsets.contains_key(&t.service_subset)
            {
                Some(format!(
                    "ServiceSubset {} is not a valid subset of {}",
                    go_quote(&t.service_subset),
                    go_quote(&self.name)
                ))
            } else {
                None
            };
            if let Some(e) = err {
                return Err(format!("{tp}{e}"));
            }
        }
        if f.datacenters.iter().any(String::is_empty) {
            return Err(format!(
                "Bad Failover[{}].Datacenters: found empty datacenter",
                go_quote(subset)
            ));
        }
        Ok(())
    }
}
