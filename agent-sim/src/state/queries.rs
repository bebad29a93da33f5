//! Queries over the store that both surfaces answer from (the HTTP API and the xDS builders call
//! the same functions, so the two can never disagree): a local service merged with central
//! config, the default intention policy, the config entries the chain compiler reads, and a
//! transparent proxy's upstreams from intentions.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::model::chain::ChainEntries;
use crate::model::config_entry::{self, ConfigEntries, ConfigEntry, Kind};
use crate::model::intention::{self, MatchBy};
use crate::model::service::{self, NodeService, ServiceKind};
use crate::state::config::IntentionDefault;
use crate::state::store::{State, Store};

/// The config-entry view of central config, in the service model's terms.
pub(crate) fn to_service_central(c: config_entry::CentralConfig) -> service::CentralConfig {
    c
}

/// A local service as the agent serves it: with central config merged into proxies.
pub(crate) fn merged(st: &State, svc: &NodeService) -> NodeService {
    if svc.kind == ServiceKind::ConnectProxy || svc.kind.is_gateway() {
        let dest = &svc.proxy.destination_service_name;
        let mut central = st.config.central_config_for(dest);
        let upstreams: Vec<String> = svc
            .proxy
            .upstreams
            .iter()
            .map(|u| u.destination_name.clone())
            .collect();
        central.upstream_configs =
            st.config
                .upstream_configs(dest, &upstreams, &svc.proxy.mesh_gateway.mode);
        return service::merge_central_config(svc, &to_service_central(central));
    }
    svc.clone()
}

/// What decides when no intention matches: the agent's `default_intention_policy` (as set now)
/// and the ACL default.
pub(crate) fn default_policy(store: &Store) -> intention::DefaultPolicy {
    let cfg = &store.cfg;
    intention::DefaultPolicy {
        intention_default: store.intention_default().map(|p| match p {
            IntentionDefault::Allow => intention::Action::Allow,
            IntentionDefault::Deny => intention::Action::Deny,
        }),
        acl_enabled: cfg.acl.enabled,
        acl_default_allow: cfg.acl.default_policy == crate::model::acl::DefaultPolicy::Allow,
    }
}

/// The config entries the chain compiler reads, in their read shape.
pub(crate) fn chain_entries(config: &ConfigEntries) -> ChainEntries {
    let by_name = |kind: Kind| -> BTreeMap<String, Value> {
        config
            .list(kind)
            .into_iter()
            .map(|e| (e.name().to_owned(), e.to_json()))
            .collect()
    };
    ChainEntries {
        service_defaults: by_name(Kind::ServiceDefaults),
        proxy_defaults: config
            .get(Kind::ProxyDefaults, "global")
            .map(ConfigEntry::to_json),
        resolvers: by_name(Kind::ServiceResolver),
        splitters: by_name(Kind::ServiceSplitter),
        routers: by_name(Kind::ServiceRouter),
    }
}

/// Consul's intention upstreams (`IntentionTopology`, upstream direction): every typical
/// service, and every service with a virtual IP (a mesh service known only by its sidecars or
/// its chain entries: `servicesVirtualIPsTxn`), other than `source` itself and `consul`, that
/// `source` may reach by its intentions or the default; an L7 intention counts as reachable
/// (its permissions decide per request).
pub(crate) fn intention_upstreams(st: &State, source: &str, default_allow: bool) -> Vec<String> {
    let by_source = intention::matching(&st.config, MatchBy::Source, source);
    let typical = st
        .services
        .values()
        .filter(|s| s.kind == ServiceKind::Typical)
        .map(|s| s.service.as_str());
    let names: BTreeSet<&str> = typical
        .chain(st.virtual_ips.keys().map(String::as_str))
        .filter(|s| *s != source && *s != "consul")
        .collect();
    names
        .into_iter()
        .filter(|dst| {
            by_source
                .iter()
                .find(|i| i.destination_name == *dst || i.destination_name == "*")
                .map_or(default_allow, |i| i.is_l7() || i.action == "allow")
        })
        .map(str::to_owned)
        .collect()
}
