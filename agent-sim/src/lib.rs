//! agent-sim: an in-process, wire-faithful simulation of a Consul CE client agent's Connect
//! endpoints, with fault injection no real agent offers.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agent_sim::SimError> {
//! let sim = agent_sim::AgentSim::builder().start().await?;
//! let _down = sim.control().agent_down(); // refused until the guard is dropped
//! # Ok(()) }
//! ```
//!
//! The crate is built in floors, each a folder, each importing only the floors below it
//! (`tests/floors.rs` fails on any import that points up, or across the two surfaces):
//!
//! 1. [`go`] (the `go-compat` crate plus `go/`): Go's formats as Consul's Go code reads and
//!    writes them: durations, `%q` and multierror texts, `encoding/json` bytes, body decoding,
//!    mapstructure, go-bexpr filters. No Consul model, no IO.
//! 2. [`model`]: Consul's model as pure logic: ACLs, the CA, intentions, config entries, the
//!    discovery chain, services, SPIFFE IDs. No IO, no shared state.
//! 3. [`state`]: the running agent's state and what reads it: the store and the queries both
//!    surfaces share, configuration, faults, the control handle, blocking waits, logs, health
//!    checks, the fault-playing accept loop, and the state error type ([`state::StateError`]).
//! 4. Surfaces, peers that never import each other: [`http`] (the agent HTTP API and the
//!    `/_sim/` control API) and [`xds`] (delta ADS for Envoy).
//! 5. [`assembly`]: the builder that starts a sim, preload files, scenario play, the container
//!    image (and the `agent-sim` binary, which uses only the public API).
//!
//! The modules users know keep their paths through the re-exports below (`agent_sim::ca`,
//! `agent_sim::AgentSim`, ...); code inside the crate names their homes.
#![forbid(unsafe_code)]

pub mod assembly;
pub mod go;
pub mod http;
pub mod model;
pub mod state;
pub mod xds;

#[cfg(feature = "testcontainers")]
pub use assembly::container;
pub use assembly::sim::{AgentSim, Builder, Listening};
pub use assembly::{play, preload};
pub use go::{decode, duration, filter};
pub use model::{acl, ca, chain, config_entry, intention, service, spiffe};
pub use state::control::Control;
pub use state::error::{SimError, StateError};
pub use state::store::{CheckUpdate, Store};
pub use state::{blocking, config, faults, request_log};
