//! The one rule for tests that need something a machine may lack (Envoy, Docker, root,
//! network namespaces, iptables, a descriptor limit): never a pass without it. Where the
//! dependency is missing the test is *ignored*, with the reason in the test runner's own
//! output; where `CONFORMANCE_REQUIRE_<DEP>=1` (CI sets them) it runs and fails instead.
//!
//! Plain `#[test]`s learn it when their crate is built: `build.rs` probes and sets the cfg
//! `missing_<dep>`, and each such test carries
//! `#[cfg_attr(missing_<dep>, ignore = "needs <dep>: ...")]`; a gated test that runs without
//! its dependency (it disappeared after the build, or the variable required it) fails naming
//! what is missing. The libtest-mimic harnesses apply the same rule per trial at run time.
//! This file is compiled into `build.rs` and into the test of the rule (`tests/deps_rule.rs`).

/// What a gated test does, given what the probe found and whether the environment requires it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Gate {
    /// The dependency is here: run.
    Run,
    /// Missing and not required: ignore, with this reason.
    Ignore(String),
    /// Missing and required: run, and fail with this reason.
    Fail(String),
}

/// The rule: `found` is the probe's answer (`Err` says what is missing and the fix),
/// `required` whether `CONFORMANCE_REQUIRE_<DEP>=1` is set.
pub(crate) fn gate(found: Result<(), String>, required: bool) -> Gate {
    match (found, required) {
        (Ok(()), _) => Gate::Run,
        (Err(why), false) => Gate::Ignore(why),
        (Err(why), true) => Gate::Fail(why),
    }
}

/// Whether `CONFORMANCE_REQUIRE_<dep>` is `1` in `value` (the variable's value, if set).
pub(crate) fn required(value: Option<&str>) -> bool {
    value == Some("1")
}
