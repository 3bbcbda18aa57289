//! The circuit breaker: Sentinel's `ResponseTimeCircuitBreakerTest` and
//! `ExceptionCircuitBreakerTest` scenarios with explicit times, `k` probes,
//! the probe timeout, periods and stale permits, bad configurations, real
//! threads racing through half-open, and a property test against the
//! sequential model of the state machine (`tests/common/breaker_model.rs`).

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use leaparray::breaker::{
    BreakerError, CircuitBreaker, Config, Outcome, Permit, Ratio, State, Strategy, Transition,
    MAX_PROBES,
};
use proptest::prelude::*;
use proptest::strategy::Strategy as _;

#[path = "common/breaker_model.rs"]
mod breaker_model;
use breaker_model::{BreakerModel, ModelPermit};

/// Sentinel's `AbstractTimeBasedTest.entryAndSleepFor`: enter at `now`; if
/// admitted, the request takes `sleep` ms and succeeds (exits at `now +
/// sleep`, RT `sleep`). The mocked clock moves only if it was admitted.
fn entry_and_sleep_for<const N: usize>(b: &CircuitBreaker<N>, now: &mut u64, sleep: u64) -> bool {
    match b.try_acquire(*now) {
        None => false,
        Some(p) => {
            *now += sleep;
            let _ = b.report(*now, p, sleep, Outcome::Success);
            true
        }
    }
}

/// `entryWithErrorIfPresent` with an exception: enter; if admitted, trace
/// an error and exit after 5 to 9 ms (Sentinel draws it at random; here
/// 7).
fn entry_with_error<const N: usize>(b: &CircuitBreaker<N>, now: &mut u64) -> bool {
    match b.try_acquire(*now) {
        None => false,
        Some(p) => {
            *now += 7;
            let _ = b.report(*now, p, 7, Outcome::Error);
            true
        }
    }
}

/// Sentinel `sentinel-core/src/test/java/com/alibaba/csp/sentinel/slots/
/// block/degrade/circuitbreaker/ResponseTimeCircuitBreakerTest.java`,
/// `testMaxSlowRatioThreshold`: RT above 10 ms is slow, a slow ratio of 1,
/// at least 3 requests, statistics over 5,000 ms, open for 5 s.
#[test]
fn sentinel_response_time_max_slow_ratio_threshold() {
    let b = CircuitBreaker::<1>::new(
        Config::new(
            Strategy::SlowRequestRatio {
                max_rt: 10,
                max_ratio: Ratio::ONE,
            },
            5_000,
            5_000,
        )
        .with_min_requests(3),
    );
    let mut now = 0;
    assert!(entry_and_sleep_for(&b, &mut now, 20));
    assert!(entry_and_sleep_for(&b, &mut now, 20));
    assert!(entry_and_sleep_for(&b, &mut now, 20));
    // 3 of 3 slower than 10 ms: tripped at 60, open until 5,060.
    assert_eq!(b.snapshot().time, 5_060);
    assert!(!entry_and_sleep_for(&b, &mut now, 20));
    now += 1_000;
    assert!(!entry_and_sleep_for(&b, &mut now, 20));
    now += 4_000;
    assert_eq!(now, 5_060);
    assert!(entry_and_sleep_for(&b, &mut now, 20)); // the probe, 20 ms: slow
    assert_eq!(b.state(), State::Open);
    assert_eq!(b.snapshot().time, 5_080 + 5_000);
}

/// Sentinel `.../degrade/circuitbreaker/ExceptionCircuitBreakerTest.java`,
/// `testRecordErrorOrSuccess`: error ratio 0.2, statistics over 20 s, open
/// for 10 s, at least 1 request. Sentinel keeps its statistics in one
/// window of 20 s; here two of 10 s (a recovery timeout must be at least
/// one window, so that a new closed period never reads the reports of the
/// one before the trip).
#[test]
fn sentinel_exception_record_error_or_success() {
    let retry_timeout = 10_000;
    let b = CircuitBreaker::<2>::new(
        Config::new(
            Strategy::ErrorRatio {
                max_ratio: Ratio::new(2, 10),
            },
            20_000,
            retry_timeout,
        )
        .with_min_requests(1),
    );
    let mut now = 0;
    assert!(entry_and_sleep_for(&b, &mut now, 10));
    assert!(entry_with_error(&b, &mut now)); // -> open (1 of 2 failed)
    assert_eq!(
        (b.state(), b.snapshot().time),
        (State::Open, 17 + retry_timeout)
    );
    assert!(!entry_with_error(&b, &mut now));
    assert!(!entry_and_sleep_for(&b, &mut now, 100));
    now += retry_timeout / 2;
    assert!(!entry_and_sleep_for(&b, &mut now, 100));
    now += retry_timeout / 2;
    assert!(entry_with_error(&b, &mut now)); // -> half -> open
    assert_eq!(b.state(), State::Open);
    assert!(!entry_and_sleep_for(&b, &mut now, 100));
    assert!(!entry_and_sleep_for(&b, &mut now, 100));
    now += retry_timeout;
    assert!(entry_and_sleep_for(&b, &mut now, 100)); // -> half -> closed
    assert_eq!(b.state(), State::Closed);
    for _ in 0..6 {
        assert!(entry_and_sleep_for(&b, &mut now, 100));
    }
    assert!(entry_with_error(&b, &mut now)); // 1 of 7: not over 0.2
    assert!(entry_and_sleep_for(&b, &mut now, 100));
    assert_eq!((b.state(), b.counts(now)), (State::Closed, (8, 1)));
    assert_eq!(b.snapshot().transitions, 5);
}

fn error_count(max_errors: u64, k: u16) -> Config {
    Config::new(Strategy::ErrorCount { max_errors }, 100, 100)
        .with_min_requests(1)
        .with_probes(k)
}

/// Trips `b` with errors at `now` (one error more than the limit of
/// `error_count`); returns when it may half-open.
fn trip<const N: usize>(b: &CircuitBreaker<N>, now: u64) -> u64 {
    while b.state() == State::Closed {
        let p = b.try_acquire(now).unwrap();
        let _ = b.report(now, p, 1, Outcome::Error);
    }
    b.snapshot().time
}

#[test]
fn error_count_trips_above_the_count_and_from_min_requests() {
    let b = CircuitBreaker::<2>::new(error_count(2, 1).with_min_requests(4));
    for t in 0..3 {
        let p = b.try_acquire(t).unwrap();
        assert_eq!(b.report(t, p, 1, Outcome::Error), None); // 3 errors, 3 requests
    }
    let p = b.try_acquire(3).unwrap();
    let t = b.report(3, p, 1, Outcome::Success).unwrap(); // the 4th request
    assert_eq!(
        (t.from, t.to, t.at, t.number),
        (State::Closed, State::Open, 3, 1)
    );
}

#[test]
fn k_probes_all_good_close_any_bad_reopens() {
    let b = CircuitBreaker::<2>::new(error_count(0, 3));
    let at = trip(&b, 0);
    assert!(b.try_acquire(at - 1).is_none());
    let p: Vec<Permit<_>> = (0..3).map(|i| b.try_acquire(at + i).unwrap()).collect();
    assert!(p.iter().all(Permit::is_probe));
    assert!(b.try_acquire(at + 3).is_none()); // exactly k
    let s = b.snapshot();
    assert_eq!(
        (s.state, s.probes_granted, s.probes_good),
        (State::HalfOpen, 3, 0)
    );
    let mut p = p.into_iter();
    assert_eq!(
        b.report(at + 5, p.next().unwrap(), 1, Outcome::Success),
        None
    );
    assert_eq!(
        b.report(at + 6, p.next().unwrap(), 1, Outcome::Success),
        None
    );
    assert_eq!(b.snapshot().probes_good, 2);
    let t = b
        .report(at + 7, p.next().unwrap(), 1, Outcome::Success)
        .unwrap();
    assert_eq!((t.from, t.to), (State::HalfOpen, State::Closed));
    assert_eq!(b.counts(at + 7), (0, 0)); // a fresh closed period

    // Again, with the second probe bad: open at once, for the full timeout.
    let at = trip(&b, at + 10);
    let p: Vec<Permit<_>> = (0..3).map(|_| b.try_acquire(at).unwrap()).collect();
    let mut p = p.into_iter();
    assert_eq!(
        b.report(at + 1, p.next().unwrap(), 1, Outcome::Success),
        None
    );
    let t = b
        .report(at + 2, p.next().unwrap(), 1, Outcome::Error)
        .unwrap();
    assert_eq!((t.from, t.to), (State::HalfOpen, State::Open));
    assert_eq!(b.snapshot().time, at + 2 + 100);
    // The third probe's report is stale now.
    assert_eq!(
        b.report(at + 3, p.next().unwrap(), 1, Outcome::Success),
        None
    );
    assert_eq!(b.state(), State::Open);
}

#[test]
fn a_lost_probe_reopens_after_the_probe_timeout() {
    let b = CircuitBreaker::<2>::new(error_count(0, 2).with_probe_timeout(30));
    let at = trip(&b, 0);
    let first = b.try_acquire(at).unwrap();
    let second = b.try_acquire(at + 10).unwrap(); // the latest grant: at + 10
    drop(first); // never reported
    assert_eq!(b.report(at + 11, second, 1, Outcome::Success), None);
    assert!(b.try_acquire(at + 39).is_none());
    assert_eq!(b.state(), State::HalfOpen);
    assert!(b.try_acquire(at + 40).is_none()); // 30 since the latest grant: reopens
    let s = b.snapshot();
    assert_eq!((s.state, s.time), (State::Open, at + 140));
}

#[test]
fn permits_of_earlier_periods_change_nothing() {
    let b = CircuitBreaker::<2>::new(error_count(0, 1));
    let old = b.try_acquire(0).unwrap();
    let at = trip(&b, 1);
    // A plain permit from before the trip, reported while half-open, does
    // not decide the probe (Sentinel's would close the breaker).
    let probe = b.try_acquire(at).unwrap();
    assert_eq!(b.report(at + 1, old, 1, Outcome::Success), None);
    assert_eq!(b.state(), State::HalfOpen);
    let _ = b.report(at + 2, probe, 1, Outcome::Success);
    assert_eq!(b.state(), State::Closed);
    // A plain permit of the closed period before the trip, reported after
    // the breaker closed again, is not counted in the new period.
    let b = CircuitBreaker::<2>::new(error_count(0, 1).with_min_requests(2));
    let old = b.try_acquire(0).unwrap();
    let p = b.try_acquire(0).unwrap();
    let q = b.try_acquire(0).unwrap();
    let _ = b.report(1, p, 1, Outcome::Error);
    let _ = b.report(1, q, 1, Outcome::Error);
    let at = b.snapshot().time;
    let probe = b.try_acquire(at).unwrap();
    let _ = b.report(at, probe, 1, Outcome::Success);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.report(at + 1, old, 1, Outcome::Error), None);
    assert_eq!(b.counts(at + 1), (0, 0));
}

#[test]
fn statistics_slide_and_start_at_the_close() {
    // Two windows of 50; closed since 0.
    let b = CircuitBreaker::<2>::new(error_count(2, 1).with_min_requests(1));
    for t in [10, 20, 60] {
        let p = b.try_acquire(t).unwrap();
        let _ = b.report(t, p, 1, Outcome::Error);
    }
    assert_eq!(b.state(), State::Open); // 3 > 2 at 60
    assert_eq!(b.counts(60), (0, 0)); // only a closed period has counts
    let b = CircuitBreaker::<2>::new(error_count(2, 1).with_min_requests(1));
    for t in [10, 20, 110] {
        let p = b.try_acquire(t).unwrap();
        let _ = b.report(t, p, 1, Outcome::Error);
    }
    // [0, 50) slid out before the third error.
    assert_eq!((b.state(), b.counts(110)), (State::Closed, (1, 1)));
}

/// The reports of the closed period before a trip never count in the next
/// one, even while their windows are still live.
#[test]
fn a_closed_period_starts_with_no_reports() {
    // Two windows of 50, open for 50: the shortest recovery allowed.
    let b = CircuitBreaker::<2>::new(
        Config::new(Strategy::ErrorCount { max_errors: 1 }, 100, 50).with_min_requests(1),
    );
    for (t, outcome) in [
        (40, Outcome::Success),
        (45, Outcome::Error),
        (49, Outcome::Error),
    ] {
        let p = b.try_acquire(t).unwrap();
        let _ = b.report(t, p, 1, outcome);
    }
    assert_eq!(b.snapshot().time, 99); // tripped at 49
    let probe = b.try_acquire(99).unwrap();
    let _ = b.report(99, probe, 1, Outcome::Success);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.counts(99), (0, 0)); // window [0, 50) is live, not counted
    let p = b.try_acquire(100).unwrap();
    assert_eq!(b.report(100, p, 1, Outcome::Error), None);
    assert_eq!((b.state(), b.counts(100)), (State::Closed, (1, 1)));
}

#[test]
fn every_transition_is_observed_once_in_order() {
    static SEEN: AtomicU32 = AtomicU32::new(0);
    static LAST: AtomicU32 = AtomicU32::new(0);
    fn observe(t: Transition) {
        SEEN.fetch_add(1, Ordering::Relaxed);
        assert_eq!(LAST.swap(t.number, Ordering::Relaxed) + 1, t.number);
    }
    static B: CircuitBreaker<2> = CircuitBreaker::new(
        Config::new(Strategy::ErrorCount { max_errors: 0 }, 100, 100).with_min_requests(1),
    )
    .with_observer(observe);
    let at = trip(&B, 0);
    let p = B.try_acquire(at).unwrap(); // half-open
    let _ = B.report(at, p, 1, Outcome::Error); // open
    let p = B.try_acquire(at + 100).unwrap(); // half-open
    let _ = B.report(at + 100, p, 1, Outcome::Success); // closed
    assert_eq!(SEEN.load(Ordering::Relaxed), 5);
    assert_eq!(B.snapshot().transitions, 5);
}

/// Every refused configuration: `try_new` and `validate` return the
/// reason, `new` panics with it (a compile error in a `static`: the
/// `compile_fail` example of `CircuitBreaker::new`).
#[test]
fn bad_configurations_are_errors_from_try_new_and_panics_from_new() {
    let ok = Config::new(Strategy::ErrorCount { max_errors: 1 }, 100, 100);
    let ratio = |r| Config::new(Strategy::ErrorRatio { max_ratio: r }, 100, 100);
    let slow = |r| {
        Config::new(
            Strategy::SlowRequestRatio {
                max_rt: 1,
                max_ratio: r,
            },
            100,
            100,
        )
    };
    let cases: [(Config, BreakerError); 11] = [
        (
            Config {
                stat_interval: 0,
                ..ok
            },
            BreakerError::ZeroInterval,
        ),
        (
            Config {
                stat_interval: 101,
                ..ok
            },
            BreakerError::IntervalNotMultiple { windows: 2 },
        ),
        (ratio(Ratio::new(1, 0)), BreakerError::ZeroDenominator),
        (ratio(Ratio::new(101, 100)), BreakerError::RatioAboveOne),
        (slow(Ratio::new(u32::MAX, 1)), BreakerError::RatioAboveOne),
        (ok.with_min_requests(0), BreakerError::ZeroMinRequests),
        (
            Config {
                recovery_timeout: 0,
                ..ok
            },
            BreakerError::ZeroRecoveryTimeout,
        ),
        (ok.with_probe_timeout(0), BreakerError::ZeroProbeTimeout),
        (
            ok.with_probes(0),
            BreakerError::ProbesOutOfRange { max: MAX_PROBES },
        ),
        (
            ok.with_probes(MAX_PROBES + 1),
            BreakerError::ProbesOutOfRange { max: MAX_PROBES },
        ),
        (
            Config {
                recovery_timeout: 49,
                ..ok
            },
            BreakerError::RecoveryShorterThanWindow { window: 50 },
        ),
    ];
    for (config, error) in cases {
        assert_eq!(CircuitBreaker::<2>::try_new(config).unwrap_err(), error);
        assert_eq!(CircuitBreaker::<2>::validate(&config), Err(error));
        let panic = std::panic::catch_unwind(|| CircuitBreaker::<2>::new(config))
            .expect_err("new built a breaker from a refused configuration");
        let message = match (panic.downcast_ref::<String>(), panic.downcast_ref::<&str>()) {
            (Some(s), _) => s.clone(),
            (None, Some(s)) => (*s).to_owned(),
            (None, None) => String::new(),
        };
        assert!(
            message.starts_with("invalid CircuitBreaker configuration: "),
            "{message:?}"
        );
        assert!(!error.to_string().is_empty());
    }
    assert!(CircuitBreaker::<2>::try_new(ok.with_probes(MAX_PROBES)).is_ok());
    assert!(CircuitBreaker::<2>::try_new(ratio(Ratio::ONE)).is_ok());
    assert!(CircuitBreaker::<2>::try_new(ratio(Ratio::new(0, 1))).is_ok());
}

#[test]
fn extreme_times_and_rts() {
    let b = CircuitBreaker::<2>::new(
        Config::new(
            Strategy::SlowRequestRatio {
                max_rt: u64::MAX - 1,
                max_ratio: Ratio::new(0, 1),
            },
            u64::MAX - 1,
            u64::MAX,
        )
        .with_min_requests(1),
    );
    let p = b.try_acquire(u64::MAX - 1).unwrap();
    assert_eq!(b.report(u64::MAX, p, u64::MAX - 1, Outcome::Error), None); // not slow
    let p = b.try_acquire(u64::MAX).unwrap();
    let t = b.report(u64::MAX, p, u64::MAX, Outcome::Success).unwrap(); // slow
    assert_eq!(t.to, State::Open);
    assert_eq!(b.snapshot().time, u64::MAX); // the deadline saturates
    assert!(b.try_acquire(u64::MAX - 1).is_none());
    let probe = b.try_acquire(u64::MAX).unwrap();
    assert!(probe.is_probe());
    let t = b.report(u64::MAX, probe, 0, Outcome::Success).unwrap();
    assert_eq!((t.to, t.at), (State::Closed, u64::MAX));
    // Tripped in the last recovery timeout of time: the new closed period
    // began in the window of the trip and counts its reports
    // (GUARANTEES.md, section 5).
    assert_eq!(b.counts(u64::MAX), (2, 1));
}

/// Real threads past the recovery timeout race through half-open: exactly
/// `k` probes in every round, whatever the interleaving.
#[test]
fn threads_racing_through_half_open_get_exactly_k_probes() {
    let rounds = if cfg!(miri) { 2 } else { 200 };
    let threads = 4;
    for k in [1u16, 3] {
        let b = Arc::new(CircuitBreaker::<2>::new(error_count(0, k)));
        let mut now = 0;
        for _ in 0..rounds {
            let at = trip(&b, now);
            let barrier = Arc::new(Barrier::new(threads));
            let probes = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..threads)
                .map(|_| {
                    let (b, barrier, probes) = (b.clone(), barrier.clone(), probes.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        for _ in 0..2 {
                            if let Some(p) = b.try_acquire(at) {
                                assert!(p.is_probe());
                                probes.fetch_add(1, Ordering::Relaxed);
                                drop(p);
                            }
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            assert_eq!(probes.load(Ordering::Relaxed), usize::from(k));
            // Lost probes: the probe timeout reopens it.
            now = at + 100;
            assert!(b.try_acquire(now).is_none());
            now = b.snapshot().time;
            let p = b.try_acquire(now).unwrap();
            let _ = b.report(now, p, 1, Outcome::Error);
            assert_eq!(b.state(), State::Open);
            now = b.snapshot().time;
            for _ in 0..k {
                let p = b.try_acquire(now).unwrap();
                let _ = b.report(now, p, 1, Outcome::Success);
            }
            assert_eq!(b.state(), State::Closed);
        }
    }
}

// ---------------------------------------------------------------------------
// The property test against the sequential model.
// ---------------------------------------------------------------------------

/// `dt` moves the callers' common clock forward; `jitter` (in hundredths
/// of `N` windows, -100 to 100) is how far this caller's own clock is from
/// it: a caller that read its clock and stalled (behind), or one whose
/// clock runs ahead.
#[derive(Debug, Clone)]
enum Op {
    Acquire {
        dt: u64,
        jitter: i64,
    },
    Report {
        pick: usize,
        dt: u64,
        jitter: i64,
        rt: u64,
        error: bool,
    },
    Lose {
        pick: usize,
    },
}

/// Mostly short steps (several reports per window, a probe right at the
/// end of the recovery timeout), sometimes long ones.
fn dt() -> impl proptest::strategy::Strategy<Value = u64> {
    prop_oneof![3 => 0u64..4, 1 => 0u64..60]
}

/// Mostly in time, sometimes up to `N` windows behind or ahead.
fn jitter() -> impl proptest::strategy::Strategy<Value = i64> {
    prop_oneof![2 => Just(0i64), 1 => -100i64..=100]
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    prop_oneof![
        3 => (dt(), jitter()).prop_map(|(dt, jitter)| Op::Acquire { dt, jitter }),
        4 => (any::<usize>(), dt(), jitter(), 0u64..20, any::<bool>())
            .prop_map(|(pick, dt, jitter, rt, error)| Op::Report { pick, dt, jitter, rt, error }),
        1 => any::<usize>().prop_map(|pick| Op::Lose { pick }),
    ]
}

fn config() -> impl proptest::strategy::Strategy<Value = Config> {
    let strategy = prop_oneof![
        (0u64..15, 0u32..=4).prop_map(|(max_rt, n)| Strategy::SlowRequestRatio {
            max_rt,
            max_ratio: Ratio::new(n, 4),
        }),
        (0u32..=3).prop_map(|n| Strategy::ErrorRatio {
            max_ratio: Ratio::new(n, 3),
        }),
        (0u64..4).prop_map(|max_errors| Strategy::ErrorCount { max_errors }),
    ];
    // Two windows of 10 to 40 ticks; recovery at least one window.
    (
        strategy,
        10u64..40,
        prop_oneof![0u64..3, 0u64..60],
        1u64..5,
        1u16..4,
        1u64..80,
    )
        .prop_map(
            |(strategy, window, extra, min_requests, k, probe_timeout)| {
                Config::new(strategy, 2 * window, window + extra)
                    .with_min_requests(min_requests)
                    .with_probes(k)
                    .with_probe_timeout(probe_timeout)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 512 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Every decision, report, transition, snapshot, count and uncounted
    /// report of the breaker is the model's, one call at a time, with each
    /// caller's time up to `N` windows behind or ahead of the others'.
    #[test]
    fn the_breaker_is_its_model(
        config in config(),
        ops in prop::collection::vec(op(), 1..if cfg!(miri) { 12 } else { 120 }),
    ) {
        let b = CircuitBreaker::<2>::try_new(config).unwrap();
        let mut m = BreakerModel::<2>::new(config);
        // Two windows: `N * window` ticks is `stat_interval`.
        let span = config.stat_interval as i64;
        let mut clock = 0u64;
        // The latest time any call used: `counts` is compared there (the
        // model keeps no retired window, so no older time).
        let mut hi = 0u64;
        let mut held: Vec<(Permit<_>, ModelPermit)> = Vec::new();
        for op in ops {
            let at = |clock: u64, jitter: i64| clock.saturating_add_signed(jitter * span / 100);
            match op {
                Op::Acquire { dt, jitter } => {
                    clock += dt;
                    let now = at(clock, jitter);
                    hi = hi.max(now);
                    let got = b.try_acquire(now);
                    let (want, _) = m.try_acquire(now);
                    prop_assert_eq!(got.as_ref().map(Permit::is_probe), want.map(|p| p.probe));
                    if let (Some(g), Some(w)) = (got, want) {
                        held.push((g, w));
                    }
                }
                Op::Report { pick, dt, jitter, rt, error } if !held.is_empty() => {
                    clock += dt;
                    let now = at(clock, jitter);
                    hi = hi.max(now);
                    let (p, mp) = held.swap_remove(pick % held.len());
                    let outcome = if error { Outcome::Error } else { Outcome::Success };
                    let got = b.report(now, p, rt, outcome);
                    let want = m.report(now, mp, rt, outcome);
                    prop_assert_eq!(got, want);
                }
                Op::Lose { pick } if !held.is_empty() => {
                    drop(held.swap_remove(pick % held.len())); // a lost permit
                }
                _ => {}
            }
            let s = b.snapshot();
            prop_assert_eq!(
                (s.state, s.transitions, s.time, s.probes_granted, s.probes_good),
                (m.state, m.transitions, m.time, m.granted, m.good)
            );
            prop_assert_eq!(b.counts(hi), m.counts(hi));
            prop_assert_eq!(b.uncounted_reports(), m.uncounted);
            if s.state == State::HalfOpen {
                prop_assert!(s.probes_good <= s.probes_granted && s.probes_granted <= config.probes);
            }
        }
    }
}

// Regression tests from the hostile review of commit 0e9ecd1
// (reproducers adapted; the review's numbering in the names' comments).

/// Review D1: with a recovery timeout shorter than one window, the new
/// closed period's first window held the errors from before the trip and
/// its first report (even a success) re-tripped it. Such a configuration
/// is now refused with `RecoveryShorterThanWindow`, and at the shortest
/// recovery allowed (one window) the old errors no longer count.
#[test]
fn old_errors_never_retrip_a_freshly_closed_breaker() {
    let sentinel_like = Config::new(
        Strategy::ErrorRatio {
            max_ratio: Ratio::percent(50),
        },
        20_000,
        10_000,
    );
    assert_eq!(
        CircuitBreaker::<1>::try_new(sentinel_like).err(),
        Some(BreakerError::RecoveryShorterThanWindow { window: 20_000 })
    );
    // The review's scenario with the recovery timeout raised to one window.
    let b = CircuitBreaker::<1>::try_new(Config {
        recovery_timeout: 20_000,
        ..sentinel_like
    })
    .unwrap();
    for t in 1_000..1_005 {
        let p = b.try_acquire(t).unwrap();
        let _ = b.report(t, p, 1, Outcome::Error);
    }
    assert_eq!(b.state(), State::Open);
    let probe = b.try_acquire(21_004).unwrap();
    let t = b.report(21_005, probe, 1, Outcome::Success).unwrap();
    assert_eq!(t.to, State::Closed);
    assert_eq!(b.counts(21_005), (0, 0));
    let p = b.try_acquire(21_006).unwrap();
    assert_eq!(b.report(21_006, p, 1, Outcome::Success), None);
}

/// Review D3: a permit of breaker A, reported on breaker B (same period
/// number), closed B while B's own probe was in flight. A permit borrows
/// its breaker now, and another breaker ignores it.
#[test]
fn a_permit_of_another_breaker_changes_nothing() {
    let cfg = Config::new(Strategy::ErrorCount { max_errors: 0 }, 10, 10).with_min_requests(1);
    let (a, b) = (CircuitBreaker::<1>::new(cfg), CircuitBreaker::<1>::new(cfg));
    for br in [&a, &b] {
        let p = br.try_acquire(0).unwrap();
        let _ = br.report(1, p, 1, Outcome::Error);
        assert_eq!(br.state(), State::Open);
    }
    let a_probe = a.try_acquire(11).unwrap();
    let b_probe = b.try_acquire(11).unwrap(); // B's only probe: in flight
    assert_eq!(b.report(12, a_probe, 1, Outcome::Success), None);
    assert_eq!(b.state(), State::HalfOpen, "A's probe decided B");
    // Plain permits of A never feed B's statistics.
    assert!(b.report(12, b_probe, 1, Outcome::Success).is_some());
    let foreign = a.try_acquire(30);
    assert!(foreign.is_none()); // A: half-open, its probe spent
    let c = CircuitBreaker::<1>::new(cfg);
    let plain = c.try_acquire(30).unwrap();
    assert_eq!(b.report(30, plain, 1, Outcome::Error), None);
    assert_eq!((b.state(), b.counts(30)), (State::Closed, (0, 0)));
}

/// Review D2: each report read the windows live at its own `now`. Two
/// errors whose `now`s straddle a window boundary, the OLDER reported last
/// (a caller that read its clock, then stalled): neither report saw both,
/// and the breaker stayed closed over windows holding 2 > 1 errors. The
/// trip check now reads at the newest window the array holds.
#[test]
fn a_trip_is_not_missed_when_reports_arrive_out_of_now_order() {
    let b = CircuitBreaker::<2>::new(
        Config::new(Strategy::ErrorCount { max_errors: 1 }, 20, 100).with_min_requests(1),
    );
    let (p, q) = (b.try_acquire(14).unwrap(), b.try_acquire(14).unwrap());
    assert_eq!(b.report(25, p, 1, Outcome::Error), None); // window [20, 30)
    let t = b.report(14, q, 1, Outcome::Error); // [10, 20), reported last
    assert_eq!(
        b.state(),
        State::Open,
        "2 errors > 1 over the live windows: trip missed"
    );
    assert_eq!(
        t.map(|t| (t.from, t.to)),
        Some((State::Closed, State::Open))
    );
}

/// Review D5: a report whose `now` is far ahead moves the statistics
/// ahead; until the callers' time catches up, reports at the real time
/// land in retired windows and cannot trip. This is no longer silent:
/// each such report is counted in `uncounted_reports`. Time catching up
/// restores tripping.
#[test]
fn a_report_far_ahead_is_never_silent() {
    for ahead in [3_600_000u64, 1_000_000_000_000] {
        let b = CircuitBreaker::<1>::new(
            Config::new(Strategy::ErrorCount { max_errors: 2 }, 10, 10).with_min_requests(1),
        );
        let p = b.try_acquire(ahead).unwrap();
        assert_eq!(b.report(ahead, p, 1, Outcome::Success), None);
        assert_eq!(b.uncounted_reports(), 0);
        for t in 20..30 {
            let p = b.try_acquire(t).unwrap();
            assert_eq!(b.report(t, p, 1, Outcome::Error), None);
        }
        assert_eq!(b.state(), State::Closed);
        assert_eq!(
            b.uncounted_reports(),
            10,
            "the 10 errors were dropped silently"
        );
        for t in ahead + 10..ahead + 13 {
            let p = b.try_acquire(t).unwrap();
            let _ = b.report(t, p, 1, Outcome::Error);
        }
        assert_eq!(b.state(), State::Open, "3 errors > 2 once time caught up");
    }
}

/// The probe timeout applies only once all `k` probes were granted: a
/// half-open breaker with probes left grants the next one however long it
/// waited (kills the mutation "the timeout also fires while granted < k").
#[test]
fn the_probe_timeout_waits_for_all_k_probes_granted() {
    let b = CircuitBreaker::<2>::new(error_count(0, 2).with_probe_timeout(30));
    let at = trip(&b, 0);
    let first = b.try_acquire(at).unwrap();
    let second = b.try_acquire(at + 1_000).expect("a probe left: granted");
    assert!(second.is_probe());
    let s = b.snapshot();
    assert_eq!(
        (s.state, s.probes_granted, s.time),
        (State::HalfOpen, 2, at + 1_000)
    );
    let _ = b.report(at + 1_001, first, 1, Outcome::Success);
    let t = b.report(at + 1_002, second, 1, Outcome::Success).unwrap();
    assert_eq!(t.to, State::Closed);
}

/// Review (minor): the closed period started at the closing probe's own
/// `now`; a probe reporting with an older `now` (a lagging clock) reached
/// back to the windows from before the trip, whose errors then re-tripped
/// the new period. It starts no earlier than the latest probe grant now.
#[test]
fn a_lagging_probe_report_never_reaches_back_before_the_half_open() {
    // Two windows of 50, open for 50: the shortest recovery allowed.
    let b = CircuitBreaker::<2>::new(
        Config::new(Strategy::ErrorCount { max_errors: 1 }, 100, 50).with_min_requests(1),
    );
    for t in [45, 49] {
        let p = b.try_acquire(t).unwrap();
        let _ = b.report(t, p, 1, Outcome::Error);
    }
    assert_eq!(b.snapshot().time, 99); // tripped at 49
    let probe = b.try_acquire(99).unwrap();
    let t = b.report(10, probe, 1, Outcome::Success).unwrap(); // a lagging clock
    assert_eq!((t.to, b.snapshot().time), (State::Closed, 99));
    assert_eq!(b.counts(99), (0, 0)); // window [0, 50) holds the old errors
    let p = b.try_acquire(99).unwrap();
    assert_eq!(b.report(99, p, 1, Outcome::Success), None);
}

// Regression tests from tracker issue 36: reports out of time order (a
// caller that read its clock, then stalled), each seen red before the fix.

/// Issue 36, reproducer 1: a stalled tripping report (an error at 60,
/// reported after one at 120) set the deadline from its own `now` (110,
/// already past): a probe at 120 closed the breaker in the window of the
/// error at 120, which then counted in the new closed period. The deadline
/// counts from the latest time the breaker has seen.
#[test]
fn a_stalled_tripping_report_opens_for_the_full_recovery_time() {
    let b = CircuitBreaker::<2>::new(
        Config::new(Strategy::ErrorCount { max_errors: 1 }, 100, 50).with_min_requests(1),
    );
    let (p, q) = (b.try_acquire(60).unwrap(), b.try_acquire(60).unwrap());
    assert_eq!(b.report(120, p, 1, Outcome::Error), None);
    let t = b
        .report(60, q, 1, Outcome::Error)
        .expect("2 errors > 1: trips");
    assert_eq!((t.from, t.to), (State::Closed, State::Open));
    assert_eq!(
        b.snapshot().time,
        170,
        "open from the latest time seen (120)"
    );
    assert!(b.try_acquire(120).is_none(), "opened with no recovery time");
    let probe = b.try_acquire(170).unwrap();
    assert_eq!(
        b.report(171, probe, 1, Outcome::Success).map(|t| t.to),
        Some(State::Closed)
    );
    assert_eq!(
        b.counts(171),
        (0, 0),
        "the error at 120 counts after the close"
    );
    let p = b.try_acquire(172).unwrap();
    assert_eq!(b.report(172, p, 1, Outcome::Error), None);
    assert_eq!((b.state(), b.counts(172)), (State::Closed, (1, 1)));
}

/// Issue 36, reproducer 2a: an error 3 windows behind the newest report
/// (`N` = 2) was added into a bucket no one reused and left out of every
/// trip check: neither counted nor in `uncounted_reports`.
#[test]
fn a_report_behind_the_live_windows_is_counted_as_uncounted() {
    let b = CircuitBreaker::<2>::new(
        Config::new(Strategy::ErrorCount { max_errors: 0 }, 20, 10).with_min_requests(1),
    );
    for t in [0, 50] {
        let p = b.try_acquire(t).unwrap();
        assert_eq!(b.report(t, p, 1, Outcome::Success), None);
    }
    let p = b.try_acquire(20).unwrap();
    assert_eq!(b.report(20, p, 1, Outcome::Error), None);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(
        b.uncounted_reports(),
        1,
        "the error at 20 vanished silently"
    );
    assert_eq!(b.counts(50), (1, 0));
}

/// Trips a breaker of two windows of 10 (open for 10) with an error at 0.
fn tripped_at_zero() -> CircuitBreaker<2> {
    let b = CircuitBreaker::<2>::new(
        Config::new(Strategy::ErrorCount { max_errors: 0 }, 20, 10).with_min_requests(1),
    );
    let p = b.try_acquire(0).unwrap();
    assert_eq!(
        b.report(0, p, 1, Outcome::Error).map(|t| t.to),
        Some(State::Open)
    );
    b
}

/// Issue 36, reproducer 2b: a probe granted at a far-future `now` and
/// reported at 60 closed the breaker from the grant's time; 20 errors at
/// 60 to 79 were then neither counted nor in `uncounted_reports`. The
/// closed period starts at the later of the closing report's `now` and the
/// open period's deadline (10): the errors count, the first trips, and the
/// breaker is open for the recovery timeout from 60, not from the grant.
#[test]
fn a_far_future_probe_grant_moves_neither_the_close_nor_the_next_trip() {
    let b = tripped_at_zero();
    let probe = b.try_acquire(3_600_000).unwrap();
    assert_eq!(
        b.report(60, probe, 1, Outcome::Success).map(|t| t.to),
        Some(State::Closed)
    );
    assert_eq!(b.snapshot().time, 60);
    let p = b.try_acquire(60).unwrap();
    assert_eq!(
        b.report(60, p, 1, Outcome::Error).map(|t| t.to),
        Some(State::Open)
    );
    assert_eq!((b.snapshot().time, b.uncounted_reports()), (70, 0));
}

/// Issue 36, reproducer 2c: the same with the far-future time on the
/// probe's report (the module docs' "one report far ahead").
#[test]
fn reports_before_a_far_future_close_are_counted_as_uncounted() {
    let b = tripped_at_zero();
    let probe = b.try_acquire(10).unwrap();
    assert_eq!(
        b.report(3_600_000, probe, 1, Outcome::Success)
            .map(|t| t.to),
        Some(State::Closed)
    );
    for t in 60..80 {
        let p = b.try_acquire(t).unwrap();
        assert_eq!(b.report(t, p, 1, Outcome::Error), None);
    }
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.uncounted_reports(), 20, "20 errors dropped silently");
}

/// Issue 36, reproducer 3: a bad probe reported with a lagging `now` (10,
/// granted at 99) reopened until 60, already past: the next caller got a
/// probe at once. The reopen counts from the latest time seen (the grant).
#[test]
fn a_lagging_bad_probe_reopens_for_the_full_recovery_time() {
    let b = CircuitBreaker::<2>::new(
        Config::new(Strategy::ErrorCount { max_errors: 1 }, 100, 50).with_min_requests(1),
    );
    for t in [45, 49] {
        let p = b.try_acquire(t).unwrap();
        let _ = b.report(t, p, 1, Outcome::Error);
    }
    assert_eq!(b.snapshot().time, 99); // tripped at 49
    let probe = b.try_acquire(99).unwrap();
    let t = b.report(10, probe, 1, Outcome::Error).unwrap(); // a lagging clock
    assert_eq!((t.from, t.to), (State::HalfOpen, State::Open));
    assert_eq!(b.snapshot().time, 149, "reopened from the grant at 99");
    assert!(
        b.try_acquire(99).is_none(),
        "reopened with no recovery time"
    );
}

/// Whether a report is too far behind is decided by window id, not by
/// distance: with one window of 10, a report at 9 after one at 10 is in
/// an older window (0 against 1), already retired.
#[test]
fn too_far_behind_is_decided_by_window_id() {
    let b = CircuitBreaker::<1>::new(
        Config::new(Strategy::ErrorCount { max_errors: 5 }, 10, 10).with_min_requests(1),
    );
    let (p, q) = (b.try_acquire(9).unwrap(), b.try_acquire(9).unwrap());
    let _ = b.report(10, p, 1, Outcome::Success);
    let _ = b.report(9, q, 1, Outcome::Error);
    assert_eq!((b.uncounted_reports(), b.counts(10)), (1, (1, 0)));
}

/// Issue 36: the parameters at `u64::MAX` mean "never" (`Config`'s docs):
/// no trip at `u64::MAX` errors, requests or RT threshold, open until a
/// `now` of `u64::MAX`, a lost probe taken as bad only at a `now` of
/// `u64::MAX`.
#[test]
fn u64_max_parameters_mean_never() {
    let never_trips = [
        Config::new(
            Strategy::ErrorCount {
                max_errors: u64::MAX,
            },
            10,
            10,
        )
        .with_min_requests(1),
        Config::new(Strategy::ErrorCount { max_errors: 0 }, 10, 10).with_min_requests(u64::MAX),
        // No request is slow: an RT is never above `u64::MAX`.
        Config::new(
            Strategy::SlowRequestRatio {
                max_rt: u64::MAX,
                max_ratio: Ratio::new(0, 1),
            },
            10,
            10,
        )
        .with_min_requests(1),
    ];
    for c in never_trips {
        let b = CircuitBreaker::<1>::new(c);
        for t in 0..100 {
            let p = b.try_acquire(t).unwrap();
            assert_eq!(b.report(t, p, u64::MAX, Outcome::Error), None);
        }
    }
    let cfg = Config::new(Strategy::ErrorCount { max_errors: 0 }, 10, u64::MAX)
        .with_min_requests(1)
        .with_probe_timeout(u64::MAX);
    let b = CircuitBreaker::<1>::new(cfg);
    let _ = b.report(5, b.try_acquire(5).unwrap(), 1, Outcome::Error);
    assert_eq!((b.state(), b.snapshot().time), (State::Open, u64::MAX));
    assert!(b.try_acquire(u64::MAX - 1).is_none());
    assert!(b.try_acquire(u64::MAX).unwrap().is_probe()); // the end of time
    let b = CircuitBreaker::<1>::new(Config {
        recovery_timeout: 10,
        ..cfg
    });
    let _ = b.report(5, b.try_acquire(5).unwrap(), 1, Outcome::Error);
    drop(b.try_acquire(15).unwrap()); // lost
    assert!(b.try_acquire(u64::MAX - 1).is_none());
    assert_eq!(b.state(), State::HalfOpen);
}

/// Issue 30: `new` at run time panics with the reason (in a `static`, the
/// same panic is a compile error: `CircuitBreaker::new`'s `compile_fail`
/// example).
#[test]
#[should_panic(
    expected = "invalid CircuitBreaker configuration: the statistics interval is not a whole number"
)]
fn new_panics_with_the_reason_at_run_time() {
    let c = Config::new(Strategy::ErrorCount { max_errors: 1 }, 1_000, 1_000);
    let _ = CircuitBreaker::<3>::new(c); // 1,000 ticks are not 3 windows
}

// Regression tests from the hostile review of issue 36's fix (F2): a
// closed period's start and the times that report into it.

/// Review F2: tripped at 0 (open until 10); at the real time 10 a caller
/// whose clock leads by 19 ticks takes the probe at 29 and reports it
/// good at 10. The closed period starts at the later of the closing
/// report's `now` and the open period's deadline (10), not at the leading
/// grant (29): the errors at the real time count, and the first trips.
#[test]
fn review_defect_a_leading_probe_grant_starts_the_closed_period_ahead_of_its_reports() {
    let b = tripped_at_zero();
    assert_eq!((b.state(), b.snapshot().time), (State::Open, 10));
    let probe = b.try_acquire(29).unwrap(); // a clock 19 ticks ahead
    let t = b.report(10, probe, 1, Outcome::Success).unwrap(); // real time 10
    assert_eq!(t.to, State::Closed);
    assert_eq!(b.snapshot().time, 10, "started at the leading grant");
    let p = b.try_acquire(10).unwrap();
    let t = b.report(10, p, 1, Outcome::Error);
    assert_eq!(
        (t.map(|t| t.to), b.uncounted_reports()),
        (Some(State::Open), 0),
        "an error at the real time is not counted"
    );
    // Open from the latest time seen by a report (10), not the grant.
    assert_eq!(b.snapshot().time, 20);
}

/// The deadline a closed period starts from is its own open period's, not
/// an earlier one's: closed from 10 after a first trip (open until 10), an
/// error at 15 trips again (open until 25), a bad probe reopens it (open
/// until 35), and the probe granted at 35 reports good with a clock lagging
/// by 16. Closed from 35: the window [10, 20) with the error from before
/// the trip is not read. From the first open period's deadline (10) or the
/// lagging `now` (19) it would be, and the next report would re-trip.
#[test]
fn a_closed_period_starts_at_its_own_open_periods_deadline() {
    let b = tripped_at_zero();
    let probe = b.try_acquire(10).unwrap();
    assert_eq!(
        b.report(10, probe, 1, Outcome::Success).map(|t| t.to),
        Some(State::Closed)
    );
    let p = b.try_acquire(15).unwrap();
    assert_eq!(
        b.report(15, p, 1, Outcome::Error).map(|t| t.to),
        Some(State::Open)
    );
    assert_eq!(b.snapshot().time, 25);
    // A reopen in between: a bad probe (open until 35), then the probe
    // that closes it, granted at 35 and reported with a lagging clock.
    let probe = b.try_acquire(25).unwrap();
    assert_eq!(
        b.report(25, probe, 1, Outcome::Error).map(|t| t.to),
        Some(State::Open)
    );
    assert_eq!(b.snapshot().time, 35);
    let probe = b.try_acquire(35).unwrap();
    assert_eq!(
        b.report(19, probe, 1, Outcome::Success).map(|t| t.to),
        Some(State::Closed)
    );
    assert_eq!(b.snapshot().time, 35);
    assert_eq!(b.counts(35), (0, 0));
    let p = b.try_acquire(35).unwrap();
    assert_eq!(b.report(35, p, 1, Outcome::Success), None);
    assert_eq!(b.state(), State::Closed);
}

/// Review F3a (documented in "Times" and GUARANTEES section 5): a time
/// 2^48 windows (+ 3 ticks) ahead is outside the range of window ids
/// (kept modulo 2^48): it aliases to window 0, so the errors at the real
/// time 20.. are counted and trip the breaker (not uncounted), and the
/// trip opens it until the far time plus the recovery timeout.
#[test]
fn a_time_beyond_the_window_range_aliases_and_opens_until_it() {
    let b = CircuitBreaker::<1>::new(
        Config::new(Strategy::ErrorCount { max_errors: 2 }, 10, 10).with_min_requests(1),
    );
    let glitch = (1u64 << 48) * 10 + 3;
    let _ = b.report(glitch, b.try_acquire(0).unwrap(), 1, Outcome::Success);
    let mut trip = None;
    for now in 20..23 {
        let p = b.try_acquire(now).unwrap();
        trip = b.report(now, p, 1, Outcome::Error);
    }
    assert_eq!(trip.map(|t| t.to), Some(State::Open));
    assert_eq!((b.uncounted_reports(), b.snapshot().time), (0, glitch + 10));
}

/// Review F3b (documented in "Times" and `Config::probe_timeout`): the
/// probe timeout counts from the latest grant's `now`. With two probes,
/// one granted at 10 and lost, the other granted with a clock at
/// `u64::MAX`, the breaker stays half-open and refuses until a `now` of
/// `u64::MAX`, which takes the lost probe as bad.
#[test]
fn a_far_ahead_probe_grant_postpones_the_probe_timeout_to_it() {
    let b = CircuitBreaker::<1>::new(
        Config::new(Strategy::ErrorCount { max_errors: 0 }, 10, 10)
            .with_min_requests(1)
            .with_probes(2)
            .with_probe_timeout(10),
    );
    let _ = b.report(0, b.try_acquire(0).unwrap(), 1, Outcome::Error);
    let first = b.try_acquire(10).unwrap();
    let second = b.try_acquire(u64::MAX).unwrap(); // a glitched clock
    drop(first); // lost
    assert_eq!(b.report(11, second, 1, Outcome::Success), None);
    assert!(b.try_acquire(1_000_000_000_000).is_none());
    assert!(b.try_acquire(u64::MAX - 1).is_none());
    assert_eq!(b.state(), State::HalfOpen);
    assert!(b.try_acquire(u64::MAX).is_none()); // reopens: open until u64::MAX
    assert_eq!((b.state(), b.snapshot().time), (State::Open, u64::MAX));
}

/// Two windows of 10, at most 0 errors from 1 request, open for 30, the
/// probe timeout 30, `k` probes.
fn two_windows_of_10(k: u16) -> CircuitBreaker<2> {
    CircuitBreaker::<2>::new(
        Config::new(Strategy::ErrorCount { max_errors: 0 }, 20, 30)
            .with_min_requests(1)
            .with_probes(k),
    )
}

/// A plain permit at `now` reporting an error at `now`: the transition it made.
fn error_at(b: &CircuitBreaker<2>, now: u64) -> Option<State> {
    let p = b.try_acquire(now).expect("closed: admitted");
    assert!(!p.is_probe());
    b.report(now, p, 1, Outcome::Error).map(|t| t.to)
}

/// Reopen -> half-open cycles, one of them ended by a lost probe's
/// timeout, each raising the side deadline; the close, with a clock that
/// lags every deadline, must start at the deadline of its own open period
/// (the last one), not an earlier one.
#[test]
fn a_close_after_reopen_cycles_and_a_lost_probe_starts_at_the_last_deadline() {
    let b = two_windows_of_10(1);
    assert_eq!(error_at(&b, 5), Some(State::Open));
    assert_eq!(b.snapshot().time, 35);
    // Cycle 1: half-open at 35 (deadline 35), the probe bad at 36.
    let p = b.try_acquire(35).unwrap();
    assert_eq!(
        b.report(36, p, 1, Outcome::Error).map(|t| t.to),
        Some(State::Open)
    );
    assert_eq!(b.snapshot().time, 66);
    // Cycle 2: half-open at 66 (deadline 66), the probe lost; the probe
    // timeout (30 from the grant) reopens at 96.
    let lost = b.try_acquire(66).unwrap();
    assert!(b.try_acquire(95).is_none());
    assert!(b.try_acquire(96).is_none());
    assert_eq!((b.state(), b.snapshot().time), (State::Open, 126));
    // Cycle 3: half-open at 126, the probe good with a clock at 50.
    let p = b.try_acquire(126).unwrap();
    assert_eq!(
        b.report(50, p, 1, Outcome::Success).map(|t| t.to),
        Some(State::Closed)
    );
    assert_eq!(b.snapshot().time, 126, "closed from an older deadline");
    // The lost probe, reported now, changes nothing.
    assert_eq!(b.report(127, lost, 1, Outcome::Error), None);
    assert_eq!(b.state(), State::Closed);
    // A report in a window before the start's is uncounted; one after trips,
    // open for 30 from it.
    assert_eq!(error_at(&b, 119), None);
    assert_eq!(b.uncounted_reports(), 1);
    assert_eq!(error_at(&b, 131), Some(State::Open));
    assert_eq!(b.snapshot().time, 161);
}

/// One far-future glitch, at `u64::MAX` itself, on the call that
/// half-opens the breaker. The side deadline is raised to the open word's
/// deadline, not to the caller's `now`, so the close starts on time and the
/// breaker trips and recovers as if there had been no glitch.
#[test]
fn a_half_open_at_u64_max_never_raises_the_side_deadline() {
    for glitch in [u64::MAX, u64::MAX - 1, 1 << 40] {
        let b = two_windows_of_10(1);
        assert_eq!(error_at(&b, 5), Some(State::Open));
        let p = b.try_acquire(glitch).unwrap();
        assert_eq!(
            b.report(40, p, 1, Outcome::Success).map(|t| t.to),
            Some(State::Closed)
        );
        assert_eq!(b.snapshot().time, 40, "glitch {glitch}");
        assert_eq!(error_at(&b, 41), Some(State::Open));
        assert_eq!(b.snapshot().time, 71, "glitch {glitch}");
        // The next close, lagging, starts at the new deadline (71), and the
        // breaker keeps working: the side deadline was never the glitch.
        let p = b.try_acquire(71).unwrap();
        assert_eq!(
            b.report(60, p, 1, Outcome::Success).map(|t| t.to),
            Some(State::Closed)
        );
        assert_eq!(b.snapshot().time, 71, "glitch {glitch}");
        assert_eq!(error_at(&b, 75), Some(State::Open));
        assert_eq!((b.snapshot().time, b.uncounted_reports()), (105, 0));
    }
}

/// A far-ahead time (within the 2^47-window range) that does raise
/// the side deadline: a stale report at F raises the latest time, a reopen
/// then opens until F + 30, and a second far-ahead call half-opens at F + 30.
/// The closed period starts at F + 30 and cannot trip until the real time
/// gets there (the module docs, "Times"). The raised
/// side deadline is then harmless: once real time passes it, later closes
/// start at their own `now`, and the breaker trips and recovers.
#[test]
fn a_far_ahead_side_deadline_lasts_only_until_real_time_passes_it() {
    const F: u64 = 1_000_000_000_000; // 10^11 windows of 10: within 2^47
    let b = two_windows_of_10(1);
    let stale = b.try_acquire(0).unwrap();
    assert_eq!(error_at(&b, 5), Some(State::Open));
    assert_eq!(b.report(F, stale, 1, Outcome::Success), None); // raises `latest`
    let p = b.try_acquire(35).unwrap();
    assert_eq!(
        b.report(36, p, 1, Outcome::Error).map(|t| t.to),
        Some(State::Open)
    );
    assert_eq!(b.snapshot().time, F + 30);
    let p = b.try_acquire(F + 30).unwrap(); // the second glitch: side deadline F + 30
    assert_eq!(
        b.report(40, p, 1, Outcome::Success).map(|t| t.to),
        Some(State::Closed)
    );
    assert_eq!(b.snapshot().time, F + 30);
    for t in 41..61 {
        assert_eq!(error_at(&b, t), None);
    }
    assert_eq!((b.state(), b.uncounted_reports()), (State::Closed, 20));
    // Real time reaches F + 30: the period counts and trips, for 30.
    assert_eq!(error_at(&b, F + 31), Some(State::Open));
    assert_eq!(b.snapshot().time, F + 61);
    // The next close with a lagging clock starts at its own deadline, not
    // at any older one, and the breaker trips again from on-time reports.
    let p = b.try_acquire(F + 61).unwrap();
    assert_eq!(
        b.report(F + 62, p, 1, Outcome::Success).map(|t| t.to),
        Some(State::Closed)
    );
    assert_eq!(b.snapshot().time, F + 62);
    assert_eq!(error_at(&b, F + 70), Some(State::Open));
    assert_eq!(b.uncounted_reports(), 20);
}

/// A closed period counts by window: a report of the new period before
/// the start (43) but in the start's window (4) counts, and here trips the
/// breaker; one in an earlier window (39, window 3) is uncounted.
#[test]
fn a_report_before_the_start_in_the_starts_window_counts() {
    let b = two_windows_of_10(1);
    assert_eq!(error_at(&b, 5), Some(State::Open)); // open until 35
    let p = b.try_acquire(35).unwrap();
    assert_eq!(
        b.report(43, p, 1, Outcome::Success).map(|t| t.to),
        Some(State::Closed)
    );
    assert_eq!(b.snapshot().time, 43);
    assert_eq!((error_at(&b, 39), b.uncounted_reports()), (None, 1));
    assert_eq!(
        (error_at(&b, 41), b.uncounted_reports()),
        (Some(State::Open), 1),
        "a report before the start, in its window, is not counted"
    );
    assert_eq!(b.snapshot().time, 73);
}

/// A refused `try_acquire` with a clock far ahead, while half-open with all
/// `k` probes granted, takes them for lost: the period ends and their good
/// reports change nothing. The reopen counts from when they became lost by
/// the breaker's own times (the latest grant, 36, plus the probe timeout),
/// not from the refused caller's `now`: open until 96, not until the far
/// time plus the recovery timeout (forever at `u64::MAX`).
#[test]
fn a_far_ahead_refused_acquire_reopens_from_the_probe_timeout_not_from_its_now() {
    for far in [1_000_000_000_000, u64::MAX - 1, u64::MAX] {
        let b = two_windows_of_10(2);
        assert_eq!(error_at(&b, 5), Some(State::Open)); // open until 35
        let (p, q) = (b.try_acquire(35).unwrap(), b.try_acquire(36).unwrap());
        assert!(b.try_acquire(far).is_none()); // all 2 granted: taken for lost
        assert_eq!(
            (b.state(), b.snapshot().time),
            (State::Open, 96),
            "far {far}"
        );
        assert_eq!(b.report(40, p, 1, Outcome::Success), None);
        assert_eq!(b.report(41, q, 1, Outcome::Success), None);
        assert!(b.try_acquire(95).is_none());
        assert!(b.try_acquire(96).unwrap().is_probe(), "far {far}");
    }
}

/// A report from an earlier period changes no state and no statistics, but
/// it raises the latest time the breaker has seen, which every later trip
/// and reopen counts from: a stale report at 100 makes a bad probe at 36
/// reopen until 130 (not 66); one at `u64::MAX - 1`, until a `now` of
/// `u64::MAX`.
#[test]
fn a_report_from_an_earlier_period_raises_the_time_later_deadlines_count_from() {
    for (stale_now, until) in [(100, 130), (u64::MAX - 1, u64::MAX)] {
        let b = two_windows_of_10(1);
        let stale = b.try_acquire(0).unwrap();
        assert_eq!(error_at(&b, 5), Some(State::Open)); // open until 35
        assert_eq!(b.report(stale_now, stale, 1, Outcome::Success), None);
        assert_eq!((b.state(), b.snapshot().time), (State::Open, 35));
        let p = b.try_acquire(35).unwrap();
        assert_eq!(
            b.report(36, p, 1, Outcome::Error).map(|t| t.to),
            Some(State::Open)
        );
        assert_eq!(b.snapshot().time, until, "stale report at {stale_now}");
    }
}

/// A report ahead of the real time delays the counting of the reports at
/// the real time only if it is at least `N` windows ahead: with `N = 2`
/// windows of 10, after a report at 15 (one window ahead of 5) an error at
/// 5 counts and trips; after one at 25 (two windows ahead) it is uncounted.
#[test]
fn a_report_fewer_than_n_windows_ahead_leaves_real_time_reports_counting() {
    let b = two_windows_of_10(1);
    let p = b.try_acquire(5).unwrap();
    assert_eq!(b.report(15, p, 1, Outcome::Success), None);
    assert_eq!(
        (error_at(&b, 5), b.uncounted_reports()),
        (Some(State::Open), 0)
    );
    let b = two_windows_of_10(1);
    let p = b.try_acquire(5).unwrap();
    assert_eq!(b.report(25, p, 1, Outcome::Success), None);
    assert_eq!((error_at(&b, 5), b.uncounted_reports()), (None, 1));
}
