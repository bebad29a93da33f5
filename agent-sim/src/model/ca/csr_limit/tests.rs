//! The CSR token bucket against its definition: never more than one signing per `1/rate`
//! beyond the 500 ms look-ahead, never a refusal when requests are spaced by `1/rate`.

use std::time::Duration;

use proptest::prelude::*;
use time::macros::datetime;

use super::CsrLimiter;

const T0: time::OffsetDateTime = datetime!(2025-05-22 10:00:00 UTC);

proptest! {
    #[test]
    fn admitted_never_exceed_the_rate(
        rate in 0.5f64..50.0,
        gaps in proptest::collection::vec(0u64..400, 1..200),
    ) {
        let mut lim = CsrLimiter::default();
        let mut now = T0;
        let mut admitted = 0u32;
        for gap in gaps {
            now += Duration::from_millis(gap);
            if lim.take(rate, now) {
                admitted += 1;
            }
        }
        let span = (now - T0).as_seconds_f64();
        // One token at once, one per 1/rate after, up to 500 ms reserved ahead.
        let bound = 1.0 + rate * (span + 0.5) + 1e-6;
        prop_assert!(f64::from(admitted) <= bound, "{admitted} > {bound}");
    }

    #[test]
    fn spaced_requests_are_never_refused(rate in 0.5f64..50.0, n in 1usize..100) {
        let mut lim = CsrLimiter::default();
        let step = Duration::from_secs_f64(1.0 / rate) + Duration::from_micros(1);
        let mut now = T0;
        for _ in 0..n {
            prop_assert!(lim.take(rate, now));
            now += step;
        }
    }
}

#[test]
fn zero_rate_is_unlimited_and_a_new_rate_starts_a_fresh_bucket() {
    let mut lim = CsrLimiter::default();
    for _ in 0..1000 {
        assert!(lim.take(0.0, T0));
    }
    assert!(lim.take(1.0, T0));
    assert!(!lim.take(1.0, T0));
    assert!(lim.take(2.0, T0), "another limit: fresh bucket");
}
