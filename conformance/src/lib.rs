//! The conformance harness: drives any Consul Connect proxy (a child process or a container)
//! through scenarios against a fresh simulated agent per scenario, probes it with mTLS clients
//! and harness-run apps and upstream instances, and grades what it saw into a
//! `reports::Report`.
//!
//! Modules, from the command line down. `tests/layers.rs` holds two rules: nothing but
//! `runner`, `cli` and this file refers to `runner`, and `plan` refers to no part of the
//! execution (`runner`, `world`, `exec`, `proxy`, `probe`, `netns`, `container`) nor to `cli`.
//!
//! - `cli`: the command line (`run`, `list`, `gate`, `merge`, `durations`, the bundled
//!   reference proxy); builds the plan from flags, hands it to the runner, writes the reports.
//! - `runner`: executes a plan: scenarios `jobs` at a time and `--repeat` times, each in its
//!   own world with its own proxy, cancellation, progress, and the graded report.
//! - `world`: one scenario's world (agent-sim, token, ports, apps, instances, xDS, pod);
//!   `exec`: plays a scenario's steps and checks against it; `probe`, `grpc`, `tls`: the probes
//!   and apps they use; `proxy`, `container`, `netns`: the proxy process, its container, and
//!   the network namespaces of transparent scenarios.
//! - `plan`: what a run plays (pure): the catalogue and selection (`plan::catalogue`), the
//!   planned entries (`Planned`), durations, sharding, start order, the self-test's tampering.
//! - `manifest` (what a proxy declares), `template` (command templates), `error` (`Error`).
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

#![forbid(unsafe_code)]

pub mod cli;
pub mod container;
mod error;
mod exec;
mod grpc;
pub mod manifest;
mod netns;
pub mod plan;
mod probe;
pub mod proxy;
pub mod runner;
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
pub use plan::{Planned, Tamper, catalogue, shard};
pub use proxy::{ProxyCommand, ProxyProcess};
pub use runner::{
    Lines, Progress, ProgressBar, RunConfig, Silent, default_jobs, run_all, run_scenario,
    scenario_seed, verdict_of,
};
