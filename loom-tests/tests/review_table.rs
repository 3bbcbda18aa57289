//! A hostile review of the slot table (`src/keyed/table.rs`) as
//! `KeyedGate` uses it: reproducers named `review_defect_*`, red while the
//! defect is there.
//!
//! Bound: every interleaving up to `LOOM_MAX_PREEMPTIONS` preemptions; the
//! schedule below needs 2 (green at 0 and 1, red at 2 and 3).
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release --test review_table`
#![cfg(leaparray_loom)]

use leaparray::KeyedGate;
use leaparray_loom_tests::{spawn, W};
use loom::sync::Arc;

/// Two new keys A and B, one decision each, in an evicting `KeyedGate` of
/// one slot (the default `Overflow::Evict`; the probe is full once either
/// is in). In a table of one slot starting empty, every eviction is of A
/// by B or of B by A, alternately. Three evictions during the two calls
/// mean: B evicted A's fresh slot (demand 0: it ranks least), A evicted
/// B's, B evicted A's again, while both calls were in progress. The state
/// after the third is the state after the first (slot: B's fresh word;
/// A's call about to fail its swap; the folds of fresh words fold nothing
/// and the high water is where it was), so that segment repeats forever
/// in a schedule that keeps preempting each thread between its decision
/// and its swap: two evictions succeed per round and no decision ever
/// completes. GUARANTEES.md section 4 says a gate is lock-free: "a CAS
/// fails only because another succeeded, so some caller always
/// completes". Loom finds the segment at 2 preemptions.
#[test]
fn review_defect_gate_two_new_keys_evict_each_other() {
    loom::model(|| {
        let t = Arc::new(KeyedGate::<2, 1>::new(W, 4));
        let (a, b) = (t.clone(), t.clone());
        let t1 = spawn(move || a.loom_acquire(1, 5, 1));
        let t2 = spawn(move || b.loom_acquire(2, 5, 1));
        let (da, db) = (t1.join().unwrap(), t2.join().unwrap());
        assert!(da.is_ok() && db.is_ok());
        let evicted = t.occupancy(5).evicted;
        assert!(
            evicted <= 2,
            "{evicted} evictions in one decision each of two new keys: one key's fresh slot was evicted \
             twice during its one call (a cycle: the state after eviction 3 is that after eviction 1)"
        );
    });
}
