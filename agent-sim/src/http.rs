//! The HTTP API: routing, Consul-style errors, query parsing, response metadata, and one module
//! per endpoint family.

pub mod app;
pub mod error;
pub mod meta;
pub mod query;

pub(crate) mod agent;
mod agent_check;
mod agent_local;
mod catalog;
pub(crate) mod chain;
pub(crate) mod config;
pub(crate) mod connect;
mod control;
mod control_auth;
mod health;
pub(crate) mod intentions;
mod prepared_query;
mod serve;
mod status;
