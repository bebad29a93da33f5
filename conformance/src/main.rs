//! The `conformance` binary.

fn main() {}
