//! Intention tests.
