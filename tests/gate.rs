//! The gate: Sentinel's DefaultController scenarios in every shape, late
//! callers, retry-after, ids modulo 2^T, a property test against the
//! brute-force model shared with the fuzz target, and real threads racing
//! for the last permits with clocks that agree and clocks that do not.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use leaparray::gate::{PriorityDecision, Shape};
use leaparray::stats::{Event, Metric};
use leaparray::{Decision, Gate};
use proptest::prelude::*;

// The model shared with fuzz/ (its `gate` target).
#[allow(dead_code)]
#[path = "common/gate_model.rs"]
mod gate_model;
use gate_model::GateModel;

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

/// One gate of each shape with 2 windows of 500 and `limit`.
fn three_shapes(limit: u64) -> [(Gate<2>, &'static str); 3] {
    let word64 = Gate::<2>::new(nz(500), limit);
    assert!(matches!(word64.shape(), Shape::Word64 { .. }));
    let word128 = Gate::<2>::new(nz(500), limit).in_wide_word().unwrap();
    assert!(matches!(word128.shape(), Shape::Word128 { .. }));
    let buckets = Gate::<2>::new(nz(500), limit).in_buckets();
    assert_eq!(buckets.shape(), Shape::Buckets);
    [
        (word64, "word64"),
        (word128, "word128"),
        (buckets, "buckets"),
    ]
}

#[test]
fn admits_up_to_the_limit_per_sliding_interval() {
    for (g, shape) in three_shapes(100) {
        assert_eq!(g.try_acquire(1_000, 20), Decision::Pass, "{shape}");
        assert_eq!(g.try_acquire(1_600, 80), Decision::Pass, "{shape}");
        assert_eq!(g.try_acquire(1_700, 1), Decision::Block, "{shape}");
        // At 2000 the window [1000, 1500) slides out: 20 free.
        assert_eq!(g.try_acquire(2_000, 21), Decision::Block, "{shape}");
        assert_eq!(g.try_acquire(2_000, 20), Decision::Pass, "{shape}");
        assert_eq!(g.count(2_000), 100, "{shape}");
        assert_eq!(g.try_acquire(2_000, 1), Decision::Block, "{shape}");
    }
}

#[test]
fn shapes_follow_the_documented_table() {
    let s = |n: u64, t: u64| Gate::<2>::new(nz(500), n).with_occupy_timeout(t).shape();
    // 64 bits: 1 used bit, at least 32 id bits, (N + F) * b slot bits.
    assert_eq!(s(1_023, 500), Shape::Word64 { id_bits: 33 });
    assert_eq!(s(1_024, 500), Shape::Word128 { id_bits: 34 });
    assert_eq!(s(32_767, 0), Shape::Word64 { id_bits: 33 });
    assert_eq!(s(32_768, 0), Shape::Word128 { id_bits: 33 });
    assert_eq!(s((1 << 31) - 1, 500), Shape::Word128 { id_bits: 34 });
    assert_eq!(s(1 << 31, 500), Shape::Buckets);
    let ten = |n: u64| Gate::<10>::new(nz(100), n).shape();
    assert!(matches!(ten(3), Shape::Word64 { .. }));
    assert!(matches!(ten(4), Shape::Word128 { .. }));
    assert!(matches!(ten(255), Shape::Word128 { .. }));
    assert_eq!(ten(256), Shape::Buckets);
}

#[test]
fn all_or_nothing_and_edge_sizes() {
    for limit in [10, 1 << 20, 1 << 40] {
        let g = Gate::<2>::new(nz(500), limit);
        assert_eq!(g.try_acquire(0, 0), Decision::Pass, "nothing asked");
        assert_eq!(g.count(0), 0, "nothing booked");
        assert_eq!(g.try_acquire(0, limit + 1), Decision::Block);
        assert_eq!(g.try_acquire(0, u64::MAX), Decision::Block);
        assert_eq!(
            g.try_acquire_prioritized(0, limit + 1),
            PriorityDecision::Block
        );
        assert_eq!(
            g.try_acquire_prioritized(0, u64::MAX),
            PriorityDecision::Block
        );
        assert_eq!(g.try_acquire(0, 1), Decision::Pass);
        assert_eq!(
            g.try_acquire(0, u64::MAX),
            Decision::Block,
            "not 1 + MAX wrapped"
        );
        assert_eq!(
            g.try_acquire_prioritized(0, u64::MAX),
            PriorityDecision::Block
        );
        // Sizes the one-word fast path takes (below 2^63) and the rest.
        for n in [limit + 1, 1 << 62, (1 << 63) - 1, 1 << 63, u64::MAX - limit] {
            assert_eq!(g.try_acquire(0, n), Decision::Block, "{n}");
            assert_eq!(
                g.try_acquire_prioritized(0, n),
                PriorityDecision::Block,
                "{n}"
            );
        }
        assert_eq!(g.try_acquire(0, limit - 1), Decision::Pass);
        assert_eq!(g.try_acquire(0, 1), Decision::Block);
        assert_eq!(g.count(0), limit, "a refused request leaves nothing");
    }
    let zero = Gate::<2>::new(nz(500), 0);
    assert_eq!(zero.try_acquire(0, 1), Decision::Block);
    assert_eq!(zero.try_acquire_prioritized(0, 1), PriorityDecision::Block);
    assert_eq!(zero.retry_after(0, 1), None);
}

/// A caller whose clock is one tick, or half a window, behind the newest
/// window is served at low load, in every shape: it books into the newest
/// window.
#[test]
fn late_callers_at_low_load_pass() {
    for (g, shape) in three_shapes(1_000) {
        assert_eq!(g.try_acquire(2_000, 1), Decision::Pass, "{shape}");
        assert_eq!(
            g.try_acquire(1_999, 1),
            Decision::Pass,
            "{shape}: one tick behind"
        );
        assert_eq!(
            g.try_acquire(1_750, 1),
            Decision::Pass,
            "{shape}: half a window"
        );
        assert_eq!(
            g.try_acquire(1_000, 1),
            Decision::Pass,
            "{shape}: two windows"
        );
        // Counted in window [2000, 2500): all four still count at 2999,
        // none at 3000 + 500.
        assert_eq!(g.count(2_999), 4, "{shape}");
        assert_eq!(g.count(3_500), 0, "{shape}");
    }
}

/// Late callers at a full interval are refused, in every shape: the newest
/// window's intervals have no room.
#[test]
fn late_callers_at_a_full_interval_block() {
    for (g, shape) in three_shapes(10) {
        assert_eq!(g.try_acquire(1_700, 4), Decision::Pass, "{shape}");
        assert_eq!(g.try_acquire(2_000, 6), Decision::Pass, "{shape}");
        for now in [1_999, 1_750, 1_200, 0] {
            assert_eq!(g.try_acquire(now, 1), Decision::Block, "{shape} at {now}");
        }
        assert_eq!(g.count(2_000), 10, "{shape}");
    }
}

#[test]
fn prioritized_borrows_the_next_window() {
    for (g, shape) in three_shapes(10) {
        assert_eq!(g.try_acquire(1_100, 7), Decision::Pass);
        assert_eq!(g.try_acquire(1_600, 3), Decision::Pass);
        // Full. A plain request is refused; a prioritized one waits for
        // 2000, when the 7 of [1000, 1500) slide out.
        assert_eq!(g.try_acquire(1_700, 5), Decision::Block, "{shape}");
        assert_eq!(
            g.try_acquire_prioritized(1_700, 5),
            PriorityDecision::Wait(300),
            "{shape}"
        );
        // Only 2 more fit in the future interval [1500, 2500): 3 + 5 + 2.
        assert_eq!(
            g.try_acquire_prioritized(1_700, 3),
            PriorityDecision::Block,
            "{shape}"
        );
        assert_eq!(
            g.try_acquire_prioritized(1_700, 2),
            PriorityDecision::Wait(300),
            "{shape}"
        );
        // When the borrowed window starts, its passes are there, and the
        // interval is exactly full.
        assert_eq!(g.count(2_000), 10, "{shape}");
        assert_eq!(g.try_acquire(2_000, 1), Decision::Block, "{shape}");
    }
    // Plain requests also respect what was borrowed for the future.
    let g = Gate::<2>::new(nz(500), 10);
    assert_eq!(g.try_acquire(600, 10), Decision::Pass);
    assert_eq!(
        g.try_acquire_prioritized(700, 4),
        PriorityDecision::Block,
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
        PriorityDecision::Block,
        "300 ticks >= 200"
    );
    assert_eq!(
        g.try_acquire_prioritized(850, 5),
        PriorityDecision::Wait(150)
    );
    let never = Gate::<2>::new(nz(500), 10).with_occupy_timeout(0);
    assert_eq!(never.try_acquire(0, 10), Decision::Pass);
    assert_eq!(
        never.try_acquire_prioritized(400, 1),
        PriorityDecision::Block
    );
}

/// Sentinel's statistics, recorded by the caller's metric.
#[test]
fn metered_decisions_record_sentinels_statistics() {
    let g = Gate::<2>::new(nz(500), 10);
    let m = Metric::<2>::new(nz(500));
    assert_eq!(g.try_acquire_metered(&m, 100, 7), Decision::Pass);
    assert_eq!(g.try_acquire_metered(&m, 600, 3), Decision::Pass);
    assert_eq!(g.try_acquire_metered(&m, 700, 5), Decision::Block);
    assert_eq!(
        g.try_acquire_prioritized_metered(&m, 700, 5),
        PriorityDecision::Wait(300)
    );
    assert_eq!(m.total(700, Event::Pass), 10);
    assert_eq!(m.block(700), 5);
    assert_eq!((m.occupied_pass(700), m.waiting(700)), (5, 5));
    assert_eq!(
        m.pass(1_000),
        3 + 5,
        "the borrowed 5 count when [1000, 1500) starts"
    );
}

#[test]
fn record_count_and_remaining() {
    let g = Gate::<4>::new(nz(250), 5);
    let l = &g;
    assert_eq!(l.try_acquire(0, 3), Decision::Pass);
    l.record(0, 1).unwrap();
    assert_eq!((l.count(0), l.limit(), l.remaining(0)), (4, 5, 1));
    assert_eq!(l.try_acquire(0, 2), Decision::Block);
    assert!(format!("{g:?}").contains("limit: 5"));
    // A word's slot holds at most 2^b - 1 (5 slots of 6 bits: 63), and so
    // does the interval total it keeps: record saturates there, in the
    // next window too while the 63 are in its interval.
    assert_eq!(l.record(0, 100), Err(leaparray::AddError::Saturated));
    assert_eq!(l.count(0), 63);
    assert_eq!(l.record(250, 1), Err(leaparray::AddError::Saturated));
    assert_eq!(l.count(250), 63);
    assert_eq!(l.record(1_000, 7), Ok(()), "window 0 slid out");
    assert_eq!(l.count(1_000), 7);
}

/// `retry_after` is exact: waiting that long (and no longer) gets the
/// permits, if nothing else arrives.
#[test]
fn retry_after_is_the_exact_wait() {
    for (g, shape) in three_shapes(10) {
        assert_eq!(g.try_acquire(1_100, 6), Decision::Pass);
        assert_eq!(g.try_acquire(1_700, 4), Decision::Pass);
        for (n, want) in [(1, 200), (6, 200), (7, 700), (10, 700)] {
            assert_eq!(g.retry_after(1_800, n), Some(want), "{shape}: {n}");
            let at = 1_800 + want;
            assert!(g.remaining(at - 1) < n, "{shape}: {n} one tick early");
            assert!(g.remaining(at) >= n, "{shape}: {n} on time");
        }
        assert_eq!(g.retry_after(1_800, 0), Some(0));
        assert_eq!(g.retry_after(1_800, g.limit() + 1), None);
        assert_eq!(g.try_acquire(2_000, 6), Decision::Pass, "{shape}");
    }
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
    assert_eq!(g.peek(1_100), 10);
}

/// Ids are kept modulo 2^T: a caller 2^T windows (or 2^T - 1) after a full
/// window reads as the same (or as one window late) and is refused: an
/// alias is stricter, never looser. A far-future time that does not alias
/// resets the word.
#[test]
fn an_aliased_time_is_stricter_and_a_far_future_one_resets() {
    let g = Gate::<2>::new(nz(1), 1_023);
    let Shape::Word64 { id_bits } = g.shape() else {
        panic!("{:?}", g.shape())
    };
    assert_eq!(id_bits, 33);
    let lap = 1u64 << id_bits;
    assert_eq!(g.try_acquire(5, 1_023), Decision::Pass);
    for now in [5 + lap, 5 + lap - 1, 5 + 2 * lap, 4 + lap] {
        assert_eq!(g.try_acquire(now, 1), Decision::Block, "at {now}");
    }
    // 2 windows on from an alias: the full window slid out.
    assert_eq!(g.try_acquire(5 + lap + 2, 1_023), Decision::Pass);
    // Far ahead, without alias: a reset.
    let g = Gate::<2>::new(nz(1), 1_023);
    assert_eq!(g.try_acquire(5, 1_023), Decision::Pass);
    assert_eq!(g.try_acquire(5 + lap / 2 - 1, 1_023), Decision::Pass);
    // And the old time is now late, booked into the new window: refused.
    assert_eq!(g.try_acquire(5, 1), Decision::Block);
}

/// A new gate takes any time, however large: an empty word adopts the
/// caller's window whatever its id modulo 2^T (times since the Unix epoch
/// in ms with 1 ms windows are about 2^40 windows: half of them would
/// otherwise read as "late" against the empty word's id 0).
#[test]
fn a_new_gate_takes_any_time() {
    for t0 in [3u64 << 32, 1_763_900_000_000, u64::MAX - 10] {
        let g = Gate::<2>::new(nz(1), 1_023);
        assert_eq!(g.try_acquire(t0, 1_023), Decision::Pass, "at {t0}");
        assert_eq!(g.try_acquire(t0, 1), Decision::Block, "at {t0}");
        assert_eq!(g.retry_after(t0, 1), Some(2), "at {t0}");
        assert_eq!(g.try_acquire(t0 + 2, 1_023), Decision::Pass, "at {t0} + 2");
    }
}

/// Found in review: `Gate::record(now, 0)` slid the word to an empty
/// one at a later id, and a late caller then took the "empty word: any id
/// will do" rule and booked into its own window, whose interval still held
/// a window that had slid out of the word: 6 permits over 4 windows at a
/// limit of 2 per 2. Only a never-used word now takes any id.
#[test]
fn a_used_word_emptied_by_a_slide_still_books_late_callers_into_the_newest_window() {
    let g = Gate::<2>::new(nz(10), 2);
    assert_eq!(g.try_acquire(0, 2), Decision::Pass); // window 0 holds 2
    g.record(20, 0).unwrap(); // slides the word to window 2, empty
    let late = g.try_acquire(10, 2); // window 1: booked into window 2
    let next = g.try_acquire(30, 2); // window 3: (2, 3] would hold 4
    assert!(
        !(late == Decision::Pass && next == Decision::Pass),
        "{late:?} {next:?}: 6 permits in windows 0 ..= 3 at 2 per 2 windows"
    );
    assert_eq!((late, next), (Decision::Pass, Decision::Block));
}

/// Found in review: in the last window of time, `borrow` saturated the
/// start of the next window (which never comes) and answered `Wait(0)`;
/// `retry_after` promised a wait after which the request was still
/// refused. Now: no borrow, `Block`, and `retry_after` is `None` (never).
#[test]
fn the_last_window_of_time_borrows_nothing_and_never_retries() {
    for (g, shape) in three_shapes(2) {
        let w = g.window();
        let last = u64::MAX / w * w;
        assert_eq!(g.try_acquire(last - w, 2), Decision::Pass, "{shape}");
        let d = g.try_acquire_prioritized(u64::MAX, 1);
        assert_eq!(d, PriorityDecision::Block, "{shape}: {d:?}");
        // Room comes back only in the window after `last`, which never starts.
        assert_eq!(g.try_acquire(last, 1), Decision::Block, "{shape}");
        assert_eq!(g.retry_after(u64::MAX - 3, 1), None, "{shape}");
    }
    for (g, shape) in [
        (Gate::<2>::new(nz(1), 2), "word64"),
        (Gate::<2>::new(nz(1), 2).in_buckets(), "buckets"),
    ] {
        assert_eq!(g.try_acquire(u64::MAX - 1, 2), Decision::Pass, "{shape}");
        let d = g.try_acquire_prioritized(u64::MAX, 1);
        assert_eq!(d, PriorityDecision::Block, "{shape}: {d:?}");
        assert_eq!(g.retry_after(u64::MAX, 1), None, "{shape}");
    }
}

/// Found in review: the bucket shape's `retry_after` added window ids
/// unchecked: at the last window of time, and with a stamp read modulo
/// 2^48 as the window before 0, it panicked (debug builds).
/// The gate remembers a window some caller booked into, to find a
/// caller's window with a multiply instead of a division. The last window
/// of time ends after `u64::MAX`: were it remembered, `now - h * window`
/// would wrap and put times at the start of the clock in it.
#[test]
fn the_window_cut_off_by_u64_max_is_never_taken_for_another() {
    // u64::MAX is a multiple of 3: the last window starts at u64::MAX.
    let g = Gate::<2>::new(nz(3), 1);
    assert!(matches!(g.shape(), Shape::Word64 { .. }));
    assert_eq!(g.try_acquire(u64::MAX, 1), Decision::Pass);
    // Window 0 is read as 2^33 - (u64::MAX / 3 mod 2^33) < 2^32 windows
    // ahead of the newest: the word slides and the permit passes.
    assert_eq!(g.try_acquire(0, 1), Decision::Pass);
    assert_eq!(g.try_acquire(1, 1), Decision::Block);
}

/// `try_acquire` tests the word's window against the start of a window
/// it remembers, modulo `2^(T + k)` for a window of `2^k` times an odd
/// number of ticks. Modulo `2^T` alone the test would take a word whose
/// newest window agrees with the caller's only modulo `2^(T - k)` for the
/// caller's: here, with `k = 20`, a word moved `2^33 - 2^13` windows on
/// (by `record`, which leaves the remembered window alone) reads the
/// caller as `2^13` windows ahead, so the word slides and the permit
/// passes, as the general decision has it.
#[test]
fn the_remembered_window_is_checked_against_the_word_modulo_its_factor_of_two() {
    let w = 1u64 << 20;
    let g = Gate::<2>::new(nz(w), 1);
    assert_eq!(g.shape(), Shape::Word64 { id_bits: 33 });
    // Window 1, remembered.
    assert_eq!(g.try_acquire(w, 1), Decision::Pass);
    // Two moves of at most 2^32 windows each, both read as ahead.
    g.record(w * (1 + (1 << 32) - 1), 1).unwrap();
    g.record(w * (1 + (1 << 33) - (1 << 13)), 1).unwrap();
    assert_eq!(g.try_acquire(w + 5, 1), Decision::Pass);
    assert_eq!(g.try_acquire(w + 5, 1), Decision::Block);
}

#[test]
fn bucket_retry_after_never_overflows() {
    let g = Gate::<2>::new(nz(1), 1).in_buckets();
    assert_eq!(g.try_acquire(u64::MAX, 1), Decision::Pass);
    assert_eq!(g.retry_after(u64::MAX, 1), None);
    let g = Gate::<1>::new(nz(1), 1).in_buckets();
    assert_eq!(g.try_acquire((1 << 48) - 1, 1), Decision::Pass);
    let _ = g.retry_after(0, 1);
}

/// 4 threads hammer one gate at one `now`: exactly `limit` pass in total
/// (a word-shaped gate never refuses falsely), and the gate's count is
/// exactly what passed. Rounds alternate the 64- and 128-bit words.
#[test]
fn threads_at_one_now_get_exactly_the_limit() {
    // Miri interprets every step: a smaller limit, still overrun by the
    // tries (4 x 25 x 2 on average > 60).
    const LIMIT: u64 = if cfg!(miri) { 60 } else { 1_000 };
    const THREADS: u64 = 4;
    let rounds = if cfg!(miri) { 2 } else { 50 };
    for (round, wide) in (0..rounds).map(|r| (r, r % 2 == 1)) {
        let g = Gate::<2>::new(nz(500), LIMIT);
        let g = Arc::new(if wide { g.in_wide_word().unwrap() } else { g });
        let start = Arc::new(Barrier::new(THREADS as usize));
        let passed = Arc::new(AtomicU64::new(0));
        let tries = if cfg!(miri) { 25 } else { 1_000 };
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
        assert_eq!(passed, LIMIT, "round {round} ({:?})", g.shape());
        assert_eq!(g.count(123), passed, "round {round}");
    }
}

/// Threads whose clocks disagree (up to a window and a half behind a
/// shared clock, or half a window ahead) on gates of every shape. Each
/// permit counts in a window between its caller's own and the newest
/// window any caller had reached when it returned, so for every interval
/// `[a, a + N)`, the permits whose caller's window is `>= a` and whose
/// return saw callers no further than `a + N - 1` all count in it: at
/// most `limit` of them.
#[test]
fn a_ledger_under_clocks_that_disagree() {
    const THREADS: u64 = 4;
    const WINDOW: u64 = 100;
    let steps = if cfg!(miri) { 15 } else { 4_000 };
    let limit = 50;
    let n_windows = 2;
    for shape in 0..3 {
        let g = Gate::<2>::new(nz(WINDOW), limit);
        let g = Arc::new(match shape {
            0 => g,
            1 => g.in_wide_word().unwrap(),
            _ => g.in_buckets(),
        });
        let clock = Arc::new(AtomicU64::new(10 * WINDOW));
        let reached = Arc::new(AtomicU64::new(0));
        let ledger = Arc::new(Mutex::new(Vec::new()));
        let start = Arc::new(Barrier::new(THREADS as usize));
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let (g, clock, reached, ledger, start) = (
                    g.clone(),
                    clock.clone(),
                    reached.clone(),
                    ledger.clone(),
                    start.clone(),
                );
                std::thread::spawn(move || {
                    start.wait();
                    let mut mine = Vec::new();
                    for i in 0..steps {
                        let base = clock.fetch_add(1, Ordering::Relaxed);
                        // Offsets -150, -50, 0, +50 ticks.
                        let now = (base + [0, 100, 150, 200][t as usize]).saturating_sub(150);
                        reached.fetch_max(now / WINDOW, Ordering::SeqCst);
                        let n = 1 + (i % 3);
                        if g.try_acquire(now, n) == Decision::Pass {
                            let hi = reached.load(Ordering::SeqCst);
                            mine.push((now / WINDOW, hi, n));
                        }
                    }
                    ledger.lock().unwrap().extend(mine);
                })
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        let ledger = ledger.lock().unwrap();
        let n = n_windows as u64;
        let lo = ledger.iter().map(|e| e.0).min().unwrap();
        let hi = ledger.iter().map(|e| e.1).max().unwrap();
        for a in lo..=hi {
            let inside: u64 = ledger
                .iter()
                .filter(|(own, seen, _)| *own >= a && *seen < a + n)
                .map(|e| e.2)
                .sum();
            assert!(
                inside <= limit,
                "{inside} in [{a}, {}) (limit {limit})",
                a + n
            );
        }
        assert!(!ledger.is_empty());
    }
}

// ---- property tests against the model shared with fuzz/

/// 256, or `PROPTEST_CASES` for a longer run.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// Steps per case: fewer under Miri, which interprets every one.
fn max_steps(n: usize) -> usize {
    if cfg!(miri) {
        20
    } else {
        n
    }
}

/// Plain and prioritized requests on a word-shaped `Gate<N>` (in a
/// 128-bit word if `wide`) against the model: every decision, `peek`,
/// `remaining`, `count` and `retry_after` match, and no interval ever holds
/// more than the limit.
fn matches_the_model<const N: usize>(
    window: u64,
    limit: u64,
    timeout: Option<u64>,
    wide: bool,
    steps: &[(i64, u64, bool)],
) -> Result<(), TestCaseError> {
    let mut g = Gate::<N>::new(nz(window), limit);
    if let Some(t) = timeout {
        g = g.with_occupy_timeout(t);
    }
    if wide {
        g = g.in_wide_word().unwrap();
    }
    prop_assert!(g.shape() != Shape::Buckets, "{:?}", g.shape());
    let mut m = GateModel::<N>::new(window, limit, g.occupy_timeout());
    let mut now = 10_000u64;
    for &(dt, k, prioritized) in steps {
        now = now.saturating_add_signed(dt);
        prop_assert_eq!(
            g.retry_after(now, k),
            m.retry_after(now, k),
            "retry_after({}, {})",
            now,
            k
        );
        let (got, want) = if prioritized {
            (
                g.try_acquire_prioritized(now, k),
                m.try_acquire_prioritized(now, k),
            )
        } else {
            (g.try_acquire(now, k).into(), m.try_acquire(now, k).into())
        };
        prop_assert_eq!(
            got,
            want,
            "N {} at {} for {} (prioritized {})",
            N,
            now,
            k,
            prioritized
        );
        prop_assert_eq!(g.peek(now), m.peek(now), "peek at {}", now);
        prop_assert_eq!(g.remaining(now), limit.saturating_sub(m.peek(now)));
        prop_assert_eq!(g.count(now), m.count(now), "count at {}", now);
        for (&id, _) in m.counts.iter() {
            prop_assert!(
                m.interval(id) <= limit,
                "window {} holds more than {}",
                id,
                limit
            );
            prop_assert!(m.interval(id + N as u64 - 1) <= limit);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 1 } else { cases() },
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]

    /// Plain and prioritized requests on a word-shaped `Gate<3>` against
    /// the model (`tests/common/gate_model.rs`, which the `gate` fuzz
    /// target uses too): every decision, `peek`, `remaining`, `count` and
    /// `retry_after` match, and no interval ever holds more than the
    /// limit.
    #[test]
    fn gate_matches_the_model(
        window in 1u64..200,
        limit in 0u64..30,
        timeout in prop::option::of(0u64..700),
        steps in prop::collection::vec((-150i64..400, 0u64..8, any::<bool>()), 1..max_steps(150)),
    ) {
        matches_the_model::<3>(window, limit, timeout, false, &steps)?;
    }

    /// The same against the model for the other word layouts: one live
    /// window (its only live slot is its own total) and two, in 64- and
    /// 128-bit words (a 128-bit word with few slots keeps 64 id bits and
    /// leaves bits between its top slot and the used bit).
    #[test]
    fn every_word_layout_matches_the_model(
        window in 1u64..200,
        limit in 0u64..30,
        timeout in prop::option::of(0u64..700),
        wide in any::<bool>(),
        steps in prop::collection::vec((-150i64..400, 0u64..8, any::<bool>()), 1..max_steps(150)),
    ) {
        matches_the_model::<1>(window, limit, timeout, wide, &steps)?;
        matches_the_model::<2>(window, limit, timeout, wide, &steps)?;
    }

    /// The bucket shape (a limit too large for a word, requests in
    /// steps of 2^30) against the model with the bucket shape's rules:
    /// every decision, `peek`, `count` and `retry_after` match.
    #[test]
    fn bucket_shape_matches_the_model(
        window in 1u64..200,
        limit in 0u64..30,
        steps in prop::collection::vec((-150i64..400, 0u64..8), 1..max_steps(100)),
    ) {
        const UNIT: u64 = 1 << 30;
        let g = Gate::<3>::new(nz(window), limit * UNIT);
        let mut m = GateModel::<3>::new(window, limit * UNIT, g.occupy_timeout());
        m.buckets = true;
        prop_assert!(limit < 8 || g.shape() == Shape::Buckets);
        let mut now = 10_000u64;
        for (dt, k) in steps {
            now = now.saturating_add_signed(dt);
            let k = k * UNIT;
            prop_assert_eq!(g.retry_after(now, k), m.retry_after(now, k), "retry_after({}, {})", now, k);
            prop_assert_eq!(g.try_acquire(now, k), m.try_acquire(now, k), "at {} for {}", now, k);
            prop_assert_eq!(g.peek(now), m.peek(now), "peek at {}", now);
            prop_assert_eq!(g.count(now), m.count(now), "count at {}", now);
        }
    }
}

#[test]
fn gate_records_blocks_and_passes_in_the_bucket_shape() {
    let g = Gate::<60>::new(nz(1_000), 1_000);
    assert_eq!(g.shape(), Shape::Buckets);
    assert_eq!(g.try_acquire(10, 998), Decision::Pass);
    let passed = (0..5).filter(|_| g.try_acquire(10, 1) == Decision::Pass);
    assert_eq!(passed.count(), 2);
    let m = g.metric().unwrap();
    assert_eq!(m.total(10, Event::Pass), 1_000);
    assert_eq!(m.total(10, Event::Block), 3);
}

/// Found by `fuzz/` (target `gate`): a booking that saturates a count is
/// refused and leaves no partial booking; at a limit of `MAX_COUNT`, the
/// largest a gate takes.
#[test]
fn a_limit_of_max_count_books_all_or_nothing() {
    use leaparray::MAX_COUNT;
    let g = Gate::<3>::new(nz(63), MAX_COUNT);
    assert_eq!(g.limit(), MAX_COUNT);
    assert_eq!(g.try_acquire(0, MAX_COUNT - 1), Decision::Pass);
    assert_eq!(g.try_acquire(0, u64::MAX), Decision::Block);
    assert_eq!(g.try_acquire(0, 2), Decision::Block);
    assert_eq!(g.count(0), MAX_COUNT - 1, "a refusal leaves no pass");
    assert_eq!(g.try_acquire(0, 1), Decision::Pass);
    assert_eq!(g.count(0), MAX_COUNT);
}

/// A limit a count cannot hold is refused loudly: `new` panics with the
/// reason (a compile error in a `static`, the doc tests show), `try_new`
/// returns it. No gate silently caps it.
#[test]
#[should_panic(expected = "Gate::new: the limit is above MAX_COUNT")]
fn a_limit_above_max_count_panics_at_run_time() {
    let _ = Gate::<2>::new(NonZeroU64::new(500).unwrap(), leaparray::MAX_COUNT + 1);
}

/// A bucket-shaped gate reads the `N - 1` windows after its own, so its
/// range of times in use is `N - 1` windows short of 2^47 (GUARANTEES.md,
/// section 5): at that range's edge it admits, and its `retry_after` says
/// so, as a word-shaped gate does; `N - 1` windows farther it can refuse.
fn bucket_edge<const N: usize>(d: u64) -> (Decision, Option<u64>) {
    let g = Gate::<N>::new(nz(1), 5).in_buckets();
    assert_eq!(g.shape(), Shape::Buckets);
    assert_eq!(g.try_acquire(100, 1), Decision::Pass);
    let now = 100 + (1u64 << 47) - d;
    let after = g.retry_after(now, 1);
    (g.try_acquire(now, 1), after)
}

#[test]
fn bucket_shape_admits_at_the_edge_of_its_id_range() {
    // The farthest time in range: 2^47 - (N - 1) - 1 windows from 100.
    assert_eq!(bucket_edge::<1>(1), (Decision::Pass, Some(0)));
    assert_eq!(bucket_edge::<2>(2), (Decision::Pass, Some(0)));
    assert_eq!(bucket_edge::<4>(4), (Decision::Pass, Some(0)));
    assert_eq!(bucket_edge::<8>(8), (Decision::Pass, Some(0)));
    // One window past it (out of range), a bucket read as the newer
    // window it aliases refuses: the bound is tight.
    assert_eq!(bucket_edge::<2>(1).0, Decision::Block);
    assert_eq!(bucket_edge::<8>(7).0, Decision::Block);
}
