//! The scenario catalogue as data: the model (what to set up, do and expect), the TOML files of
//! every catalogue scenario, loading with errors that name file, line and field, and
//! validation. No IO beyond what the caller hands in, no sockets, no processes.

pub mod model;
pub mod timeouts;

pub use model::*;
pub use timeouts::Timeouts;
