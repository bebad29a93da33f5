//! The conformance runner: drives any Consul Connect proxy (a child process) through scenarios
//! against a fresh simulated agent per scenario, probes it with mTLS clients and harness-run
//! apps and upstream instances, and grades what it saw into a `reports::Report`.
//!
//! ```no_run
//! # async fn demo() {
//! use conformance::{Manifest, RunConfig, Planned, Silent, catalogue, run_all};
//! let cfg = RunConfig::new(Manifest::reference(), std::env::current_exe().unwrap());
//! let plan = catalogue::select(catalogue::builtin(), &catalogue::Selection::default());
//! let report = run_all(&cfg, plan, std::sync::Arc::new(Silent)).await;
//! reports::write_all(&report, std::path::Path::new("conformance-report")).unwrap();
//! # }
//! ```

pub mod catalogue;
pub mod cli;
pub mod container;
mod error;
mod exec;
mod grpc;
pub mod manifest;
mod netns;
mod probe;
pub mod proxy;
pub mod runner;
pub mod shard;
pub mod template;
mod tls;
mod world;

pub use error::Error;
pub use exec::BOUND_SLACK;
pub use manifest::{Bounds, Manifest};

/// Whether this machine can run transparent-mode scenarios (root, `ip`, `iptables`, network
/// namespaces whose nat table works); `Err` says why not. Such scenarios are reported as not
/// supported by the environment where it cannot, never as passed.
pub fn transparent_support() -> Result<(), String> {
    netns::support().map(drop)
}
pub use proxy::{ProxyCommand, ProxyProcess};
pub use runner::{
    Lines, Planned, Progress, ProgressBar, RunConfig, Silent, Tamper, default_jobs, run_all,
    run_scenario, scenario_seed, verdict_of,
};
