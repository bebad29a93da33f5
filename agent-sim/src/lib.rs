//! agent-sim: an in-process, wire-faithful simulation of a Consul CE client agent's Connect
//! endpoints, with fault injection no real agent offers.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agent_sim::SimError> {
//! let sim = agent_sim::AgentSim::builder().start().await?;
//! let _down = sim.control().agent_down(); // refused until the guard is dropped
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

pub mod acl;
pub mod blocking;
pub mod ca;
pub mod chain;
pub mod config;
pub mod config_entry;
#[cfg(feature = "testcontainers")]
pub mod container;
pub mod decode;
pub mod duration;
pub mod faults;
pub mod filter;
pub mod http;
pub mod intention;
pub mod play;
pub mod preload;
pub mod request_log;
pub mod service;
pub mod spiffe;
pub mod xds;

mod background;
mod checks;
mod control;
mod error;
mod gotext;
mod seq_log;
mod server;
mod sim;
mod store;

pub use control::Control;
pub use error::SimError;
pub use sim::{AgentSim, Builder, Listening};
pub use store::{CheckUpdate, Store};
