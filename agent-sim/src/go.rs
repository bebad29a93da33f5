//! Floor 1, Go compatibility: Go's formats as Consul's Go code reads and writes them, with no
//! Consul model and no IO. Most of it is the `go-compat` crate (re-exported here, so the
//! compiler holds that part of the floor); mapstructure's decoder stays in this crate because
//! its schemas are built by the config-entry model.

pub use go_compat::{decode, duration, filter};
pub(crate) use go_compat::{gojson, gotext};

pub(crate) mod mapstructure;
