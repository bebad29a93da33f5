//! Snapshot tests of the config entry read shapes.
