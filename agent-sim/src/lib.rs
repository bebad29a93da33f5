//! agent-sim: an in-process, wire-faithful simulation of a Consul CE client agent's Connect
//! endpoints, with fault injection no real agent offers.
#![forbid(unsafe_code)]

pub mod decode;
pub mod duration;
pub mod service;
