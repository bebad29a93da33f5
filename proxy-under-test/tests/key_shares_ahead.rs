//! The binary's runtime makes TLS key shares ahead when its workers park. A test binary of its
//! own: no other test's handshakes take shares from the process's pool meanwhile.

use std::time::{Duration, Instant};

use proxy_under_test::tls::{KEY_SHARES_AHEAD, key_shares_ready};

fn wake_the_worker(rt: &tokio::runtime::Runtime) {
    rt.block_on(async { tokio::spawn(async {}).await.unwrap() });
}

#[test]
fn the_binarys_runtime_fills_the_key_share_pool_while_idle_and_stops_when_full() {
    assert_eq!(
        key_shares_ready(),
        0,
        "nothing is made before a worker parks"
    );
    let rt = proxy_under_test::cli::runtime(1).unwrap();
    // Each task wakes the worker, which parks again after running it: one share per park.
    let deadline = Instant::now() + Duration::from_secs(30);
    while key_shares_ready() < KEY_SHARES_AHEAD {
        assert!(
            Instant::now() < deadline,
            "{} of {KEY_SHARES_AHEAD} key shares ready after 30 s of wake-ups: the runtime does not make them on park",
            key_shares_ready()
        );
        wake_the_worker(&rt);
    }
    for _ in 0..2 * KEY_SHARES_AHEAD {
        wake_the_worker(&rt);
    }
    assert_eq!(
        key_shares_ready(),
        KEY_SHARES_AHEAD,
        "a full pool stays full"
    );
}
