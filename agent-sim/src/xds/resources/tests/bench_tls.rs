//! The sim-only benchmark render options `no_tls_resumption` and `tls_ecdh_curves`: off by
//! default; on, each sets exactly its fields of every TLS context and changes nothing else.

use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::core::v3::{TransportSocket, transport_socket::ConfigType};
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CommonTlsContext, DownstreamTlsContext, UpstreamTlsContext,
    downstream_tls_context::SessionTicketKeysType,
};
use envoy_types::pb::google::protobuf::{Any, UInt32Value};
use prost::{Message, Name};
use serde_json::json;

use super::super::{any, for_proxy};
use super::envoy::validate;
use super::{decode, sim};
use crate::state::control::Control;
use crate::xds::types::{self, Resources, TlsMode, XdsConfig};

fn render(c: &Control, tls_mode: TlsMode, no_tls_resumption: bool) -> Resources {
    let cfg = XdsConfig {
        tls_mode,
        no_tls_resumption,
        ..Default::default()
    };
    render_with(c, &cfg)
}

fn render_with(c: &Control, cfg: &XdsConfig) -> Resources {
    for_proxy(&c.store, "web-sidecar-proxy", cfg)
        .expect("builds")
        .expect("exists")
        .resources
}

/// `web` with its `db` upstream, and the mesh pinned to TLS 1.3 both ways (the benchmark's case).
fn fixture() -> Control {
    let c = sim();
    c.upsert_config_entry(&json!({"Kind": "mesh", "TLS": {
        "Incoming": {"TLSMinVersion": "TLSv1_3", "TLSMaxVersion": "TLSv1_3"},
        "Outgoing": {"TLSMinVersion": "TLSv1_3", "TLSMaxVersion": "TLSv1_3"}}}))
        .expect("mesh");
    c
}

/// Undoes the option on one transport socket, counting the contexts it found.
fn undo(s: &mut TransportSocket, up: &mut usize, down: &mut usize) {
    let Some(ConfigType::TypedConfig(a)) = s.config_type.as_mut() else {
        return;
    };
    if a.type_url == UpstreamTlsContext::type_url() {
        let mut ctx: UpstreamTlsContext = decode(a);
        assert_eq!(ctx.max_session_keys, Some(UInt32Value { value: 0 }));
        ctx.max_session_keys = None;
        *up += 1;
        *a = any(&ctx);
    } else if a.type_url == DownstreamTlsContext::type_url() {
        let mut ctx: DownstreamTlsContext = decode(a);
        assert_eq!(
            ctx.session_ticket_keys_type,
            Some(SessionTicketKeysType::DisableStatelessSessionResumption(
                true
            ))
        );
        assert!(ctx.disable_stateful_session_resumption);
        ctx.session_ticket_keys_type = None;
        ctx.disable_stateful_session_resumption = false;
        *down += 1;
        *a = any(&ctx);
    }
}

#[test]
fn off_by_default() {
    assert!(!XdsConfig::default().no_tls_resumption);
    assert!(XdsConfig::default().tls_ecdh_curves.is_empty());
    let c = fixture();
    for mode in [TlsMode::Inline, TlsMode::Sds] {
        let default = XdsConfig {
            tls_mode: mode,
            ..Default::default()
        };
        let a = render_with(&c, &default);
        assert_eq!(a, render(&c, mode, false));
        // No resumption field is set anywhere by default.
        for l in a.of(types::LISTENER) {
            let l: Listener = decode(&l.any);
            for t in l
                .filter_chains
                .iter()
                .filter_map(|fc| tls_config(&fc.transport_socket))
            {
                let ctx: DownstreamTlsContext = decode(t);
                assert!(ctx.session_ticket_keys_type.is_none());
                assert!(!ctx.disable_stateful_session_resumption);
            }
        }
        for cl in a.of(types::CLUSTER) {
            let cl: Cluster = decode(&cl.any);
            if let Some(t) = tls_config(&cl.transport_socket) {
                let ctx: UpstreamTlsContext = decode(t);
                assert!(ctx.max_session_keys.is_none());
            }
        }
    }
}

/// The typed config of a transport socket, if it has one.
fn tls_config(s: &Option<TransportSocket>) -> Option<&Any> {
    match s.as_ref()?.config_type.as_ref()? {
        ConfigType::TypedConfig(a) => Some(a),
    }
}

#[test]
fn on_changes_exactly_the_resumption_fields() {
    let c = fixture();
    for mode in [TlsMode::Inline, TlsMode::Sds] {
        let off = render(&c, mode, false);
        let on = render(&c, mode, true);
        let (up, down) = same_but(&off, &on, mode, undo);
        // The `db` upstream cluster and the public listener's one chain.
        assert_eq!((up, down), (1, 1), "{mode:?}");
    }
}

/// Undoes the curves option on one transport socket, counting the contexts it found.
fn undo_curves(s: &mut TransportSocket, up: &mut usize, down: &mut usize) {
    let Some(ConfigType::TypedConfig(a)) = s.config_type.as_mut() else {
        return;
    };
    let fix = |c: Option<&mut CommonTlsContext>| {
        let p = c.and_then(|c| c.tls_params.as_mut()).expect("tls_params");
        assert_eq!(p.ecdh_curves, ["X25519"]);
        p.ecdh_curves.clear();
    };
    if a.type_url == UpstreamTlsContext::type_url() {
        let mut ctx: UpstreamTlsContext = decode(a);
        fix(ctx.common_tls_context.as_mut());
        *up += 1;
        *a = any(&ctx);
    } else if a.type_url == DownstreamTlsContext::type_url() {
        let mut ctx: DownstreamTlsContext = decode(a);
        fix(ctx.common_tls_context.as_mut());
        *down += 1;
        *a = any(&ctx);
    }
}

#[test]
fn curves_change_exactly_the_ecdh_curves() {
    let c = fixture();
    for mode in [TlsMode::Inline, TlsMode::Sds] {
        let off = render(&c, mode, false);
        let cfg = XdsConfig {
            tls_mode: mode,
            tls_ecdh_curves: vec!["X25519".into()],
            ..Default::default()
        };
        let on = render_with(&c, &cfg);
        assert_eq!(same_but(&off, &on, mode, undo_curves), (1, 1), "{mode:?}");
    }
}

type Undo = fn(&mut TransportSocket, &mut usize, &mut usize);

/// Asserts `on` equals `off` once `undo` has reverted every TLS context of its clusters and
/// listeners; returns the (upstream, downstream) contexts reverted.
fn same_but(off: &Resources, on: &Resources, mode: TlsMode, undo: Undo) -> (usize, usize) {
    let (mut up, mut down) = (0, 0);
    for ty in types::UPSERT_ORDER {
        let names = |r: &Resources| r.of(ty).map(|x| x.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(off), names(on), "{ty} ({mode:?})");
        for (a, b) in off.of(ty).zip(on.of(ty)) {
            let undone = match ty {
                types::CLUSTER => {
                    let mut cl: Cluster = decode(&b.any);
                    for s in cl.transport_socket.iter_mut() {
                        undo(s, &mut up, &mut down);
                    }
                    cl.encode_to_vec()
                }
                types::LISTENER => {
                    let mut l: Listener = decode(&b.any);
                    for fc in &mut l.filter_chains {
                        if let Some(s) = fc.transport_socket.as_mut() {
                            undo(s, &mut up, &mut down);
                        }
                    }
                    l.encode_to_vec()
                }
                _ => b.any.value.clone(),
            };
            assert_eq!(undone, a.any.value, "{} ({mode:?})", b.name);
        }
    }
    (up, down)
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn envoy_accepts_no_resumption_and_x25519_with_tls13() {
    let c = fixture();
    for mode in [TlsMode::Inline, TlsMode::Sds] {
        let cfg = XdsConfig {
            tls_mode: mode,
            no_tls_resumption: true,
            tls_ecdh_curves: vec!["X25519".into()],
        };
        validate("bench TLS options", &render_with(&c, &cfg)).expect("envoy accepts");
    }
}
