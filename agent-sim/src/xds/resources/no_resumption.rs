//! A sim-only render option, NOT Consul's rendering (Consul has no such setting), for benchmarks
//! that need every mesh handshake to be a full one: session resumption off in every TLS context
//! of the built clusters and listeners. Only applied when `XdsConfig::no_tls_resumption` is set;
//! otherwise the resources are exactly Consul's.

use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::core::v3::{TransportSocket, transport_socket::ConfigType};
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    DownstreamTlsContext, UpstreamTlsContext, downstream_tls_context::SessionTicketKeysType,
};
use envoy_types::pb::google::protobuf::UInt32Value;
use prost::{Message, Name};

use super::any;

/// Every cluster's TLS contexts (`transport_socket` and `transport_socket_matches`).
pub(crate) fn clusters(clusters: &mut [Cluster]) {
    for c in clusters {
        let matches = c.transport_socket_matches.iter_mut();
        let sockets = c
            .transport_socket
            .iter_mut()
            .chain(matches.filter_map(|m| m.transport_socket.as_mut()));
        sockets.for_each(socket);
    }
}

/// Every filter chain's TLS context of a listener (its default chain too).
pub(crate) fn listener(l: &mut Listener) {
    let chains = l
        .filter_chains
        .iter_mut()
        .chain(l.default_filter_chain.as_mut());
    for fc in chains {
        if let Some(s) = fc.transport_socket.as_mut() {
            socket(s);
        }
    }
}

/// Upstream contexts: `max_session_keys: 0` (no client session cache). Downstream contexts:
/// no session tickets and no session-ID cache. Any other transport socket is left alone.
fn socket(s: &mut TransportSocket) {
    let Some(ConfigType::TypedConfig(a)) = s.config_type.as_mut() else {
        return;
    };
    if a.type_url == UpstreamTlsContext::type_url() {
        if let Ok(mut ctx) = UpstreamTlsContext::decode(a.value.as_slice()) {
            ctx.max_session_keys = Some(UInt32Value { value: 0 });
            *a = any(&ctx);
        }
    } else if a.type_url == DownstreamTlsContext::type_url()
        && let Ok(mut ctx) = DownstreamTlsContext::decode(a.value.as_slice())
    {
        ctx.session_ticket_keys_type = Some(
            SessionTicketKeysType::DisableStatelessSessionResumption(true),
        );
        ctx.disable_stateful_session_resumption = true;
        *a = any(&ctx);
    }
}
