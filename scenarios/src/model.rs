//! The scenario model: what a scenario sets up, the timeline of steps it plays on the simulated
//! agent and the proxy, and the checks it makes. Pure data (serde); no IO, no sockets.
//!
//! Scenario files are TOML; config entries inside them keep Consul's own JSON shapes (written as
//! TOML inline tables or arrays of tables).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod check;

pub use self::check::{Check, InboundVia, Outcome, RootRef, UpstreamVia};

/// One scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Stable id, e.g. `l4-allow-deny`.
    pub id: String,
    /// What it proves, one or two sentences.
    pub description: String,
    /// The profile it belongs to.
    pub profile: Profile,
    /// Features the proxy must declare for the scenario to run (else `not-supported`).
    #[serde(default)]
    pub features: Vec<String>,
    /// The broken behaviour(s) the harness's self-test proves it catches (catalogue column 5).
    #[serde(default)]
    pub catches: Vec<String>,
    /// What the harness sets up before the proxy starts.
    #[serde(default)]
    pub setup: Setup,
    /// The timeline, played in order after the proxy is ready.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// A generated (property-based) scenario: the runner expands it with a seed.
    #[serde(default)]
    pub generate: Option<Generator>,
}

/// Profiles of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// L4 behaviour every proxy needs.
    Core,
    /// HTTP services.
    L7,
    /// Discovery chain, config changes, agent restart, token file.
    Extended,
    /// Transparent proxying, unix sockets, hostname endpoints.
    Transparent,
}

/// The world before the proxy starts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// `acl.default_policy` (ACLs are always on). Default `deny`.
    #[serde(default)]
    pub acl_default_policy: Option<Policy>,
    /// The agent's `default_intention_policy`, when set.
    #[serde(default)]
    pub default_intention_policy: Option<Policy>,
    /// Leaf certificate TTL (Go duration), default Consul's 72h.
    #[serde(default)]
    pub leaf_ttl: Option<String>,
    /// Max delay before blocked leaf queries see a rotated root (Go duration). Default `0s`.
    #[serde(default)]
    pub ca_change_jitter: Option<String>,
    /// `db`'s protocol, written as a `service-defaults` entry when set (`tcp`, `http`, ...).
    #[serde(default)]
    pub protocol: Option<String>,
    /// Extra keys for the sidecar's `Proxy.Config` (the harness adds its timing knobs).
    #[serde(default)]
    pub proxy_config: BTreeMap<String, Value>,
    /// Upstreams of `db`'s sidecar.
    #[serde(default)]
    pub upstreams: Vec<UpstreamSpec>,
    /// Harness-run upstream instances, registered in the catalog on their own nodes.
    #[serde(default)]
    pub instances: Vec<InstanceSpec>,
    /// Intentions, shorthand for `service-intentions` entries.
    #[serde(default)]
    pub intentions: Vec<IntentionSpec>,
    /// Config entries in Consul's JSON shape (`Kind`, `Name`, ...).
    #[serde(default)]
    pub config_entries: Vec<Value>,
    /// How the proxy gets its ACL token.
    #[serde(default)]
    pub token: TokenDelivery,
    /// Transparent mode (`Proxy.Mode = "transparent"`): the harness runs the scenario in network
    /// namespaces of its own, installs the redirect rules and runs the proxy under its own UID.
    #[serde(default)]
    pub transparent: Option<TransparentSpec>,
    /// The application listens on a unix socket (`Proxy.LocalServiceSocketPath`) instead of a
    /// TCP port.
    #[serde(default)]
    pub app_socket: bool,
    /// The agent's CA at bootstrap (`[setup.ca]`): key kind and chain mode.
    #[serde(default)]
    pub ca: Option<CaSetup>,
}

/// `[setup.ca]`: the CA the cluster bootstraps with.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaSetup {
    /// `PrivateKeyType`: `ec` (default) or `rsa`.
    #[serde(default)]
    pub key_type: Option<String>,
    /// `PrivateKeyBits`: `ec` 256 (default) or 384, `rsa` 2048 (default for rsa) or 4096.
    #[serde(default)]
    pub key_bits: Option<u32>,
    /// Leaves signed by an intermediate listed in the root's `IntermediateCerts` (as with Vault
    /// or in a secondary datacenter; simulator-only mode).
    #[serde(default)]
    pub intermediate: bool,
}

/// `allow` or `deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Allow.
    Allow,
    /// Deny.
    Deny,
}

/// How the token reaches the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenDelivery {
    /// `CONSUL_HTTP_TOKEN` (and `{token}` in the command template).
    #[default]
    Env,
    /// A file passed as `-token-file` (`{token_file}` in the template); the env variable is unset.
    File,
}

/// An upstream of the proxied service's sidecar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSpec {
    /// `DestinationName`.
    pub name: String,
    /// Present in the registration from the start (`false`: added later by an `add-upstream` step).
    #[serde(default = "yes")]
    pub initial: bool,
    /// Exposed on a unix socket (`LocalBindSocketPath`) instead of a TCP port.
    #[serde(default)]
    pub socket: bool,
    /// `LocalBindSocketMode` (octal text such as `"0600"`); only with `socket`.
    #[serde(default)]
    pub socket_mode: Option<String>,
}

/// The transparent-mode part of the sidecar registration (`Proxy.TransparentProxy`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransparentSpec {
    /// `OutboundListenerPort` (Consul's default: 15001).
    #[serde(default)]
    pub outbound_port: Option<u16>,
    /// `DialedDirectly`.
    #[serde(default)]
    pub dialed_directly: bool,
}

fn yes() -> bool {
    true
}

/// A harness-run mTLS instance of some service, registered in the catalog as that service's
/// sidecar (`<service>-sidecar-proxy`, `Kind: connect-proxy`). It answers every connection with
/// its own id so probes can tell which instance they reached, and records the identity the
/// proxy presented.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstanceSpec {
    /// Unique instance id, e.g. `cache-1`.
    pub id: String,
    /// The service it is registered for, e.g. `cache`.
    pub service: String,
    /// The service whose leaf it presents (default: `service`); another name makes an impostor.
    #[serde(default)]
    pub identity: Option<String>,
    /// Initial health: `passing` (default), `warning` or `critical`.
    #[serde(default)]
    pub status: Option<String>,
    /// Register its address as this hostname instead of `127.0.0.1`.
    #[serde(default)]
    pub hostname: Option<String>,
    /// What it serves: `tcp` (default: one token line, answered with its id), or `http2` /
    /// `grpc` (HTTP/2 over mTLS, ALPN `h2`, answering gRPC calls with trailers; the service's
    /// protocol must then be set by a `service-defaults` entry).
    #[serde(default)]
    pub protocol: Option<String>,
}

/// An intention in shorthand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntentionSpec {
    /// Source service name or `*`.
    pub source: String,
    /// Destination service name or `*` (default `db`).
    #[serde(default = "db")]
    pub destination: String,
    /// `allow` or `deny` for an L4 intention.
    #[serde(default)]
    pub action: Option<Policy>,
    /// L7 `Permissions` in Consul's JSON shape.
    #[serde(default)]
    pub permissions: Option<Vec<Value>>,
}

fn db() -> String {
    "db".into()
}

/// Who a probe is: a leaf issued by the simulated CA for a service, a named identity issued
/// earlier (`issue` step), or a forged/absent certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Identity {
    /// A fresh leaf for `service` from the active root.
    Service {
        /// The service name.
        service: String,
    },
    /// An identity saved by an earlier `issue` step.
    Named {
        /// The name it was saved under.
        name: String,
    },
    /// A leaf from a CA the proxy must not trust.
    UntrustedCa {
        /// The service it claims.
        service: String,
    },
    /// A trusted-root leaf naming another trust domain.
    ForeignTrustDomain {
        /// The service it claims.
        service: String,
    },
    /// A trusted-root leaf whose validity has ended.
    Expired {
        /// The service it claims.
        service: String,
    },
    /// A trusted-root certificate without any URI SAN.
    NoSpiffe,
    /// A trusted-root certificate with an agent SPIFFE ID.
    AgentId,
    /// Subject CN says `common_name`, the URI SAN says `service`.
    CommonNameMismatch {
        /// The CN.
        common_name: String,
        /// The service in the URI SAN.
        service: String,
    },
    /// A self-signed certificate naming `service`.
    SelfSigned {
        /// The service it claims.
        service: String,
    },
    /// No client certificate at all.
    NoCert,
}

/// One step of the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "do")]
pub enum Step {
    /// Put (create or replace) one intention.
    Intention(IntentionSpec),
    /// Delete one intention.
    DeleteIntention {
        /// Source.
        source: String,
        /// Destination (default `db`).
        #[serde(default = "db")]
        destination: String,
    },
    /// Write a config entry (Consul's JSON shape).
    ConfigEntry {
        /// The entry.
        entry: Value,
    },
    /// Rotate the CA.
    RotateCa {
        /// With a cross-signed intermediate (default true).
        #[serde(default = "yes")]
        cross_sign: bool,
        /// The new root's (and from then on the leaves') `PrivateKeyType`; default: unchanged.
        #[serde(default)]
        key_type: Option<String>,
        /// The new root's `PrivateKeyBits` (default 256 for `ec`, 2048 for `rsa`).
        #[serde(default)]
        key_bits: Option<u32>,
    },
    /// Rotate the active root's intermediate alone (chain mode; the root stays).
    RotateIntermediate,
    /// Inject a fault until `clear-faults` (or for `for_` when given).
    Fault {
        /// Which.
        fault: FaultSpec,
        /// Undo automatically after this Go duration.
        #[serde(default, rename = "for")]
        for_: Option<String>,
    },
    /// Undo every fault.
    ClearFaults,
    /// Every index of the sim goes backwards.
    IndexReset,
    /// The agent restarts (down for `down_for`, then new indexes, same data).
    RestartAgent {
        /// Go duration, default `500ms`.
        #[serde(default)]
        down_for: Option<String>,
        /// The `default_intention_policy` it comes back with; unchanged when absent.
        #[serde(default)]
        default_intention_policy: Option<Policy>,
    },
    /// Set an instance's health.
    SetHealth {
        /// Instance id.
        instance: String,
        /// `passing`, `warning` or `critical`.
        status: String,
    },
    /// Start and register another upstream instance.
    AddInstance(InstanceSpec),
    /// Re-register the sidecar with one more upstream (a non-initial one from the setup).
    AddUpstream {
        /// The upstream's name.
        name: String,
    },
    /// Issue a leaf now and keep it under `name` (e.g. to use an old-root leaf after rotation).
    Issue {
        /// The name to use in later `identity = { kind = "named", name = ... }`.
        name: String,
        /// The service it is for.
        service: String,
    },
    /// Open a connection to the proxy's inbound listener and keep it open.
    Open {
        /// Connection name for later steps.
        conn: String,
        /// Who connects.
        identity: Identity,
        /// `tcp` (bytes echoed), `http` (a keep-alive HTTP/1.1 connection), or `http2` / `grpc`
        /// (one HTTP/2 connection, ALPN `h2`, that carries many streams).
        #[serde(default)]
        protocol: ConnProtocol,
    },
    /// Name this moment: `served-leaf` checks can compare against the leaf served now, and
    /// `agent-usage` checks look at the requests since the last mark.
    Mark {
        /// The mark's name.
        name: String,
    },
    /// Do nothing for a while (only for windows the proxy is observed over, e.g. idling).
    Idle {
        /// Go duration or a named timeout.
        duration: String,
        /// Why (shown on the timeline).
        reason: String,
    },
    /// A check.
    Expect(Expectation),
}

/// Kinds of connection a probe opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConnProtocol {
    /// Raw bytes through to the echo app.
    #[default]
    Tcp,
    /// HTTP/1.1 keep-alive.
    Http,
    /// One HTTP/2 connection (TLS ALPN `h2`); `http` and `grpc` checks run streams on it.
    Http2,
    /// The same HTTP/2 connection, named for gRPC use.
    Grpc,
}

impl ConnProtocol {
    /// Whether the connection is HTTP/2 (streams multiplexed on one connection).
    pub fn is_http2(self) -> bool {
        matches!(self, Self::Http2 | Self::Grpc)
    }
}

/// A fault on the simulated agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultSpec {
    /// Connections refused.
    AgentDown,
    /// Connections accepted, never answered.
    AgentHung,
    /// Agent up, servers gone: cached data only.
    ServersUnreachable,
    /// Every request answers 500.
    Errors,
}

/// A check, with how long it may take to become true and how long it must then stay true.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// Short name shown in reports ("api refused").
    pub name: String,
    /// What is checked.
    pub check: Check,
    /// It may take up to this long (Go duration or a named timeout such as `propagation`); absent:
    /// it must hold at once.
    #[serde(default)]
    pub within: Option<String>,
    /// Once true, it must stay true this long (observed repeatedly).
    #[serde(default)]
    pub stable_for: Option<String>,
    /// `must` (default) or `should` (a failure is `non-strict`).
    #[serde(default)]
    pub requirement: Requirement,
}

/// MUST or SHOULD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Requirement {
    /// A failure fails the scenario.
    #[default]
    Must,
    /// A failure makes the scenario `non-strict`.
    Should,
    /// Recorded for information; never fails.
    Info,
}

/// A property-based scenario's generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Generator {
    /// Random intention sets over `sources` toward `db`, and inbound probes from every source,
    /// each expected to match an independent precedence model.
    RandomIntentions {
        /// Number of random intention sets (each played as set + probes).
        cases: u32,
        /// Source services the probes use.
        sources: Vec<String>,
    },
}
