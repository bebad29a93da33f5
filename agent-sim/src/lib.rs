//! agent-sim: an in-process, wire-faithful simulation of a Consul CE client agent's Connect
//! endpoints, with fault injection no real agent offers.
#![forbid(unsafe_code)]

pub mod acl;
pub mod ca;
pub mod decode;
pub mod duration;
pub mod http;
