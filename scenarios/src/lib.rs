//! The scenario catalogue as data: the model (what to set up, do and expect), the TOML files of
//! every catalogue scenario, loading with errors that name file, line and field, validation, and
//! the seeded expansion of generated (property-based) scenarios. No IO beyond what the caller
//! hands in, no sockets, no processes.
//!
//! Modules: `model` (the scenario's types: setup, steps, checks), `names` (the closed
//! vocabularies files may name), `duration` and `timeouts` (Go durations, named timeouts),
//! `parse` (TOML to a validated scenario, errors with file, line and field: `error`),
//! `validate` (every rule a scenario must meet), `catalogue` (the embedded scenario files) and
//! `generate` (the seeded expansion of generated scenarios).

#![forbid(unsafe_code)]

pub mod model;
pub mod timeouts;

mod catalogue;
mod duration;
mod error;
mod generate;
mod names;
mod parse;
mod validate;

pub use catalogue::{catalogue, catalogue_files};
pub use duration::{DurationError, is_named_timeout, parse_go_duration};
pub use error::ScenarioError;
pub use generate::expand;
pub use model::*;
pub use names::{
    BLOCKING_FAMILIES, BROKEN_BEHAVIOURS, ENVIRONMENT_TAMPERS, FEATURES, HEALTH_STATUSES,
    L7_PROTOCOLS, PROTOCOLS,
};
pub use parse::{parse, parse_bytes};
pub use timeouts::Timeouts;
pub use validate::{MARKER_SOURCE, parse_socket_mode, validate, validate_all};
