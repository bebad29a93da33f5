//! Deterministic tests of within/stable_for evaluation on tokio's paused clock: the observed
//! state is a pure function of the (virtual) time since the plan started.

use super::*;

const MS: Duration = Duration::from_millis(1);

/// The driver loop, as the executor runs it.
async fn evaluate(plan: &Plan, mut observe: impl FnMut() -> Observation) -> Evaluation {
    let mut ev = Evaluator::new(*plan);
    loop {
        match ev.feed(observe()) {
            Next::Wait(d) => tokio::time::sleep(d).await,
            Next::Done(e) => return e,
        }
    }
}

/// Observes `state(elapsed)`.
async fn run(plan: Plan, state: impl Fn(Duration) -> bool) -> Evaluation {
    let start = plan.start;
    evaluate(&plan, || {
        let t = Instant::now() - start;
        let ok = state(t);
        Observation::new(ok, if ok { "good" } else { "bad" })
    })
    .await
}

fn plan(within: Option<u64>, stable: Option<u64>) -> Plan {
    Plan::new(
        Instant::now(),
        within.map(Duration::from_millis),
        stable.map(Duration::from_millis),
    )
}

#[tokio::test(start_paused = true)]
async fn at_once_is_one_observation() {
    let e = run(plan(None, None), |_| true).await;
    assert_eq!(
        e.outcome,
        Outcome::Held {
            took: Duration::ZERO
        }
    );
    assert_eq!(e.observations, 1);
    let e = run(plan(None, None), |_| false).await;
    assert_eq!(e.outcome, Outcome::Never { last: "bad".into() });
    assert_eq!(e.observations, 1);
}

#[tokio::test(start_paused = true)]
async fn within_records_when_it_became_true() {
    // Polls every 100 ms: true from 250 ms on is first seen at 300 ms.
    let e = run(plan(Some(1000), None), |t| t >= 250 * MS).await;
    assert_eq!(e.outcome, Outcome::Held { took: 300 * MS });
    assert_eq!(e.observations, 4);
    let oks: Vec<bool> = e.transitions.iter().map(|(_, o)| o.ok).collect();
    assert_eq!(oks, [false, true]);
}

#[tokio::test(start_paused = true)]
async fn within_gives_up_at_the_bound() {
    let e = run(plan(Some(1000), None), |t| t >= 5000 * MS).await;
    assert_eq!(e.outcome, Outcome::Never { last: "bad".into() });
    // 0, 100, ..., 1000 ms.
    assert_eq!(e.observations, 11);
}

#[tokio::test(start_paused = true)]
async fn stable_for_fails_on_the_first_contrary_observation() {
    // True from 0 to 700 ms, false after: stable polls every 150 ms from 0.
    let e = run(plan(None, Some(1500)), |t| t < 700 * MS).await;
    assert_eq!(
        e.outcome,
        Outcome::Broke {
            took: Duration::ZERO,
            after: 750 * MS,
            observed: "bad".into()
        }
    );
    let oks: Vec<bool> = e.transitions.iter().map(|(_, o)| o.ok).collect();
    assert_eq!(oks, [true, false]);
}

#[tokio::test(start_paused = true)]
async fn stable_for_holds_over_the_whole_window() {
    let e = run(plan(Some(2000), Some(1500)), |t| t >= 400 * MS).await;
    assert_eq!(e.outcome, Outcome::Held { took: 400 * MS });
    // Five waiting observations (0..=400 ms), then stable ones at 550, 700, ..., 1900.
    assert_eq!(e.observations, 5 + 10);
}

#[tokio::test(start_paused = true)]
async fn late_is_measured_up_to_the_late_limit() {
    let p = || {
        let mut p = plan(Some(1000), None);
        p.late = Some(Duration::from_millis(3000));
        p
    };
    let e = run(p(), |t| t >= 1800 * MS).await;
    assert_eq!(e.outcome, Outcome::Late { took: 1800 * MS });
    let e = run(p(), |t| t >= 500 * MS).await;
    assert_eq!(e.outcome, Outcome::Held { took: 500 * MS });
    let e = run(p(), |_| false).await;
    assert!(matches!(e.outcome, Outcome::Never { .. }));
}

#[tokio::test(start_paused = true)]
async fn since_backdates_the_moment_it_became_true() {
    // The probe knows the state began at 350 ms although it is only seen at 400 ms.
    let p = plan(Some(1000), None);
    let start = p.start;
    let e = evaluate(&p, || {
        let t = Instant::now() - start;
        Observation {
            ok: t >= 350 * MS,
            text: String::new(),
            since: Some(start + 350 * MS),
        }
    })
    .await;
    assert_eq!(e.outcome, Outcome::Held { took: 350 * MS });

    // Closed before the trigger counts as at once.
    let p = plan(Some(1000), None);
    let e = evaluate(&p, || Observation {
        ok: true,
        text: String::new(),
        since: Some(p.start - 500 * MS),
    })
    .await;
    assert_eq!(
        e.outcome,
        Outcome::Held {
            took: Duration::ZERO
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_late_start_still_observes_once() {
    // The trigger was long ago (earlier checks took time): one observation decides, and true
    // at the first look is not late.
    let mut p = plan(Some(300), None);
    p.start -= Duration::from_secs(2);
    let e = run(p, |_| true).await;
    assert_eq!(e.observations, 1);
    assert_eq!(e.outcome, Outcome::Held { took: 2000 * MS });
    // False then: the window was gone before this check looked, so it cannot be judged (said
    // so), rather than failed for a window it never had.
    let e = run(p, |_| false).await;
    assert_eq!(e.observations, 1);
    assert!(
        matches!(e.outcome, Outcome::Unjudged { .. }),
        "{:?}",
        e.outcome
    );
}

#[tokio::test(start_paused = true)]
async fn without_a_declared_bound_nothing_is_late() {
    // The observation that sees it true ends after the window (a slow probe): still held, not
    // non-strict, since no bound was declared to be late against.
    let start = Instant::now();
    tokio::time::sleep(Duration::from_millis(950)).await;
    let mut ev = Evaluator::new(plan_from(start, 1000));
    assert!(matches!(
        ev.feed(Observation::new(false, "bad")),
        Next::Wait(_)
    ));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let Next::Done(e) = ev.feed(Observation::new(true, "good")) else {
        panic!("decided")
    };
    assert_eq!(e.outcome, Outcome::Held { took: 1150 * MS });
}

#[tokio::test(start_paused = true)]
async fn a_window_used_up_by_earlier_checks_is_unjudged_not_failed() {
    let start = Instant::now();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut ev = Evaluator::new(plan_from(start, 1000));
    let Next::Done(e) = ev.feed(Observation::new(false, "bad")) else {
        panic!("decided at once")
    };
    assert_eq!(
        e.outcome,
        Outcome::Unjudged {
            last: "bad".into(),
            first_look: 1500 * MS
        }
    );
    // True at that first look: held (never late without a declared bound).
    let mut ev = Evaluator::new(plan_from(start, 1000));
    let Next::Done(e) = ev.feed(Observation::new(true, "good")) else {
        panic!("decided at once")
    };
    assert_eq!(e.outcome, Outcome::Held { took: 1500 * MS });
}

fn plan_from(start: Instant, within_ms: u64) -> Plan {
    Plan::new(start, Some(Duration::from_millis(within_ms)), None)
}
