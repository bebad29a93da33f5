//! The one rule for tests that need something a machine may lack (`build/deps.rs`): present
//! runs, missing is ignored with its reason, missing but required fails with it; and this
//! build's cfgs agree with what the environment requires now.

#[path = "../build/deps.rs"]
mod deps;

use deps::{Gate, gate, required};

#[test]
fn missing_is_ignored_with_its_reason_unless_required() {
    assert_eq!(gate(Ok(()), false), Gate::Run);
    assert_eq!(gate(Ok(()), true), Gate::Run);
    assert_eq!(
        gate(Err("needs root".into()), false),
        Gate::Ignore("needs root".into())
    );
    assert_eq!(
        gate(Err("needs root".into()), true),
        Gate::Fail("needs root".into())
    );
    assert!(required(Some("1")));
    assert!(!required(Some("true")) && !required(None));
}

/// Where a cfg says a dependency is missing, it was not required when the crate was built.
#[test]
fn the_build_applied_the_rule() {
    let now = |k: &str| required(std::env::var(k).ok().as_deref());
    if cfg!(missing_netns) {
        assert!(!now("CONFORMANCE_REQUIRE_NETNS"), "stale build: rebuild");
    }
    if cfg!(missing_nofile) {
        assert!(!now("CONFORMANCE_REQUIRE_NOFILE"), "stale build: rebuild");
    }
}
