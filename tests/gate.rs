//! The gate: Sentinel's DefaultController scenarios, a property test against
//! the brute-force gate model shared with the fuzz target, and real threads
//! racing for the last permits.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use leaparray::gate::{Decision, Gate};
use leaparray::{Event, Limiter};
use proptest::prelude::*;

// The models shared with fuzz/ (its `gate` target), under the module names
// they refer to each other by.
#[allow(dead_code)]
#[path = "common/array_model.rs"]
mod array;
#[allow(dead_code)]
#[path = "common/gate_model.rs"]
mod gate_model;
#[allow(dead_code)]
#[path = "common/metric_model.rs"]
mod metric;
use gate_model::GateModel;
use metric::{check, MetricModel};

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

#[test]
fn admits_up_to_the_limit_per_sliding_interval() {
    let g = Gate::<2>::new(nz(500), 100);
    assert_eq!(g.try_acquire(0, 20), Decision::Pass);
    assert_eq!(g.try_acquire(600, 80), Decision::Pass);
    assert_eq!(g.try_acquire(700, 1), Decision::Block);
    // At 1000 the first window slides out: 20 free.
    assert_eq!(g.try_acquire(1_000, 21), Decision::Block);
    assert_eq!(g.try_acquire(1_000, 20), Decision::Pass);
    assert_eq!(g.metric().pass(1_000), 100);
    assert_eq!(
        g.metric().block(1_000),
        22,
        "1 at 700 and 21 at 1000, both live"
    );
    assert_eq!(g.metric().block(700), 1);
}

#[test]
fn all_or_nothing_and_edge_sizes() {
    let g = Gate::<2>::new(nz(500), 10);
    assert_eq!(
        g.try_acquire(0, 0),
        Decision::Pass,
        "nothing asked, nothing booked"
    );
    assert_eq!(g.metric().pass(0), 0);
    assert_eq!(
        g.try_acquire(0, 11),
        Decision::Block,
        "more than the limit never passes"
    );
    assert_eq!(g.try_acquire(0, u64::MAX), Decision::Block);
    assert_eq!(g.try_acquire(0, 10), Decision::Pass);
    assert_eq!(g.try_acquire(0, 1), Decision::Block);
    assert_eq!(
        g.metric().pass(0),
        10,
        "a refused request leaves no pass behind"
    );
    let zero = Gate::<2>::new(nz(500), 0);
    assert_eq!(zero.try_acquire(0, 1), Decision::Block);
    assert_eq!(zero.try_acquire_prioritized(0, 1), Decision::Block);
}

#[test]
fn stale_clock_is_refused() {
    let g = Gate::<2>::new(nz(500), 10);
    assert_eq!(g.try_acquire(5_000, 1), Decision::Pass);
    assert_eq!(
        g.try_acquire(4_000, 1),
        Decision::Block,
        "window 8's bucket holds window 10"
    );
    assert_eq!(g.metric().pass(5_000), 1);
}

#[test]
fn prioritized_borrows_the_next_window() {
    let g = Gate::<2>::new(nz(500), 10);
    assert_eq!(g.try_acquire(100, 7), Decision::Pass);
    assert_eq!(g.try_acquire(600, 3), Decision::Pass);
    // Full. A plain request is refused; a prioritized one waits for 1000,
    // when the 7 of [0, 500) slide out.
    assert_eq!(g.try_acquire(700, 5), Decision::Block);
    assert_eq!(g.try_acquire_prioritized(700, 5), Decision::Wait(300));
    assert_eq!(g.metric().waiting(700), 5);
    assert_eq!(g.metric().occupied_pass(700), 5);
    // Only 2 more fit in the future interval [500, 1500): 3 + 5 + 2.
    assert_eq!(g.try_acquire_prioritized(700, 3), Decision::Block);
    assert_eq!(g.try_acquire_prioritized(700, 2), Decision::Wait(300));
    // When the borrowed window starts, its passes are there, and the
    // interval is exactly full.
    assert_eq!(g.metric().pass(1_000), 10);
    assert_eq!(g.try_acquire(1_000, 1), Decision::Block);
    // Plain requests also respect what was borrowed for the future.
    let g = Gate::<2>::new(nz(500), 10);
    assert_eq!(g.try_acquire(600, 10), Decision::Pass);
    assert_eq!(
        g.try_acquire_prioritized(700, 4),
        Decision::Block,
        "no window frees room in time"
    );
}

#[test]
fn occupy_timeout_bounds_the_wait() {
    let g = Gate::<2>::new(nz(500), 10).with_occupy_timeout(200);
    assert_eq!(g.try_acquire(100, 7), Decision::Pass);
    assert_eq!(g.try_acquire(600, 3), Decision::Pass);
    assert_eq!(
        g.try_acquire_prioritized(700, 5),
        Decision::Block,
        "300 ticks >= 200"
    );
    assert_eq!(g.try_acquire_prioritized(850, 5), Decision::Wait(150));
    let never = Gate::<2>::new(nz(500), 10).with_occupy_timeout(0);
    assert_eq!(never.try_acquire(0, 10), Decision::Pass);
    assert_eq!(never.try_acquire_prioritized(400, 1), Decision::Block);
}

#[test]
fn limiter_trait() {
    let g = Gate::<4>::new(nz(250), 5);
    let l: &dyn Limiter = &g;
    assert_eq!(l.try_acquire(0, 3), Decision::Pass);
    l.record(0, 1).unwrap();
    assert_eq!((l.count(0), l.limit(), l.remaining(0)), (4, 5, 1));
    fn via_reference(l: impl Limiter) -> Decision {
        l.try_acquire(0, 2)
    }
    assert_eq!(via_reference(&g), Decision::Block);
    assert!(format!("{g:?}").contains("limit: 5"));
}

/// 4 threads hammer one gate at one `now`: at most `limit` pass in total,
/// and false rejections stay rare.
#[test]
fn threads_at_one_now_never_exceed_the_limit() {
    // Miri interprets every step: a smaller limit, still overrun by the
    // tries (4 x 60 x 2 on average > 200).
    const LIMIT: u64 = if cfg!(miri) { 200 } else { 1_000 };
    const THREADS: u64 = 4;
    let rounds = if cfg!(miri) { 2 } else { 50 };
    for round in 0..rounds {
        let g = Arc::new(Gate::<2>::new(nz(500), LIMIT));
        let start = Arc::new(Barrier::new(THREADS as usize));
        let passed = Arc::new(AtomicU64::new(0));
        let tries = if cfg!(miri) { 60 } else { 1_000 };
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let (g, start, passed) = (g.clone(), start.clone(), passed.clone());
                std::thread::spawn(move || {
                    start.wait();
                    for i in 0..tries {
                        let n = 1 + (i + t) % 3;
                        if g.try_acquire(123, n) == Decision::Pass {
                            passed.fetch_add(n, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        let passed = passed.load(Ordering::Relaxed);
        assert!(passed <= LIMIT, "round {round}: {passed} passed");
        assert_eq!(
            g.metric().pass(123),
            passed,
            "the pass count is exactly what passed"
        );
        if !cfg!(miri) {
            assert!(
                passed >= LIMIT - 2 * 3 * THREADS,
                "round {round}: only {passed} passed"
            );
        }
    }
}

// ---- property test: one thread, against the gate model shared with fuzz/

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { 256 },
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]

    /// Plain and prioritized requests against the model (`tests/common/
    /// gate_model.rs`, which the `gate` fuzz target uses too): every
    /// decision and every metric query matches, and no interval containing
    /// the window of `now` ever holds more than the limit.
    #[test]
    fn gate_matches_the_model(
        window in 1u64..200,
        limit in 0u64..30,
        steps in prop::collection::vec((-150i64..400, 0u64..8, any::<bool>()), 1..150),
    ) {
        let g = Gate::<3>::new(nz(window), limit);
        let mut m = GateModel::<3> {
            metric: MetricModel::new(window),
            limit,
            timeout: g.occupy_timeout(),
        };
        let mut now = 10_000u64;
        for (dt, k, prioritized) in steps {
            now = now.saturating_add_signed(dt);
            let (got, want) = if prioritized {
                (g.try_acquire_prioritized(now, k), m.try_acquire_prioritized(now, k))
            } else {
                (g.try_acquire(now, k), m.try_acquire(now, k))
            };
            prop_assert_eq!(got, want, "at {} for {} (prioritized {})", now, k, prioritized);
            let peak = m.peak(now / window);
            prop_assert!(peak.is_none_or(|p| p <= limit), "peak {:?} > {}", peak, limit);
            check(g.metric(), &m.metric, now, now, [k, limit, m.timeout, 1_000]);
        }
    }
}

#[test]
fn gate_records_blocks_and_passes() {
    let g = Gate::<2>::new(nz(500), 3);
    let passed = (0..5).filter(|_| g.try_acquire(10, 1) == Decision::Pass);
    assert_eq!(passed.count(), 3);
    assert_eq!(g.metric().total(10, Event::Pass), 3);
    assert_eq!(g.metric().total(10, Event::Block), 2);
}

/// Found by `fuzz/` (target `gate`): with a limit above `MAX_COUNT`, a
/// booking could saturate, the request was refused, and the partial booking
/// stayed. Such limits now act as `MAX_COUNT`.
#[test]
fn limit_above_max_count_acts_as_max_count() {
    use leaparray::MAX_COUNT;
    let g = Gate::<3>::new(nz(63), u64::MAX);
    assert_eq!(g.limit(), MAX_COUNT);
    assert_eq!(g.try_acquire(0, MAX_COUNT - 1), Decision::Pass);
    assert_eq!(g.try_acquire(0, u64::MAX), Decision::Block);
    assert_eq!(g.try_acquire(0, 2), Decision::Block);
    assert_eq!(
        g.metric().pass(0),
        MAX_COUNT - 1,
        "a refusal leaves no pass"
    );
    assert_eq!(g.try_acquire(0, 1), Decision::Pass);
    assert_eq!(g.metric().pass(0), MAX_COUNT);
}

/// A clock that goes back within its window books there. Back into an
/// earlier window it is refused once a newer window has retired one of the
/// windows of an interval containing it: that interval can no longer be
/// checked (documented in `src/gate.rs`; the proptest and fuzz models
/// agree).
#[test]
fn clock_backwards_books_only_where_every_interval_is_readable() {
    let g = Gate::<3>::new(nz(100), 10);
    assert_eq!(g.try_acquire(1_050, 4), Decision::Pass); // window 10
    assert_eq!(g.try_acquire(1_010, 2), Decision::Pass, "same window");
    // Window 9's interval (7, 8, 9) includes window 7, whose bucket now
    // holds window 10.
    assert_eq!(g.try_acquire(990, 1), Decision::Block);
    assert_eq!(g.metric().pass(1_050), 6);
    assert_eq!(g.metric().window_pass(990), 0);
    // Before window 10 existed, the same late call would have passed.
    let fresh = Gate::<3>::new(nz(100), 10);
    assert_eq!(fresh.try_acquire(990, 1), Decision::Pass);
}

/// `remaining` counts every interval the next admission must fit in, not
/// only the one ending at `now`: with a caller whose clock is ahead, the
/// interval ending at its window is already full.
#[test]
fn remaining_is_what_the_next_admissions_get() {
    let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 10);
    assert_eq!(g.try_acquire(600, 10), Decision::Pass); // a caller ahead
    let r = g.remaining(400);
    let admitted = (0..10).filter(|_| g.try_acquire(400, 1) == Decision::Pass);
    assert_eq!(r, admitted.count() as u64);
    assert_eq!(g.remaining(1_100), 0, "(500, 1000] still holds the 10");
    assert_eq!(g.remaining(1_600), 10);
}
