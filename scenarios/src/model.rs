//! The scenario model: what a scenario sets up, the timeline of steps it plays on the simulated
//! agent and the proxy, and the checks it makes. Pure data (serde); no IO, no sockets.
//!
//! Scenario files are TOML; config entries inside them keep Consul's own JSON shapes (written as
//! TOML inline tables or arrays of tables).
//!
//! This file owns the scenario itself, its profile and its generator; what it sets up is
//! `model/setup.rs`, the steps of its timeline `model/step.rs`, what its checks observe
//! `model/check.rs`, what its self-test claims `model/catch.rs`.

use serde::{Deserialize, Serialize};

mod catch;
mod check;
mod jwt;
mod route;
mod setup;
mod step;

pub use self::catch::{Catch, catch_quoted};
pub use self::check::{Check, InboundVia, Outcome, OutsideTarget, RootRef, UpstreamVia};
pub use self::jwt::{JwtProviderSpec, JwtToken, TokenKind};
pub use self::route::{Answer, AppProtocol, BurstCheck, RequestCheck, SpreadCheck};
pub use self::setup::{
    AgentCertCa, AgentTlsSetup, CaSetup, Exclusion, Identity, InstanceSpec, IntentionSpec, Policy,
    Setup, TokenDelivery, TransparentSpec, UpstreamSpec,
};
pub use self::step::{ConnProtocol, Expectation, FaultSpec, Requirement, Step};

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
    /// The broken behaviour(s) the harness's self-test proves it catches (catalogue column 5),
    /// each with the checks that must fail against it.
    #[serde(default)]
    pub catches: Vec<Catch>,
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
    /// Outbound L7 traffic management per the discovery chain: routes, splits, subsets,
    /// retries, timeouts, header manipulation, load balancing, passive health, limits.
    L7Traffic,
    /// Mesh security: request normalization against L7 intentions, the `mesh` entry's TLS
    /// bounds, XFCC and permissive mTLS, JWT requirements in intentions.
    Security,
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

/// serde default: `true`.
fn yes() -> bool {
    true
}

/// serde default: the service under test.
fn db() -> String {
    "db".into()
}
