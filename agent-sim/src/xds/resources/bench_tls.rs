//! Sim-only render options, NOT Consul's rendering (Consul has no such settings), for benchmarks
//! that need every mesh handshake to be a full one on a fixed key exchange: session resumption
//! off (`XdsConfig::no_tls_resumption`) and `tls_params.ecdh_curves` (`XdsConfig::tls_ecdh_curves`)
//! in every TLS context of the built clusters and listeners. Applied only when one is set;
//! otherwise the resources are exactly Consul's.

use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::core::v3::{TransportSocket, transport_socket::ConfigType};
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CommonTlsContext, DownstreamTlsContext, UpstreamTlsContext,
    downstream_tls_context::SessionTicketKeysType,
};
use envoy_types::pb::google::protobuf::UInt32Value;
use prost::{Message, Name};

use super::any;
use crate::xds::types::XdsConfig;

/// Every cluster's TLS contexts (`transport_socket` and `transport_socket_matches`).
pub(crate) fn clusters(cfg: &XdsConfig, clusters: &mut [Cluster]) {
    for c in clusters {
        let matches = c.transport_socket_matches.iter_mut();
        let sockets = c
            .transport_socket
            .iter_mut()
            .chain(matches.filter_map(|m| m.transport_socket.as_mut()));
        sockets.for_each(|s| socket(cfg, s));
    }
}

/// Every filter chain's TLS context of a listener (its default chain too).
pub(crate) fn listener(cfg: &XdsConfig, l: &mut Listener) {
    let chains = l
        .filter_chains
        .iter_mut()
        .chain(l.default_filter_chain.as_mut());
    for fc in chains {
        if let Some(s) = fc.transport_socket.as_mut() {
            socket(cfg, s);
        }
    }
}

/// No resumption: upstream contexts `max_session_keys: 0` (no client session cache), downstream
/// contexts no session tickets and no session-ID cache. Curves: `tls_params.ecdh_curves` of
/// both. Any other transport socket is left alone.
fn socket(cfg: &XdsConfig, s: &mut TransportSocket) {
    let Some(ConfigType::TypedConfig(a)) = s.config_type.as_mut() else {
        return;
    };
    if a.type_url == UpstreamTlsContext::type_url() {
        if let Ok(mut ctx) = UpstreamTlsContext::decode(a.value.as_slice()) {
            if cfg.no_tls_resumption {
                ctx.max_session_keys = Some(UInt32Value { value: 0 });
            }
            curves(cfg, ctx.common_tls_context.as_mut());
            *a = any(&ctx);
        }
    } else if a.type_url == DownstreamTlsContext::type_url()
        && let Ok(mut ctx) = DownstreamTlsContext::decode(a.value.as_slice())
    {
        if cfg.no_tls_resumption {
            ctx.session_ticket_keys_type = Some(
                SessionTicketKeysType::DisableStatelessSessionResumption(true),
            );
            ctx.disable_stateful_session_resumption = true;
        }
        curves(cfg, ctx.common_tls_context.as_mut());
        *a = any(&ctx);
    }
}

fn curves(cfg: &XdsConfig, common: Option<&mut CommonTlsContext>) {
    if let Some(c) = common.filter(|_| !cfg.tls_ecdh_curves.is_empty()) {
        c.tls_params
            .get_or_insert_with(Default::default)
            .ecdh_curves
            .clone_from(&cfg.tls_ecdh_curves);
    }
}
