//! Floor 2, Consul's model: pure logic over Consul's data, no IO and no shared state. Imports
//! only the Go floor ([`crate::go`]).

pub mod acl;
pub mod agent_tls;
pub mod ca;
pub mod chain;
pub mod config_entry;
pub mod intention;
pub mod prepared_query;
pub mod service;
pub mod spiffe;
