//! The sections of a manifest: `[xds]` (how an xDS proxy is served and bootstrapped),
//! `[transparent]` (the proxy's UID and the redirect step) and `[bounds]` (what the proxy
//! claims, in milliseconds), with their defaults.

use std::net::{Ipv4Addr, SocketAddr};

use agent_sim::xds::TlsMode;
use serde::Deserialize;

/// xDS settings (feature `xds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Xds {
    /// How the sim's xDS server delivers the sidecar's leaf and roots (`inline` or `sds`).
    #[serde(default)]
    pub tls_mode: TlsMode,
    /// Envoy's admin listener as written into the bootstrap; port 0 picks a free port per
    /// scenario (so parallel scenarios never clash).
    #[serde(default = "default_admin_bind")]
    pub admin_bind: SocketAddr,
}

fn default_admin_bind() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 0))
}

impl Default for Xds {
    fn default() -> Self {
        Self {
            tls_mode: TlsMode::default(),
            admin_bind: default_admin_bind(),
        }
    }
}

/// Transparent-mode settings: the proxy's UID and the redirect command.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transparent {
    /// The UID (and GID) the proxy runs as; the redirect rules exempt its traffic.
    #[serde(default = "default_uid")]
    pub uid: u32,
    /// The one-shot redirect step (a template; the agent's address and the token also come in
    /// `CONSUL_HTTP_ADDR` / `CONSUL_HTTP_TOKEN`).
    #[serde(default = "default_redirect")]
    pub redirect_command: String,
}

/// Consul on Kubernetes runs Envoy as 5995; so do we.
pub const DEFAULT_PROXY_UID: u32 = 5995;

/// The bundled redirect step.
pub const DEFAULT_REDIRECT_COMMAND: &str =
    "{exe} redirect-traffic -proxy-id {proxy_id} -proxy-uid {proxy_uid}";

fn default_uid() -> u32 {
    DEFAULT_PROXY_UID
}

fn default_redirect() -> String {
    DEFAULT_REDIRECT_COMMAND.into()
}

impl Default for Transparent {
    fn default() -> Self {
        Self {
            uid: DEFAULT_PROXY_UID,
            redirect_command: DEFAULT_REDIRECT_COMMAND.into(),
        }
    }
}

/// Bounds a proxy claims, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bounds {
    /// Open connections are re-authorized at least this often.
    #[serde(default)]
    pub reauthorize_ms: Option<u64>,
    /// Connections are closed at this age.
    #[serde(default)]
    pub max_lifetime_ms: Option<u64>,
    /// A prepared-query upstream is executed again at least this often (Consul's own proxies:
    /// 30000); the `query-poll` timeout of a scenario waits this long (plus slack).
    #[serde(default)]
    pub query_poll_ms: Option<u64>,
}
