//! Loom models of the keyed gate, `leaparray::KeyedGate`: claims and
//! settling (a key holds one slot), recycling against a late caller of the
//! recycled key (the high-water rule), and two keys racing for the last
//! free slot.
//!
//! Under loom a slot's 128-bit word is a value behind a loom mutex (loom
//! has no 128-bit atomic): each load and compare-and-swap is one critical
//! section, as atomic as the real instruction, with acquire/release, which
//! is all the protocol uses (see `src/sync.rs`, `SlotWord`). The high-water
//! mark and the claim tokens are loom atomics.
//!
//! Each model records where every admitted permit was booked (the loom-only
//! `loom_acquire`) and checks, in every schedule, that no key has more than
//! its limit in any interval of `N = 2` windows, and that no key holds two
//! slots at the end. Each also states outcomes that only the race produces
//! and checks that some schedule produced them.
//!
//! Bounds: every interleaving up to `LOOM_MAX_PREEMPTIONS` preemptions (5
//! in CI), two racing threads, each making one decision (which may scan,
//! claim, settle and book: up to about 10 slot operations), tables of 1 or
//! 2 slots, windows of 10 ticks, windows 0 to 10.
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=5 cargo test --release --test keyed`
#![cfg(leaparray_loom)]

use std::collections::BTreeMap;

use leaparray::KeyedGate;
use leaparray_loom_tests::{spawn, Seen, W};
use loom::sync::Arc;

/// Permits per window of one key, from the windows its bookings landed in.
fn ledger(bookings: &[(u64, u64)]) -> BTreeMap<u64, u64> {
    let mut m = BTreeMap::new();
    for &(w, n) in bookings {
        *m.entry(w).or_default() += n;
    }
    m
}

/// Panics if two adjacent windows of `ledger` hold more than `limit`.
fn within(ledger: &BTreeMap<u64, u64>, limit: u64) {
    for (&w, &n) in ledger {
        let next = ledger.get(&(w + 1)).copied().unwrap_or(0);
        assert!(
            n + next <= limit,
            "windows {w} and {}: {n} + {next} > {limit}: {ledger:?}",
            w + 1
        );
    }
}

/// Two threads insert the same new key, disagreeing on which slot is the
/// first free one: key X (window 0) is live at thread 1's window 3 and
/// recyclable (idle for 2N = 4 windows) at thread 2's window 4, the other
/// slot is free, and the key's probe starts at X's slot. Without claims and settling each would take a
/// different slot and both pass; here the key ends in one slot and exactly
/// one of them passes (limit 1; windows 3 and 4 share an interval).
#[test]
fn two_threads_inserting_one_key_end_with_one_slot() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let t = Arc::new(KeyedGate::<2, 2>::new(W, 1));
        let x = 7u64;
        // A key whose probe starts at X's slot (X took its own home).
        let k = (8u64..)
            .find(|&k| t.loom_home(k) == t.loom_home(x))
            .unwrap();
        assert_eq!(t.loom_acquire(x, 5, 1), Ok(Some(0)));
        let (a, b) = (t.clone(), t.clone());
        let t1 = spawn(move || a.loom_acquire(k, 35, 1));
        let t2 = spawn(move || b.loom_acquire(k, 45, 1));
        let (d1, d2) = (t1.join().unwrap(), t2.join().unwrap());
        let booked: Vec<(u64, u64)> = [d1, d2]
            .iter()
            .filter_map(|d| d.unwrap().map(|w| (w, 1)))
            .collect();
        within(&ledger(&booked), 1);
        assert_eq!(booked.len(), 1, "exactly one passes: {d1:?} {d2:?}");
        assert_eq!(t.loom_slots_of(k).len(), 1, "one slot: {d1:?} {d2:?}");
        record((d1.unwrap().is_some(), t.loom_slots_of(x).len()));
    });
    // Either thread can be the one that passes; X survives when thread 1's
    // claim (the free slot) won, and is recycled when thread 2's did.
    seen.assert_all(&[(true, 0), (true, 1), (false, 0), (false, 1)]);
}

/// Recycling races a late caller of the recycled key. Key A is full
/// (limit 1) in window 0; key B, at window 4, recycles A's slot (B's probe
/// starts there) while A's caller, with a clock still in window 1, asks for
/// one more. The other slot is free, so A always finds room. Wherever the
/// late permit lands, A's window-0 permit and it never share an interval:
/// it is refused (A's slot still there), or booked at window 2 or later
/// (the high water, 4, minus N). Without the high-water rule A's comeback
/// books into window 1, next to window 0: two in one interval.
#[test]
fn recycling_races_a_late_add_of_its_old_key() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let t = Arc::new(KeyedGate::<2, 2>::new(W, 1));
        let a = 1u64;
        // A key whose probe starts at A's home: it recycles A's slot first.
        let b = (2u64..)
            .find(|&b| t.loom_home(b) == t.loom_home(a))
            .unwrap();
        assert_eq!(t.loom_acquire(a, 5, 1), Ok(Some(0)));
        let (t1, t2) = (t.clone(), t.clone());
        let recycler = spawn(move || t1.loom_acquire(b, 45, 1));
        let late = spawn(move || t2.loom_acquire(a, 15, 1));
        let (db, da) = (recycler.join().unwrap(), late.join().unwrap());
        assert_eq!(db, Ok(Some(4)), "B always has room");
        let mut bookings = vec![(0, 1)];
        if let Ok(Some(w)) = da {
            bookings.push((w, 1));
        }
        within(&ledger(&bookings), 1);
        assert!(t.loom_slots_of(a).len() <= 1 && t.loom_slots_of(b).len() == 1);
        record(da);
    });
    // Refused by A's own slot (the late caller first), or booked at the high
    // water minus N once B recycled it.
    seen.assert_all(&[Ok(None), Ok(Some(2))]);
}

/// Two new keys race for the one slot of the table: one gets it and
/// passes, the other overflows (refused by the default policy); never
/// both.
#[test]
fn two_keys_race_for_the_last_free_slot() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let t = Arc::new(KeyedGate::<2, 1>::new(W, 5));
        let (a, b) = (t.clone(), t.clone());
        let t1 = spawn(move || a.loom_acquire(1, 5, 1));
        let t2 = spawn(move || b.loom_acquire(2, 6, 1));
        let (d1, d2) = (t1.join().unwrap(), t2.join().unwrap());
        assert!(
            matches!((d1, d2), (Ok(Some(0)), Err(())) | (Err(()), Ok(Some(0)))),
            "one gets the slot, the other overflows: {d1:?} {d2:?}"
        );
        assert_eq!(t.occupancy(5).resident, 1);
        assert_eq!(t.occupancy(5).overflowed, 1);
        record(d1.is_ok());
    });
    seen.assert_all(&[true, false]);
}
