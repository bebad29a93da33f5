//! `SimConfig`: everything the simulated agent can be configured with, injected by the builder
//! or the CLI (never read from the environment here), including the xDS surface's options
//! ([`XdsConfig`], re-exported by `xds::types`).

use std::net::SocketAddr;
use std::time::Duration;

use crate::model::acl::AclConfig;
use crate::state::blocking::BlockingConfig;

/// `default_intention_policy` (agent config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IntentionDefault {
    /// Allow when no intention matches.
    Allow,
    /// Deny when no intention matches.
    Deny,
}

/// Configuration of one simulated agent.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Where to listen; port 0 picks a free one.
    pub bind: SocketAddr,
    /// Where to serve the control API on its own port (reachable while the agent is "down").
    /// `None`: only under `/_sim/` on the agent's port.
    pub control_bind: Option<SocketAddr>,
    /// Where to serve Consul's gRPC xDS (delta ADS) for Envoy; `None`: not served.
    pub grpc_bind: Option<SocketAddr>,
    /// xDS options (inline or SDS certificates).
    pub xds: XdsConfig,
    /// Datacenter name.
    pub datacenter: String,
    /// The agent's node name.
    pub node_name: String,
    /// The agent's node address.
    pub node_address: String,
    /// The cluster ID (trust domain `<id>.consul`); a fresh UUID when `None`.
    pub cluster_id: Option<String>,
    /// ACLs.
    pub acl: AclConfig,
    /// `default_intention_policy`, when set.
    pub default_intention_policy: Option<IntentionDefault>,
    /// Leaf certificate TTL (Consul: 72h; the sim accepts seconds).
    pub leaf_ttl: Duration,
    /// The CA's key kind at bootstrap (roots and leaves); default EC P-256.
    pub ca_key_kind: crate::model::ca::KeyKind,
    /// Simulator-only chain mode: leaves signed by an intermediate listed in `IntermediateCerts`.
    pub ca_intermediate: bool,
    /// Roots and intermediates carry the `spiffe://<trust domain>` URI SAN (default); `false`:
    /// a CA that bends SPIFFE, as some external providers issue them (leaves keep their ID).
    pub ca_spiffe_san: bool,
    /// The agent's own TLS on its HTTP and gRPC ports (`tls.https`, `tls.grpc`); `None`: plain.
    pub agent_tls: Option<crate::state::agent_tls::AgentTlsConfig>,
    /// Upper bound of the random delay before blocked leaf queries see a new leaf after a CA
    /// rotation (Consul: 30 s).
    pub ca_change_jitter: Duration,
    /// Blocking-query timing.
    pub blocking: BlockingConfig,
    /// Consul version reported by `/v1/agent/self` and node meta.
    pub version: String,
    /// Seed for the sim's random choices (jitter, renewal points); random when `None`.
    pub seed: Option<u64>,
    /// How many request-log entries are kept.
    pub request_log_capacity: usize,
    /// Run TCP, TTL and alias health checks in the background.
    pub run_checks: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8500)),
            control_bind: None,
            grpc_bind: None,
            xds: XdsConfig::default(),
            datacenter: "dc1".into(),
            node_name: "agent-sim".into(),
            node_address: "127.0.0.1".into(),
            cluster_id: None,
            acl: AclConfig::default(),
            default_intention_policy: None,
            leaf_ttl: Duration::from_secs(72 * 3600),
            ca_key_kind: crate::model::ca::KeyKind::Ec256,
            ca_intermediate: false,
            ca_spiffe_san: true,
            agent_tls: None,
            ca_change_jitter: Duration::from_secs(30),
            blocking: BlockingConfig::default(),
            version: "1.22.0".into(),
            seed: None,
            request_log_capacity: crate::state::request_log::DEFAULT_CAPACITY,
            run_checks: true,
        }
    }
}

/// How the sidecar's own leaf and the roots reach Envoy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TlsMode {
    /// Inline in every listener's and cluster's TLS context (Consul up to the SDS change): any
    /// leaf or roots change rewrites the public listener, and Envoy drains its connections.
    #[default]
    Inline,
    /// SDS secrets `connect-leaf` and `connect-root` referenced by name (newest Consul): a
    /// rotation updates the secrets only.
    Sds,
}

impl TlsMode {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inline => "inline",
            Self::Sds => "sds",
        }
    }
}

impl std::str::FromStr for TlsMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "inline" => Ok(Self::Inline),
            "sds" => Ok(Self::Sds),
            other => Err(format!(
                "unknown TLS mode {other:?} (expected inline or sds)"
            )),
        }
    }
}

/// Options of the xDS server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct XdsConfig {
    /// Inline certificates or SDS secrets.
    pub tls_mode: TlsMode,
    /// Not Consul's rendering, for benchmarks only (off by default; Consul has no such setting):
    /// every `DownstreamTlsContext` gets `disable_stateless_session_resumption` and
    /// `disable_stateful_session_resumption`, every `UpstreamTlsContext` `max_session_keys: 0`, so
    /// every handshake on the mesh hop is a full one.
    pub no_tls_resumption: bool,
    /// Not Consul's rendering, for benchmarks only (empty by default; Consul has no such
    /// setting): when set, `tls_params.ecdh_curves` of every TLS context (e.g. `["X25519"]`, so
    /// Envoy does not offer its default `X25519MLKEM768` hybrid first).
    pub tls_ecdh_curves: Vec<String>,
}
