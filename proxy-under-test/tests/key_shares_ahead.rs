//! The binary's runtime and the connection workers (`--workers`) make TLS key shares ahead when
//! their threads park. A test binary of its own, and one test: nothing else takes shares from
//! the process's pool or adds to it meanwhile.

use std::time::{Duration, Instant};

use proxy_under_test::dataplane::Workers;
use proxy_under_test::tls::{KEY_SHARES_AHEAD, key_shares_ready, provider};
use rustls::NamedGroup;

fn wake_the_worker(rt: &tokio::runtime::Runtime) {
    rt.block_on(async { tokio::spawn(async {}).await.unwrap() });
}

/// Fills the pool with `wake` (each call wakes a thread that parks again after), or fails
/// naming `what` after 30 s.
fn fills(what: &str, mut wake: impl FnMut()) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while key_shares_ready() < KEY_SHARES_AHEAD {
        assert!(
            Instant::now() < deadline,
            "{} of {KEY_SHARES_AHEAD} key shares ready after 30 s of wake-ups: {what} does not make them on park",
            key_shares_ready()
        );
        wake();
    }
}

#[test]
fn runtimes_fill_the_key_share_pool_while_idle_and_stop_when_full() {
    assert_eq!(
        key_shares_ready(),
        0,
        "nothing is made before a thread parks"
    );
    let rt = proxy_under_test::cli::runtime(1).unwrap();
    fills("the binary's runtime", || wake_the_worker(&rt));
    for _ in 0..2 * KEY_SHARES_AHEAD {
        wake_the_worker(&rt);
    }
    assert_eq!(
        key_shares_ready(),
        KEY_SHARES_AHEAD,
        "a full pool stays full"
    );
    drop(rt);

    // Handshakes take them (the process provider's X25519 is the pool).
    let x25519 = provider()
        .kx_groups
        .iter()
        .copied()
        .find(|g| g.name() == NamedGroup::X25519)
        .unwrap();
    for _ in 0..KEY_SHARES_AHEAD {
        drop(x25519.start().unwrap());
    }
    assert_eq!(key_shares_ready(), 0);

    let workers = Workers::start(1).unwrap();
    let waiter = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    fills("a connection worker", || {
        waiter.block_on(workers.spawn(async {})).unwrap();
    });
}
