//! The chain cache answers only for the same certificates, usage and validity window, and
//! never remembers a failure.

use std::cell::Cell;
use std::time::Duration;

use super::*;
use crate::testutil::{TD, TestCa, svc_uri};

fn now_plus(secs: i64) -> UnixTime {
    let now = UnixTime::now().as_secs();
    UnixTime::since_unix_epoch(Duration::from_secs(now.saturating_add_signed(secs)))
}

/// Runs `cache.verify` with a check that counts its calls and answers `ok`.
fn run(
    cache: &ChainCache,
    usage: Usage,
    chain: &[CertificateDer<'static>],
    at: UnixTime,
    ok: bool,
    calls: &Cell<u32>,
) -> bool {
    let (ee, rest) = chain.split_first().unwrap();
    cache
        .verify(usage, ee, rest, &[], at, || {
            calls.set(calls.get() + 1);
            if ok {
                Ok(())
            } else {
                Err(Error::General("refused".into()))
            }
        })
        .is_ok()
}

#[test]
fn a_success_is_remembered_for_the_same_chain_and_usage_until_the_leaf_expires() {
    let ca = TestCa::new("ca");
    let leaf = ca.leaf_with(Some(&svc_uri(TD, "web")), -1, 2);
    let other = ca.leaf_with(Some(&svc_uri(TD, "web")), -1, 2);
    let cache = ChainCache::default();
    let calls = Cell::new(0);
    let now = UnixTime::now();
    assert!(run(&cache, Usage::Client, &leaf.chain, now, true, &calls));
    assert!(run(
        &cache,
        Usage::Client,
        &leaf.chain,
        now_plus(60),
        true,
        &calls
    ));
    assert_eq!(
        calls.get(),
        1,
        "the second verification came from the cache"
    );
    assert_eq!(cache.len(), 1);
    // Another certificate, the other usage, a time before the check or after the leaf's
    // notAfter: checked again.
    assert!(run(&cache, Usage::Client, &other.chain, now, true, &calls));
    assert!(run(&cache, Usage::Server, &leaf.chain, now, true, &calls));
    assert!(run(
        &cache,
        Usage::Client,
        &leaf.chain,
        now_plus(-60),
        true,
        &calls
    ));
    assert!(!run(
        &cache,
        Usage::Client,
        &leaf.chain,
        now_plus(3 * 3600),
        false,
        &calls
    ));
    assert_eq!(calls.get(), 5);
}

#[test]
fn a_failure_is_never_remembered() {
    let ca = TestCa::new("ca");
    let leaf = ca.leaf_with(Some(&svc_uri(TD, "web")), -1, 2);
    let cache = ChainCache::default();
    let calls = Cell::new(0);
    let now = UnixTime::now();
    assert!(!run(&cache, Usage::Client, &leaf.chain, now, false, &calls));
    assert!(!run(&cache, Usage::Client, &leaf.chain, now, false, &calls));
    assert_eq!(calls.get(), 2);
    assert_eq!(cache.len(), 0);
}

#[test]
fn the_extra_intermediates_expiry_bounds_an_entry() {
    let ca = TestCa::new("ca");
    let leaf = ca.leaf_with(Some(&svc_uri(TD, "web")), -1, 48);
    let short = ca.leaf_with(None, -1, 1);
    let cache = ChainCache::default();
    let calls = Cell::new(0);
    let (ee, rest) = leaf.chain.split_first().unwrap();
    let check = || {
        calls.set(calls.get() + 1);
        Ok(())
    };
    let at = UnixTime::now();
    cache
        .verify(Usage::Client, ee, rest, &short.chain, at, check)
        .unwrap();
    let later = now_plus(2 * 3600);
    let check = || {
        calls.set(calls.get() + 1);
        Ok(())
    };
    cache
        .verify(Usage::Client, ee, rest, &short.chain, later, check)
        .unwrap();
    assert_eq!(
        calls.get(),
        2,
        "past the extra certificate's notAfter the chain is re-checked"
    );
}
