//! The immutable `Snapshot` the data plane runs on: everything it needs, published through a
//! `tokio::sync::watch` channel by the control plane (or by hand in tests). The data plane never
//! calls the agent.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{AddrParseError, IpAddr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::authz::{DefaultPolicy, IntentionSet};
use crate::knobs::{Knobs, Protocol};
use crate::mesh::MeshSettings;
use crate::normalize::PathNormalization;
use crate::route::RouteTable;
use crate::route::limits::{Limits, Outlier};
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
    /// The local application: `LocalServiceAddress:LocalServicePort`, or the unix socket
    /// `LocalServiceSocketPath` when the registration names one.
    pub local_app: LocalApp,
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
    /// How inbound HTTP request paths are normalized before authorization (the `mesh` entry's
    /// `HTTP.Incoming.RequestNormalization`, Consul's defaults without one).
    pub path_normalization: PathNormalization,
    /// The rest of the `mesh` config entry the data plane applies (defaults with no entry).
    pub mesh: MeshSettings,
    /// The stored `jwt-provider` entries and their key caches (kept across snapshots).
    pub jwt: Arc<crate::jwt::Verifier>,
    /// What the data plane's hooks do at each decision point (nothing in the default build; see
    /// [`seam`](crate::seam)).
    pub hooks: crate::seam::Hooks,
}

/// Transparent mode: one outbound listener receiving the application's redirected TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transparent {
    /// `127.0.0.1:<TransparentProxy.OutboundListenerPort>` (default port 15001).
    pub outbound: SocketAddr,
    /// `MutualTLSMode = "permissive"`: a connection redirected to the public listener whose
    /// original destination is the application's port goes to the application in plaintext,
    /// unauthenticated and unauthorized (Consul's `makePermissiveFilterChain`, transparent mode
    /// only).
    pub permissive: bool,
}

/// One upstream: a local listener (none for an implicit one) and the targets behind it, in
/// failover order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// The upstream's destination name as registered (`DestinationName`).
    pub name: String,
    /// Local listener: `LocalBindAddress:LocalBindPort`, or the unix socket
    /// `LocalBindSocketPath` (with `LocalBindSocketMode`) when the upstream has no port;
    /// [`Bind::Implicit`] for a transparent proxy's upstream from intentions.
    pub bind: Bind,
    /// Dial + handshake timeout per endpoint attempt.
    pub connect_timeout: Duration,
    /// `http2`/`grpc`: the listener speaks h2c to the application and HTTP/2 (ALPN `h2`) to the
    /// instances; anything else is carried as bytes.
    pub protocol: Protocol,
    /// Primary target first, then failover targets (used when earlier ones have no endpoint).
    pub targets: Vec<Target>,
    /// Virtual IPs that reach this upstream through the transparent listener (the chain's
    /// `AutoVirtualIPs`/`ManualVirtualIPs`, then the targets' `consul-virtual` addresses).
    pub virtual_ips: Vec<IpAddr>,
    /// HTTP upstreams with a compiled chain: routes, every chain target, limits, outlier
    /// detection (`None`: every request goes to `targets`).
    pub l7: Option<Arc<L7Upstream>>,
}

/// An HTTP upstream's L7 configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct L7Upstream {
    /// The routes and clusters compiled from the chain.
    pub routes: RouteTable,
    /// Every target of the chain by ID, with its endpoints.
    pub targets: BTreeMap<String, Target>,
    /// Circuit breakers (`limits` of the upstream's config).
    pub limits: Limits,
    /// Outlier detection (`passive_health_check`), if configured.
    pub outlier: Option<Outlier>,
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

/// Where the application behind the proxy listens.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LocalApp {
    /// `LocalServiceAddress:LocalServicePort`.
    Tcp(SocketAddr),
    /// `LocalServiceSocketPath`.
    Unix(PathBuf),
}

impl From<SocketAddr> for LocalApp {
    fn from(addr: SocketAddr) -> Self {
        Self::Tcp(addr)
    }
}

impl PartialEq<SocketAddr> for LocalApp {
    fn eq(&self, other: &SocketAddr) -> bool {
        matches!(self, Self::Tcp(a) if a == other)
    }
}

impl fmt::Display for LocalApp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tcp(addr) => addr.fmt(f),
            Self::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// Where an upstream's local listener is bound (also the listener's identity: a change of
/// address, path or mode replaces the listener).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bind {
    /// `LocalBindAddress:LocalBindPort`.
    Tcp(SocketAddr),
    /// `LocalBindSocketPath`, with the validated `LocalBindSocketMode` (`None`: the file keeps
    /// the mode the process umask gives it).
    Unix {
        /// The socket file.
        path: PathBuf,
        /// Permission bits (`<= 0o777`) set on the socket file right after binding.
        mode: Option<u32>,
    },
    /// No local listener: an implicit upstream of a transparent proxy (derived from intentions,
    /// not in the registration), reached only through the outbound listener by virtual IP.
    Implicit,
}

impl Bind {
    /// The TCP address, for TCP binds.
    pub fn tcp(&self) -> Option<SocketAddr> {
        match self {
            Self::Tcp(addr) => Some(*addr),
            Self::Unix { .. } | Self::Implicit => None,
        }
    }

    /// Whether the upstream has a local listener of its own.
    pub fn has_listener(&self) -> bool {
        !matches!(self, Self::Implicit)
    }
}

impl From<SocketAddr> for Bind {
    fn from(addr: SocketAddr) -> Self {
        Self::Tcp(addr)
    }
}

impl PartialEq<SocketAddr> for Bind {
    fn eq(&self, other: &SocketAddr) -> bool {
        self.tcp().as_ref() == Some(other)
    }
}

/// Parses a TCP bind (`ip:port`).
impl FromStr for Bind {
    type Err = AddrParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(Self::Tcp)
    }
}

impl fmt::Display for Bind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tcp(addr) => addr.fmt(f),
            Self::Unix { path, mode: None } => write!(f, "unix:{}", path.display()),
            Self::Unix {
                path,
                mode: Some(mode),
            } => write!(f, "unix:{} (mode {mode:04o})", path.display()),
            Self::Implicit => f.write_str("implicit (outbound listener only)"),
        }
    }
}

impl Snapshot {
    /// The upstream named `name` configured to listen on `bind`, if any.
    pub fn upstream_at(&self, name: &str, bind: &Bind) -> Option<&Upstream> {
        self.upstreams
            .iter()
            .find(|u| u.name == name && u.bind == *bind)
    }

    /// The upstream named `name`, if any.
    pub fn upstream(&self, name: &str) -> Option<&Upstream> {
        self.upstreams.iter().find(|u| u.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_and_apps_compare_display_and_parse() {
        let tcp: Bind = "127.0.0.1:9191".parse().unwrap();
        let addr: SocketAddr = "127.0.0.1:9191".parse().unwrap();
        assert_eq!(tcp, Bind::Tcp(addr));
        assert_eq!(tcp, addr);
        assert_eq!(tcp.tcp(), Some(addr));
        assert_eq!(tcp.to_string(), "127.0.0.1:9191");
        assert!("/tmp/s".parse::<Bind>().is_err(), "only TCP binds parse");
        let unix = Bind::Unix {
            path: "/tmp/s".into(),
            mode: Some(0o600),
        };
        assert_eq!(unix.tcp(), None);
        assert_ne!(unix, addr);
        assert_eq!(unix.to_string(), "unix:/tmp/s (mode 0600)");
        let no_mode = Bind::Unix {
            path: "/tmp/s".into(),
            mode: None,
        };
        assert_eq!(no_mode.to_string(), "unix:/tmp/s");
        assert_ne!(unix, no_mode, "a mode change is another listener");
        let app = LocalApp::from(addr);
        assert_eq!(app, addr);
        assert_eq!(app.to_string(), "127.0.0.1:9191");
        let sock = LocalApp::Unix("/run/api.sock".into());
        assert_ne!(sock, addr);
        assert_eq!(sock.to_string(), "unix:/run/api.sock");
    }
}
