//! The HTTP API: routing, Consul-style errors, query parsing, response metadata.

pub mod error;
pub mod query;
