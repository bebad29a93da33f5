//! The one rule for tests that need something a machine may lack (`build/deps.rs`): present
//! runs, missing is ignored with its reason, missing but required fails with it; and this
//! build's cfg agrees with what the probe sees now.

#[path = "../build/deps.rs"]
mod deps;

use deps::{Gate, gate, required};

#[test]
fn missing_is_ignored_with_its_reason_unless_required() {
    assert_eq!(gate(Ok(()), false), Gate::Run);
    assert_eq!(gate(Ok(()), true), Gate::Run);
    assert_eq!(
        gate(Err("no Envoy".into()), false),
        Gate::Ignore("no Envoy".into())
    );
    assert_eq!(
        gate(Err("no Envoy".into()), true),
        Gate::Fail("no Envoy".into())
    );
}

#[test]
fn only_1_requires() {
    assert!(required(Some("1")));
    for v in [None, Some(""), Some("0"), Some("true"), Some("yes")] {
        assert!(!required(v), "{v:?}");
    }
}

/// The cfg the gated tests read was set by the same rule: where it says Envoy is missing, it
/// was not required when this crate was built.
#[test]
fn the_build_applied_the_rule() {
    let required_now = required(std::env::var("CONFORMANCE_REQUIRE_ENVOY").ok().as_deref());
    if cfg!(missing_envoy) {
        assert!(
            !required_now,
            "built with Envoy missing but CONFORMANCE_REQUIRE_ENVOY=1 now: rebuild (cargo \
             reruns build.rs when the variable changes)"
        );
    }
}
