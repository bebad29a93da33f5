//! The control planes (in-process agent-sims, one as Consul renders and one for the issue's
//! TLS 1.3 full-handshake comparison, see [`start_sim`]; each serves the HTTP API for the
//! reference proxy, xDS for Envoy, the CA for both) and what every proxy kind is registered as.
//! Each kind gets its own services (suffix `-<key>`), so no proxy ever routes to another kind's
//! sidecar:
//!
//! - `tcp-K` (protocol tcp), `h1-K` (`http`), `h2-K` (`http2`), `grpc-K` (`grpc`): one instance
//!   each, its sidecar's public listener is "B";
//! - `api-K` (`http`): instances `v1` and `v2` (`Meta.version`), a service-resolver with subsets
//!   `v1`/`v2`, a service-splitter 50/50 over them, and a service-router whose rules (path
//!   prefix `/probe` -> one subset, header `x-debug` -> v2, `POST /admin` -> v2) fall through to
//!   the splitter;
//! - `client-K`: the caller, whose sidecar ("A") has one upstream listener per destination;
//! - an intention `client-K -> *` allow.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::atomic::{AtomicU32, Ordering};

use agent_sim::{AgentSim, Control, Listening};
use anyhow::Context;
use serde_json::json;

use crate::apps::AppPorts;

/// The destinations of a kind (upstream names without the kind suffix).
pub(crate) const DESTS: [&str; 5] = ["tcp", "h1", "h2", "grpc", "api"];

/// One registered sidecar: proxy ID and public listener.
#[derive(Debug, Clone)]
pub(crate) struct Sidecar {
    pub(crate) proxy_id: String,
    pub(crate) service: String,
    pub(crate) public: SocketAddr,
}

/// What one kind was registered as.
#[derive(Debug, Clone)]
pub(crate) struct KindMesh {
    /// The caller's sidecar (A).
    pub(crate) client: Sidecar,
    /// A's upstream listener per destination (`tcp`, `h1`, `h2`, `grpc`, `api`).
    pub(crate) entry: BTreeMap<&'static str, SocketAddr>,
    /// The B sidecars: `tcp`, `h1`, `h2`, `grpc`, `v1`, `v2`.
    pub(crate) servers: BTreeMap<&'static str, Sidecar>,
}

/// A loopback port nobody listens on, for a proxy to bind later. Taken from below the kernel's
/// ephemeral range: a `bind(0)` port is ephemeral, so until the proxy binds it, any of the run's
/// own connections (a sidecar's, Envoy's xDS stream, the load) may take it as its source port,
/// and the proxy's listener then fails to bind and its path never works (seen once in CI as
/// `envoy-full: tcp never worked: Connection reset by peer`).
pub(crate) fn free_addr() -> anyhow::Result<SocketAddr> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    const LOW: u32 = 10_000;
    if ephemeral_low > LOW + 1_000 {
        let span = ephemeral_low - LOW;
        let start = std::process::id().wrapping_mul(7_919) % span;
        for _ in 0..1_000 {
            let port = LOW + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span;
            if let Ok(l) = StdListener::bind(("127.0.0.1", port as u16)) {
                return Ok(l.local_addr()?);
            }
        }
    }
    Ok(StdListener::bind("127.0.0.1:0")?.local_addr()?)
}

/// Starts a sim: HTTP and gRPC on loopback, no health checks run. `full`: the plane of the
/// issue's comparison, a `mesh` entry with TLS 1.3 as floor and ceiling both ways (as an operator
/// would write it to Consul; both set, so Envoy's client default ceiling of TLS 1.2 cannot sit
/// under the floor) and the sim-only render options (not Consul's rendering; Consul has no
/// setting for either) `xds_no_tls_resumption` and `xds_tls_ecdh_curves = [X25519]` (Envoy 1.40
/// otherwise offers and prefers the `X25519MLKEM768` hybrid; the table says x25519).
pub(crate) async fn start_sim(full: bool) -> anyhow::Result<Listening> {
    let sim = AgentSim::builder()
        .grpc_bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .run_checks(false)
        .xds_no_tls_resumption(full)
        .xds_tls_ecdh_curves(if full { vec!["X25519"] } else { vec![] })
        .start()
        .await
        .context("agent-sim")?;
    if full {
        let v13 = json!({"TLSMinVersion": "TLSv1_3", "TLSMaxVersion": "TLSv1_3"});
        sim.control().upsert_config_entry(
            &json!({"Kind": "mesh", "TLS": {"Incoming": v13, "Outgoing": v13}}),
        )?;
    }
    Ok(sim)
}

/// The router for `api-K`, sending `/probe` to `probe_subset`.
pub(crate) fn router(key: &str, probe_subset: &str) -> serde_json::Value {
    json!({"Kind": "service-router", "Name": format!("api-{key}"), "Routes": [
        {"Match": {"HTTP": {"PathPrefix": "/probe"}},
         "Destination": {"ServiceSubset": probe_subset}},
        {"Match": {"HTTP": {"Header": [{"Name": "x-debug", "Present": true}]}},
         "Destination": {"ServiceSubset": "v2"}},
        {"Match": {"HTTP": {"PathExact": "/admin", "Methods": ["POST"]}},
         "Destination": {"ServiceSubset": "v2"}}
    ]})
}

fn sidecar(
    c: &Control,
    service: &str,
    id: &str,
    app_port: u16,
    meta: &serde_json::Value,
) -> anyhow::Result<Sidecar> {
    let public = free_addr()?;
    c.register(
        &json!({"Name": service, "ID": id, "Address": "127.0.0.1", "Port": app_port,
        "Meta": meta}),
    )?;
    let proxy_id = format!("{id}-sidecar-proxy");
    c.register(
        &json!({"Kind": "connect-proxy", "Name": format!("{service}-sidecar-proxy"),
        "ID": proxy_id, "Address": "127.0.0.1", "Port": public.port(), "Meta": meta,
        "Proxy": {"DestinationServiceName": service, "DestinationServiceID": id,
            "LocalServiceAddress": "127.0.0.1", "LocalServicePort": app_port,
            "Config": {"bind_address": "127.0.0.1"}}}),
    )?;
    Ok(Sidecar {
        proxy_id,
        service: service.to_owned(),
        public,
    })
}

/// Registers kind `key`'s services, sidecars, config entries and intention.
pub(crate) fn register(c: &Control, key: &str, apps: AppPorts) -> anyhow::Result<KindMesh> {
    let name = |d: &str| format!("{d}-{key}");
    for (d, protocol) in [
        ("h1", "http"),
        ("h2", "http2"),
        ("grpc", "grpc"),
        ("api", "http"),
    ] {
        c.upsert_config_entry(
            &json!({"Kind": "service-defaults", "Name": name(d), "Protocol": protocol}),
        )?;
    }
    let api = name("api");
    c.upsert_config_entry(&json!({"Kind": "service-resolver", "Name": api,
        "DefaultSubset": "v1", "Subsets": {
            "v1": {"Filter": "Service.Meta.version == v1"},
            "v2": {"Filter": "Service.Meta.version == v2"}}}))?;
    c.upsert_config_entry(&json!({"Kind": "service-splitter", "Name": api, "Splits": [
        {"Weight": 50, "ServiceSubset": "v1"}, {"Weight": 50, "ServiceSubset": "v2"}]}))?;
    c.upsert_config_entry(&router(key, "v1"))?;

    let none = json!({});
    let mut servers = BTreeMap::new();
    servers.insert(
        "tcp",
        sidecar(c, &name("tcp"), &name("tcp"), apps.tcp, &none)?,
    );
    for d in ["h1", "h2", "grpc"] {
        servers.insert(d, sidecar(c, &name(d), &name(d), apps.http, &none)?);
    }
    for (v, port) in [("v1", apps.v1), ("v2", apps.v2)] {
        let meta = json!({"version": v});
        servers.insert(v, sidecar(c, &api, &format!("{api}-{v}"), port, &meta)?);
    }

    let mut entry = BTreeMap::new();
    let mut upstreams = Vec::new();
    for d in DESTS {
        let at = free_addr()?;
        entry.insert(d, at);
        upstreams.push(
            json!({"DestinationName": name(d), "LocalBindAddress": "127.0.0.1",
            "LocalBindPort": at.port()}),
        );
    }
    let client = name("client");
    c.register(&json!({"Name": client, "ID": client, "Address": "127.0.0.1", "Port": 9}))?;
    let public = free_addr()?;
    let proxy_id = format!("{client}-sidecar-proxy");
    c.register(
        &json!({"Kind": "connect-proxy", "Name": proxy_id, "ID": proxy_id,
        "Address": "127.0.0.1", "Port": public.port(),
        "Proxy": {"DestinationServiceName": client, "DestinationServiceID": client,
            "LocalServiceAddress": "127.0.0.1", "LocalServicePort": 9,
            "Config": {"bind_address": "127.0.0.1"}, "Upstreams": upstreams}}),
    )?;
    c.put_intention(&client, "*", &json!({"Action": "allow"}))?;
    Ok(KindMesh {
        client: Sidecar {
            proxy_id,
            service: client,
            public,
        },
        entry,
        servers,
    })
}
