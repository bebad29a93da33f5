//! Floor 5, assembly: putting a sim together from the floors below: the builder that binds the
//! ports and starts both surfaces and the background work, preload files, scenario play, and the
//! container image. Nothing below imports it.

#[cfg(feature = "testcontainers")]
pub mod container;
pub mod play;
pub mod preload;
pub(crate) mod sim;
