//! Hostile review 2 of the breaker's closed-period start: a loom model of a
//! half-opening caller that stalls before its raise of the side deadline
//! across **two** later open periods (the existing model,
//! `breaker::a_stalled_half_opener_never_moves_a_later_close`, covers one).
//!
//! Bounds: every interleaving up to `LOOM_MAX_PREEMPTIONS` preemptions
//! (red at 3 with the deadline raised by a plain store; two threads, one
//! probe, two windows of 10, recovery and probe timeout 10).
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release --test breaker_rev2`
#![cfg(leaparray_loom)]

use leaparray::breaker::{CircuitBreaker, Config, Outcome, State, Strategy};
use leaparray_loom_tests::{spawn, Seen};

/// Tripped at 0 (open until 10). Thread A takes a probe at 10, if the
/// breaker is still open then, and loses it (stalling, maybe, between its
/// swap and its raise of 10). Thread B gets a probe at 20 (or, after A's
/// probe, reopens on the probe timeout, open until 30, and gets one at
/// 30), reports it bad at 31 (open until 41), gets a probe at 41 and
/// reports it good with a clock lagging to 35. Closed from the later of 35
/// and the deadline of the open period before B's last probe: 41, wherever
/// A's raise lands. With a plain store, A's 10 can land after B's 41:
/// closed from 35.
#[test]
fn review_clean_a_half_opener_stalled_across_two_periods_never_moves_the_close() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let b: &'static CircuitBreaker<2> = Box::leak(Box::new(CircuitBreaker::new(
            Config::new(Strategy::ErrorCount { max_errors: 0 }, 20, 10)
                .with_min_requests(1)
                .with_probe_timeout(10),
        )));
        let p = b.try_acquire(0).unwrap();
        assert!(b.report(0, p, 1, Outcome::Error).is_some());
        let ta = spawn(move || drop(b.try_acquire(10)));
        let tb = spawn(move || {
            let p = b.try_acquire(20).or_else(|| b.try_acquire(30)).unwrap();
            assert!(p.is_probe());
            assert_eq!(
                b.report(31, p, 1, Outcome::Error).map(|t| t.to),
                Some(State::Open)
            );
            assert_eq!(b.snapshot().time, 41);
            let p = b.try_acquire(41).unwrap();
            b.report(35, p, 1, Outcome::Success).map(|t| t.to)
        });
        ta.join().unwrap();
        assert_eq!(tb.join().unwrap(), Some(State::Closed));
        let s = b.snapshot();
        assert_eq!(
            (s.state, s.time),
            (State::Closed, 41),
            "closed from an earlier open period's deadline ({} transitions)",
            s.transitions
        );
        record(s.transitions);
    });
    seen.assert_all(&[5, 7]);
}
