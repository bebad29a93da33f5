//! Floor 3, state: the running agent's state and everything that reads or changes it below the
//! surfaces: the store (with the queries both surfaces share), configuration, faults, the control
//! handle, blocking waits, request and xDS logs, health checks, background work, the accept loop
//! that plays connection faults, and the errors state changes fail with. Imports only the Go and
//! model floors.

pub mod agent_tls;
pub(crate) mod background;
pub mod blocking;
pub(crate) mod body;
pub(crate) mod checks;
pub mod config;
pub(crate) mod control;
pub(crate) mod error;
pub mod faults;
pub(crate) mod listener;
pub(crate) mod prepared_queries;
pub(crate) mod queries;
pub mod request_log;
pub(crate) mod seq_log;
pub(crate) mod store;
pub mod xds_log;

pub use error::{SimError, StateError};
