//! Review of issue 31 (`Overflow::Evict`): a loom model of the plane
//! takeover the memory's first Thread 1 / Thread 2 table argues
//! (`src/keyed/memory.rs`): a fold of window `w` and a fold of window
//! `w + P` into the same plane at once. `loom-tests/tests/keyed.rs` races
//! two folds of one window only.
//!
//! Bound: 3 preemptions (as `two_evictions_fold_into_the_same_words`),
//! two racing threads, each one decision; a table of 2 slots, `N = 2`
//! (`P = 4` planes of 2 words), windows of 10 ticks, windows 36 to 40.
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" cargo test --release --test evict_review`
#![cfg(leaparray_loom)]

use std::collections::BTreeMap;

use leaparray::KeyedGate;
use leaparray_loom_tests::{spawn, Seen, W};
use loom::sync::Arc;

/// Panics if two adjacent windows hold more than `limit`.
fn within(bookings: &[(u64, u64)], limit: u64) {
    let mut m = BTreeMap::new();
    for &(w, n) in bookings {
        *m.entry(w).or_insert(0u64) += n;
    }
    for (&w, &n) in &m {
        let next = m.get(&(w + 1)).copied().unwrap_or(0);
        assert!(
            n + next <= limit,
            "windows {w} and {}: {n} + {next} > {limit}: {m:?}",
            w + 1
        );
    }
}

/// A plane taken over while a fold of its older window is in progress.
/// Limit 4. V books 2 in window 36 and 1 in 37 and is refused three times
/// (demand 8); X books 3 in window 40 (demand 3). Thread 1, a new key at
/// window 40, evicts V (its demand halved three times: 1) and folds V's
/// window 36 into plane 0; thread 2, a new key at window 37, evicts X (V's
/// demand is 8 there) and folds X's window 40 into plane 0 too. Afterwards
/// X comes back in window 40 and asks for 4: it gets none (it holds 3 of
/// 4 there). Bug it catches: a fold that finds a word of another window
/// and resets it without rereading the plane id (thread 1 erases X's cell
/// of window 40; X's estimate reads 0 and it takes its limit again).
#[test]
fn a_plane_taken_over_while_a_fold_of_its_older_window_runs() {
    let seen = Seen::new();
    let record = seen.recorder();
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(move || {
        let t = Arc::new(KeyedGate::<2, 2>::new(W, 4));
        let (v, x, b, c) = (1u64, 2u64, 3u64, 4u64);
        assert_eq!(t.loom_acquire(v, 365, 2), Ok(Some(36)));
        assert_eq!(t.loom_acquire(v, 375, 1), Ok(Some(37)));
        for _ in 0..3 {
            assert_eq!(t.loom_acquire(v, 375, 2), Ok(None));
        }
        assert_eq!(t.loom_acquire(x, 405, 3), Ok(Some(40)));
        let (t1, t2) = (t.clone(), t.clone());
        let h1 = spawn(move || t1.loom_acquire(b, 405, 1));
        let h2 = spawn(move || t2.loom_acquire(c, 375, 1));
        let _ = (h1.join().unwrap(), h2.join().unwrap());
        let v_gone = t.loom_slots_of(v).is_empty();
        let x_gone = t.loom_slots_of(x).is_empty();
        let mut xb = vec![(40, 3)];
        for _ in 0..4 {
            if let Ok(Some(w)) = t.loom_acquire(x, 405, 1) {
                xb.push((w, 1));
            }
        }
        within(&xb, 4);
        record((v_gone, x_gone));
    });
    // Both folds happened (V and X both evicted) in some schedule.
    seen.assert_all(&[(true, true)]);
}
