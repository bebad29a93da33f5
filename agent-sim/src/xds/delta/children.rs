//! Which child resources live inside a parent (Consul's `populateChildIndexMap`): a cluster's
//! endpoints share its name; a listener's routes are the RDS names its HTTP connection managers
//! refer to. Envoy drops the children when the parent is updated (envoy#13009), so they are
//! re-sent after it.

use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::http_connection_manager::RouteSpecifier;
use envoy_types::pb::envoy::config::listener::v3::filter::ConfigType;
use prost::{Message, Name};

use crate::xds::types::{CLUSTER, LISTENER, Resource};

/// The child names of `r` (a resource of `type_url`); empty for types without children or a
/// listener that cannot be decoded.
pub(super) fn of(type_url: &str, r: &Resource) -> Vec<String> {
    if type_url == CLUSTER {
        return vec![r.name.clone()];
    }
    if type_url != LISTENER {
        return Vec::new();
    }
    let Ok(listener) = Listener::decode(r.any.value.as_slice()) else {
        return Vec::new();
    };
    let hcm_url = HttpConnectionManager::type_url();
    let mut names = Vec::new();
    for chain in listener
        .filter_chains
        .iter()
        .chain(listener.default_filter_chain.iter())
    {
        for filter in &chain.filters {
            let Some(ConfigType::TypedConfig(any)) = &filter.config_type else {
                continue;
            };
            if any.type_url != hcm_url {
                continue;
            }
            let Ok(hcm) = HttpConnectionManager::decode(any.value.as_slice()) else {
                continue;
            };
            if let Some(RouteSpecifier::Rds(rds)) = hcm.route_specifier
                && !rds.route_config_name.is_empty()
                && !names.contains(&rds.route_config_name)
            {
                names.push(rds.route_config_name);
            }
        }
    }
    names
}
