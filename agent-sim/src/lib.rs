//! agent-sim: an in-process, wire-faithful simulation of a Consul CE client agent's Connect
//! endpoints, with fault injection no real agent offers.
#![forbid(unsafe_code)]

pub mod config_entry;
pub mod decode;
pub mod duration;
pub mod intention;
pub mod spiffe;
