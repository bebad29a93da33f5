//! The conformance runner: drives any Consul Connect proxy (a child process) through scenarios
//! against a fresh simulated agent per scenario, probes it with mTLS clients and harness-run
//! apps and upstream instances, and grades what it saw into a `reports::Report`.

mod error;
pub mod manifest;
pub mod proxy;
pub mod template;

pub use error::Error;
pub use manifest::{Bounds, Manifest};
pub use proxy::{ProxyCommand, ProxyProcess};
