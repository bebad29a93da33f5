//! Consul's gRPC xDS server for Envoy: delta ADS on the agent's gRPC port (8502 on a dev agent),
//! serving resources built from the same store the HTTP API reads.
//!
//! One job per module:
//! - [`types`]: type URLs, the packed [`Resource`] and the per-proxy [`Resources`] set.
//! - [`resources`]: pure builders, store state -> listeners, clusters, endpoints, routes and
//!   secrets for one proxy, shaped and named as Consul's golden files (RBAC from intentions,
//!   TLS inline or as SDS secrets).
//! - [`delta`]: the delta-ADS protocol state machine (subscriptions, hash versions, nonces,
//!   one response in flight, Consul's send order, NACKs), with no IO.
//! - `server`: the transport (tonic/h2 on its own port, the `x-consul-token` check, faults,
//!   the stream loop that rebuilds when a store change touched the proxy's inputs, sharing one
//!   build per proxy between its streams).
//! - [`bootstrap`]: `consul connect envoy -bootstrap`'s JSON, shared by the CLI and the harness.
//! - [`log`]: what every xDS stream did (requests, responses, ACKs, NACKs), for the harness; it
//!   is state (`crate::state::xds_log`, kept by the control handle), re-exported here.

pub mod bootstrap;
pub mod delta;
pub mod resources;
pub mod types;

mod server;
#[cfg(test)]
pub(crate) mod test_envoy;

pub use crate::state::xds_log as log;
pub use log::{XdsEvent, XdsLog, XdsLogEntry};
pub use types::{Resource, Resources, TlsMode, XdsConfig};

pub(crate) use server::{bind as bind_grpc, run as run_grpc};
