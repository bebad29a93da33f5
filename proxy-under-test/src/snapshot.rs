//! The immutable `Snapshot` the data plane runs on: everything it needs, published through a
//! `tokio::sync::watch` channel by the control plane (or by hand in tests). The data plane never
//! calls the agent.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::authz::{DefaultPolicy, IntentionSet};
use crate::knobs::Knobs;
use crate::tls::{Leaf, TrustRoots};

/// One complete, consistent view of the proxy's configuration and security state.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The proxy's service ID (e.g. `db-sidecar-proxy`).
    pub proxy_id: String,
    /// The proxied (destination) service name, e.g. `db`.
    pub service: String,
    /// The local datacenter.
    pub datacenter: String,
    /// Inbound public listener (`Address:Port` of the proxy registration).
    pub public_listener: SocketAddr,
    /// The local application (`LocalServiceAddress:LocalServicePort`).
    pub local_app: SocketAddr,
    /// Our leaf (served inbound, presented outbound).
    pub leaf: Leaf,
    /// Trusted CA roots.
    pub roots: TrustRoots,
    /// Intentions whose destination is `service` (or `*`).
    pub intentions: Arc<IntentionSet>,
    /// What happens when no intention matches.
    pub default_policy: DefaultPolicy,
    /// Knobs from `Proxy.Config` (protocol included).
    pub knobs: Knobs,
    /// Upstream listeners and their resolved endpoints.
    pub upstreams: Vec<Upstream>,
    /// Transparent mode (`Proxy.Mode = "transparent"`): the outbound listener; `None` otherwise.
    pub transparent: Option<Transparent>,
    /// Test-only broken behaviours the data plane applies.
    #[cfg(feature = "sabotage")]
    pub sabotage: crate::sabotage::Hooks,
}

/// Transparent mode: one outbound listener receiving the application's redirected TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transparent {
    /// `127.0.0.1:<TransparentProxy.OutboundListenerPort>` (default port 15001).
    pub outbound: SocketAddr,
}

/// One upstream: a local listener and the targets behind it, in failover order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// The upstream's destination name as registered (`DestinationName`).
    pub name: String,
    /// Local listener `LocalBindAddress:LocalBindPort`.
    pub bind: SocketAddr,
    /// Dial + handshake timeout per endpoint attempt.
    pub connect_timeout: Duration,
    /// Primary target first, then failover targets (used when earlier ones have no endpoint).
    pub targets: Vec<Target>,
    /// Virtual IPs that reach this upstream through the transparent listener (the chain's
    /// `AutoVirtualIPs`/`ManualVirtualIPs`, then the targets' `consul-virtual` addresses).
    pub virtual_ips: Vec<IpAddr>,
}

/// One discovery-chain target with its healthy, connect-capable endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Chain target ID, e.g. `cache.default.default.dc1`.
    pub id: String,
    /// The service the endpoints must prove to be.
    pub service: String,
    /// Namespace (`default` in CE).
    pub namespace: String,
    /// The target's datacenter.
    pub datacenter: String,
    /// Healthy endpoints (from `/v1/health/connect/<service>?passing=1`).
    pub endpoints: Vec<Endpoint>,
}

/// A dialable instance of a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `Service.Address`, or `Node.Address` when empty (IP or host name).
    pub host: String,
    /// `Service.Port`.
    pub port: u16,
    /// The node's datacenter (part of the SPIFFE ID the instance must present).
    pub datacenter: String,
    /// For logs: `<node>/<service id>`.
    pub label: String,
    /// The instance's sidecar sets `TransparentProxy.DialedDirectly`: a transparent client may
    /// dial its IP directly (any port) and gets mTLS to that address.
    pub dialed_directly: bool,
}

impl Snapshot {
    /// The upstream named `name` configured to listen on `bind`, if any.
    pub fn upstream_at(&self, name: &str, bind: SocketAddr) -> Option<&Upstream> {
        self.upstreams
            .iter()
            .find(|u| u.name == name && u.bind == bind)
    }

    /// The upstream named `name`, if any.
    pub fn upstream(&self, name: &str) -> Option<&Upstream> {
        self.upstreams.iter().find(|u| u.name == name)
    }
}
