//! The plan of a run: which scenarios it plays and how (pure data and pure functions; nothing
//! here starts a world, a proxy or a probe).
//!
//! - [`catalogue`]: where scenarios come from (the built-in catalogue, `--scenario-dir` files),
//!   generator expansion, and selection by glob, skip glob and profile into [`Planned`] entries;
//! - [`durations`]: the table of recorded scenario durations (`durations.toml`, `--durations`);
//! - [`shard`]: `--shard K/N`, a stable partition of the plan balanced by those durations;
//! - [`order`]: the order scenarios start in (longest first);
//! - [`links`]: each scenario's catalogue file and the Consul documentation it tests;
//! - [`Tamper`]: the self-test's deliberately broken environments; [`catch`]: its judgement
//!   of a trial (the named checks failed against a proxy that became ready).
//!
//! The runner (`crate::runner`) is handed a plan and executes it; this module depends on no
//! part of the execution (`runner`, `world`, `exec`, `proxy`), which `tests/layers.rs` holds.

pub mod catalogue;
pub mod catch;
pub mod durations;
pub mod links;
pub mod order;
pub mod shard;
mod tamper;

use scenarios::Scenario;

pub use self::durations::Durations;
pub use self::shard::ShardSpec;
pub use self::tamper::Tamper;

/// One entry of a run's plan.
#[derive(Debug, Clone, PartialEq)]
pub enum Planned {
    /// Run it.
    Run(Scenario),
    /// Report it as skipped (the user asked).
    Skip(Scenario),
}

impl Planned {
    /// The scenario.
    pub fn scenario(&self) -> &Scenario {
        match self {
            Self::Run(s) | Self::Skip(s) => s,
        }
    }
}
