//! The canonical report model: the run-level types (`Report`, `Harness`, `ProxyInfo`,
//! `Environment`). Its serde form IS the versioned JSON report (see `SCHEMA.md`).

mod attempt;
mod scenario;
mod shard;
mod verdict;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use self::attempt::{Attempt, AttemptCheck};
pub use self::scenario::{
    Artifact, CheckResult, ErrorInfo, EventKind, ScenarioResult, TimelineEvent,
};
pub use self::shard::ShardInfo;
pub use self::verdict::{Counts, Outcome, Profile, ProfileResult, Requirement, Verdict};

/// Version of the JSON schema written by this crate: `MAJOR` or `MAJOR.MINOR`.
///
/// Bump the major on any breaking change (removed/renamed field, changed meaning); readers reject
/// other majors. A minor bump only adds fields, which readers of the same major ignore.
pub const SCHEMA_VERSION: &str = "1.3";

/// The harness name written into `Report::harness`.
pub const HARNESS_NAME: &str = "mesh-conformance";

/// One conformance run of one proxy: the canonical report every renderer reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: String,
    pub harness: Harness,
    pub proxy: ProxyInfo,
    pub environment: Environment,
    /// RFC 3339 start time of the run, as given by the runner (not parsed here).
    pub started_at: String,
    pub duration_ms: u64,
    /// The run's base seed (randomised scenarios derive theirs from it).
    pub seed: u64,
    pub scenarios: Vec<ScenarioResult>,
    /// One entry per [`Profile::ALL`], in that order; computed by [`Report::grade`].
    pub profiles: Vec<ProfileResult>,
    /// For a run with `--shard K/N`: its slice of the plan; `None` otherwise (added in 1.2).
    #[serde(default)]
    pub shard: Option<ShardInfo>,
    /// How many times each scenario was run (`--repeat N`; added in schema 1.2, 1 when absent).
    #[serde(default = "one")]
    pub repeat: u32,
    /// Whether a `flaky` scenario was allowed not to fail its profile (`--allow-flaky`; added
    /// in schema 1.2, false when absent). `gate` decides with its own flag, not this one.
    #[serde(default)]
    pub allow_flaky: bool,
}

fn one() -> u32 {
    1
}

/// Which harness wrote the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Harness {
    /// Always [`HARNESS_NAME`] for this harness.
    pub name: String,
    pub version: String,
}

/// The proxy under test and what it declared about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyInfo {
    pub name: String,
    pub version: Option<String>,
    /// The command template the proxy was started from (e.g. `my-proxy -proxy-id {proxy_id}`).
    pub command: String,
    /// Declared features (`l4`, `l7-http`, `discovery-chain`, ...).
    pub features: Vec<String>,
    /// Declared bounds in milliseconds, by name (e.g. `reauthorize-interval`).
    pub bounds: BTreeMap<String, u64>,
    /// For a proxy configured over xDS (Envoy): how the agent delivered its TLS material,
    /// `inline` or `sds`; `None` for proxies that read the HTTP API (added in schema 1.1).
    #[serde(default)]
    pub xds_tls_mode: Option<String>,
}

/// Where the run happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    pub os: String,
    pub arch: String,
    pub cpus: u32,
    pub hostname: Option<String>,
    /// Whether the run happened under CI.
    pub ci: bool,
    /// Free-form notes (e.g. "not root: transparent scenarios not supported").
    pub notes: Vec<String>,
}

// === impl Report ===

impl Report {
    /// An empty, ungraded report with the current [`SCHEMA_VERSION`].
    pub fn new(
        harness: Harness,
        proxy: ProxyInfo,
        environment: Environment,
        started_at: impl Into<String>,
        seed: u64,
    ) -> Self {
        Self {
            schema_version: SCHEMA_VERSION.to_owned(),
            harness,
            proxy,
            environment,
            started_at: started_at.into(),
            duration_ms: 0,
            seed,
            scenarios: Vec::new(),
            profiles: Vec::new(),
            shard: None,
            repeat: 1,
            allow_flaky: false,
        }
    }

    /// The stored result for `profile` (present once the report has been graded).
    pub fn profile(&self, profile: Profile) -> Option<&ProfileResult> {
        self.profiles.iter().find(|p| p.profile == profile)
    }
}

// === impl Harness ===

impl Harness {
    /// `mesh-conformance` at `version`.
    pub fn new(version: impl Into<String>) -> Self {
        Self {
            name: HARNESS_NAME.to_owned(),
            version: version.into(),
        }
    }
}
