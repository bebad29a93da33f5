//! Property-based fuzzing (proptest) of agent-sim's surfaces: the HTTP API through the router and
//! over raw loopback sockets, the `/_sim/` control API, and the delta-xDS stream. Properties: no
//! panic, an answer (or a gRPC status) in bounded time, no 5xx outside the documented set,
//! bounded bodies, no socket left open, other clients unaffected.
//!
//! CI pass: `cargo test -p agent-sim --test fuzz` (a few dozen cases per property). Long run:
//! `PROPTEST_CASES=N cargo test --release -p agent-sim --test fuzz`. Crashes found become named
//! tests in `fuzz/regressions.rs`; proptest keeps failing seeds in `proptest-regressions/`.

mod fuzz {
    pub(crate) mod bodies;
    pub(crate) mod strategies;
    pub(crate) mod support;

    mod control;
    mod http;
    mod regressions;
    mod socket;
    mod xds;
}
