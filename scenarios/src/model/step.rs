//! The timeline of a scenario: the steps it plays on the simulated agent and the proxy, the
//! connections probes open, agent faults, and the expectations (a check with its timing and
//! requirement).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    AgentCertCa, Answer, AppProtocol, Check, Identity, InstanceSpec, IntentionSpec, Policy, db, yes,
};

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
    /// The agent presents the server certificate of `ca` from now on (needs `[setup.agent_tls]`);
    /// open connections to the agent are cut.
    AgentServerCert {
        /// Whose certificate.
        ca: AgentCertCa,
    },
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
    /// Change how a harness-run HTTP instance answers from now on (its registration and health
    /// stay as they are).
    Instance {
        /// Instance id.
        instance: String,
        /// How it answers now (`blackhole` is for the setup only).
        answer: Answer,
    },
    /// Change how the local application behind the proxy (db's app) behaves from now on:
    /// `delay` (HTTP app: wait before answering), `blackhole` (stop accepting, with the listen
    /// backlog kept full, so the proxy's connects stay pending); `answer = {}`: normal again.
    App {
        /// How it answers now (only `delay` and `blackhole`).
        answer: Answer,
    },
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
    /// Open a cleartext connection from the app to an upstream's local listener and keep it
    /// open, for `request` checks with `conn` (a keep-alive HTTP/1.1 or an HTTP/2 connection).
    OpenUpstream {
        /// Connection name for later steps.
        conn: String,
        /// The upstream whose listener it connects to.
        upstream: String,
        /// `http1` (default) or `h2c` (`grpc` is h2c too).
        #[serde(default)]
        protocol: AppProtocol,
    },
    /// Rotate a remote `setup.jwt_providers` provider's key: its JWKS serves only a new key,
    /// `valid` tokens are signed with it, `previous-key` tokens with the old one.
    JwtRotate {
        /// The provider.
        provider: String,
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
