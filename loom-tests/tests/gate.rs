//! Loom models of the gate's exact admission in the bucket shape
//! (`Gate::in_buckets`: book first, check second, roll back), of occupy
//! (borrowing a future window) and of the metric's exact per-window
//! minimum RT.
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=5 cargo test --release`
#![cfg(leaparray_loom)]

use leaparray::gate::{Decision, Gate};
use leaparray::{Event, Metric, MAX_COUNT};
use leaparray_loom_tests::{final_counts, spawn, Seen, W};
use loom::sync::Arc;

fn passed(d: Decision) -> u64 {
    u64::from(d == Decision::Pass)
}

/// Two threads race for the last permit: at most one gets it, the pass
/// count is exactly what was admitted, and a refusal leaves nothing behind.
#[test]
fn two_threads_acquire_the_last_permit() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let g = Arc::new(Gate::<2>::new(W, 2).in_buckets());
        assert_eq!(g.try_acquire(5, 1), Decision::Pass);
        let (a, b) = (g.clone(), g.clone());
        let t1 = spawn(move || a.try_acquire(5, 1));
        let t2 = spawn(move || b.try_acquire(6, 1));
        let (d1, d2) = (t1.join().unwrap(), t2.join().unwrap());
        let admitted = passed(d1) + passed(d2);
        assert!(admitted <= 1, "both took the last permit: {d1:?} {d2:?}");
        assert_eq!(g.metric().unwrap().pass(6), 1 + admitted);
        assert_eq!(g.metric().unwrap().block(6), 2 - admitted);
        record(admitted);
    });
    // One admitted (the usual case) and none (both saw the other's booking:
    // a false rejection under contention, allowed).
    seen.assert_all(&[0, 1]);
}

/// An admission racing a roll-over of its window's bucket: one thread's
/// time is in window 2 (it retires window 0), a lagging one's in window 1.
/// Window 1 is in both intervals (0, 1] and (1, 2]: each must stay within
/// the limit. A laggard that finds window 2 already created is booked into
/// window 2 (late callers book into the newest window), so it may pass
/// there while the request of window 2 is refused (both booked, the latter
/// read both and took its booking back: a false rejection under
/// contention, which the bucket shape allows).
#[test]
fn acquire_racing_a_roll_over() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let g = Arc::new(Gate::<2>::new(W, 2).in_buckets());
        // Window 0 exists (3 blocked: more than the limit), with no passes.
        assert_eq!(g.try_acquire(0, 3), Decision::Block);
        assert_eq!(g.try_acquire(10, 1), Decision::Pass); // window 1
        let (a, b) = (g.clone(), g.clone());
        let ahead = spawn(move || a.try_acquire(20, 1)); // window 2: rolls bucket 0
        let behind = spawn(move || b.try_acquire(15, 1)); // window 1, or 2 once late
        let (d_ahead, d_behind) = (ahead.join().unwrap(), behind.join().unwrap());
        let m = g.metric().unwrap();
        let (in_1, in_2) = (m.window_pass(10), m.window_pass(20));
        assert_eq!(
            in_1 + in_2,
            1 + passed(d_ahead) + passed(d_behind),
            "a pass not counted, or a refusal left its booking: {d_ahead:?} {d_behind:?}"
        );
        assert!(in_1 >= 1 && in_2 >= passed(d_ahead), "booked too early");
        assert!(in_1 <= 2, "interval (0, 1] over the limit");
        assert!(
            in_1 + in_2 <= 2,
            "interval (1, 2] over the limit: {d_ahead:?} {d_behind:?}"
        );
        assert_eq!(final_counts(m.array(), 0)[Event::Pass.index()], 0);
        record((passed(d_ahead), passed(d_behind), in_2));
    });
    // (ahead, behind, passes in window 2): the request of window 2 passes;
    // the laggard passes in window 1, or late in window 2; both refused.
    seen.assert_all(&[(1, 0, 1), (0, 1, 0), (0, 1, 1), (0, 0, 0)]);
}

/// A prioritized request borrows window 2 while another thread's time has
/// reached window 2 (rolling the bucket that window 2 reuses) and acquires
/// there. The borrowed pass and the direct one together stay within the
/// limit of window 2's intervals, the borrowed pass is counted in window 2
/// exactly once, and a borrower that finds window 2 created is booked into
/// it as a late caller, never into the full window 1.
#[test]
fn occupy_racing_the_roll_over_into_the_borrowed_window() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let g = Arc::new(Gate::<2>::new(W, 2).in_buckets());
        assert_eq!(g.try_acquire(5, 2), Decision::Pass); // window 0 full
        let (a, b) = (g.clone(), g.clone());
        // At 15 (window 1) the interval (-1, 1] is full; window 2 starts in
        // 5 ticks, when window 0 slides out.
        let borrower = spawn(move || a.try_acquire_prioritized(15, 1));
        let direct = spawn(move || b.try_acquire(20, 2));
        let (d_borrow, d_direct) = (borrower.join().unwrap(), direct.join().unwrap());
        // Window 1 is full with window 0's passes, and once the direct
        // thread has created window 2 the borrower is a late caller,
        // booked into window 2: it never passes in window 1.
        let (late, borrowed) = match d_borrow {
            Decision::Pass => (1, 0),
            Decision::Wait(5) => (0, 1),
            Decision::Block => (0, 0),
            other => panic!("unexpected {other:?}"),
        };
        let direct = 2 * passed(d_direct);
        let m = g.metric().unwrap();
        assert!(
            late + borrowed + direct <= 2,
            "interval (1, 2] over the limit: {d_borrow:?} {d_direct:?}"
        );
        assert_eq!(m.window_pass(10), 0, "interval (0, 1] over the limit");
        assert_eq!(m.window_pass(20), late + borrowed + direct);
        assert_eq!(m.pass(20), late + borrowed + direct);
        assert_eq!(m.occupied_pass(15), borrowed);
        record((late, borrowed, direct));
    });
    // Borrowed; the direct request passes; the borrower, late, passes in
    // window 2 while the direct request, which read its booking, is
    // refused (a false rejection under contention).
    seen.assert_all(&[(0, 1, 0), (0, 0, 2), (1, 0, 0)]);
}

/// The minimum RT of a window is one exact atomic update: a late RT for
/// window 0 racing the roll-over to window 2 either lands in window 0's
/// final minimum or is refused; window 2's minimum is only its own.
#[test]
fn min_rt_racing_a_roll_over() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let m = Arc::new(Metric::<2>::new(W));
        m.add_rt(0, 50).unwrap();
        let (a, b) = (m.clone(), m.clone());
        let late = spawn(move || a.add_rt(1, 10));
        let roll = spawn(move || b.add_rt(20, 30));
        let late = late.join().unwrap();
        assert_eq!(roll.join().unwrap(), Ok(()));
        assert_eq!(m.min_rt(20), Some(30), "a late RT leaked into window 2");
        // The three updates of one `add_rt` are each exact, not one atomic
        // step: if the window is retired between them, the first may have
        // counted in it and the rest not (the call then reports `Stale`).
        // Whatever landed is in window 0's final counts, nothing in window 2.
        let old = final_counts(m.array(), 0);
        let (old_min, old_success) = (MAX_COUNT - old[6], old[Event::Success.index()]);
        assert!(
            [50, 10].contains(&old_min) && [1, 2].contains(&old_success),
            "{old:?}"
        );
        if late.is_ok() {
            assert_eq!((old_min, old_success), (10, 2));
        }
        if old_min == 10 {
            assert_eq!(old_success, 2, "success is updated before the minimum");
        }
        record(late.is_ok());
    });
    seen.assert_all(&[true, false]);
}
