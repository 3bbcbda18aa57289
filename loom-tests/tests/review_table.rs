//! The slot table's progress (`src/keyed/table/mod.rs`, "Progress") as
//! `KeyedGate` uses it: two new keys on a full probe both complete.
//!
//! Bound: every interleaving up to `LOOM_MAX_PREEMPTIONS` preemptions (CI:
//! 5); the livelock this model detects needs 2. The guarantee it checks
//! holds while at most `min(PROBE, CAP)` calls insert at once: here 2 calls
//! on a probe of 2 slots. (In a table of 1 slot, two new keys are 2 calls
//! on a probe of 1 slot: beyond the bound, a schedule that preempts each
//! call between its claim and its settling swap evicts without end, and
//! loom finds it at 2 preemptions; table.rs states it.)
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=5 cargo test --release --test review_table`
#![cfg(leaparray_loom)]

use leaparray::KeyedGate;
use leaparray_loom_tests::{spawn, W};
use loom::sync::Arc;

/// Key X resident (booked, so it ranks above a fresh key), then two new
/// keys A and B, one decision each, in an evicting `KeyedGate` of 2 slots
/// (the default `Overflow::Evict`; every probe is both slots, full once
/// either new key is in). A table whose claimer settled into its start and
/// decided after let B evict A's fresh slot (demand 0: it ranks least)
/// before A's swap, A then B's, and so on: a third eviction is one key's
/// fresh slot evicted twice during its one call, and the state after it is
/// the state after the first (a cycle; two evictions per round, no call
/// completes). A claimer settles its claim straight into its decision, and
/// a claim is no victim: at most X and one new key's value are evicted.
#[test]
fn gate_two_new_keys_on_a_full_probe_both_complete() {
    loom::model(|| {
        let t = Arc::new(KeyedGate::<2, 2>::new(W, 4));
        assert_eq!(t.loom_acquire(3, 5, 1), Ok(Some(0)));
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
