//! Loom models of the keyed gate, `leaparray::KeyedGate`: claims and
//! settling (a key holds one slot), recycling against a late caller of the
//! recycled key (the high-water rule), two keys racing for the last free
//! slot, and eviction (`Overflow::Evict`): an eviction racing a decision of
//! the evicted key, two evictions folding into the same memory words, and
//! a returning key reading its estimate while the eviction that folds it
//! happens.
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
//! in CI; 3 for `two_evictions_fold_into_the_same_words`), two racing
//! threads, each making one decision (which may scan, claim, settle, fold
//! an evicted key into the memory, read an estimate and book: up to about
//! 25 atomic operations), tables of 1 or 2 slots, windows of 10 ticks,
//! windows 0 to 10.
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=5 cargo test --release --test keyed`
#![cfg(leaparray_loom)]

use std::collections::BTreeMap;

use leaparray::keyed::Overflow;
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
        let t = Arc::new(KeyedGate::<2, 1>::new(W, 5).with_overflow(Overflow::Refuse));
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

/// Books `n` permits for `key` at `now` once per call until refused, and
/// returns the windows booked into (the main thread, after the race).
fn take_all(t: &KeyedGate<2, 2>, key: u64, now: u64, tries: usize) -> Vec<(u64, u64)> {
    (0..tries)
        .filter_map(|_| t.loom_acquire(key, now, 1).ok().flatten().map(|w| (w, 1)))
        .collect()
}

/// An eviction races a decision of the evicted key. One slot, limit 4:
/// key V holds 3 permits in window 0. Thread 1 asks for one more for V;
/// thread 2's new key K finds no room and evicts V, folding V's counts
/// into the memory before the swap that evicts. Whichever wins, V ends
/// with at most 4 in windows 0 and 1: if K evicted V first, V's decision
/// finds no slot, evicts K in turn and starts from the estimate (3), never
/// from 0. Bug it catches: folding after the swap that evicts (V comes
/// back before its counts are remembered, starts from 0 and takes 4 more).
#[test]
fn an_eviction_races_a_decision_of_the_evicted_key() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let t = Arc::new(KeyedGate::<2, 1>::new(W, 4));
        let (v, k) = (1u64, 2u64);
        for _ in 0..3 {
            assert_eq!(t.loom_acquire(v, 5, 1), Ok(Some(0)));
        }
        let (a, b) = (t.clone(), t.clone());
        let t1 = spawn(move || a.loom_acquire(v, 6, 1));
        let t2 = spawn(move || b.loom_acquire(k, 7, 1));
        let (dv, dk) = (t1.join().unwrap(), t2.join().unwrap());
        let mut booked: Vec<(u64, u64)> = vec![(0, 3)];
        booked.extend(dv.unwrap().map(|w| (w, 1)));
        // After the race: V asks again in window 1 until refused.
        for _ in 0..4 {
            if let Ok(Some(w)) = t.loom_acquire(v, 15, 1) {
                booked.push((w, 1));
            }
        }
        within(&ledger(&booked), 4);
        let s = t.occupancy(15);
        record((
            dv.unwrap().is_some(),
            dk.unwrap().is_some(),
            s.remembered > 0,
        ));
    });
    // V's decision first (booked, then evicted), or K's eviction first (V
    // comes back from its estimate).
    seen.assert_all(&[(true, true, true)]);
}

/// Two evictions fold into the same memory words at once. Two slots, limit
/// 4: keys A and D hold 3 permits each in window 0 (the same demand), and
/// new keys B (probe starting at A's slot) and C (at D's) each evict the
/// first of them in their probe: A and D are folded into the memory's
/// words for window 0 by two threads. Afterwards A and D each come back
/// and ask for their limit again: each gets at most 1. Bug it catches: a
/// fold that reads a word and stores it (no compare-and-swap): one
/// thread's fold overwrites the other's, and its key comes back from 0.
///
/// Bound: 3 preemptions whatever `LOOM_MAX_PREEMPTIONS` says (two threads
/// of about 25 atomic operations each: at 5 the model takes minutes); the
/// lost fold above needs one.
#[test]
fn two_evictions_fold_into_the_same_words() {
    let seen = Seen::new();
    let record = seen.recorder();
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(move || {
        let t = Arc::new(KeyedGate::<2, 2>::new(W, 4));
        let (a, d) = (1u64, 2u64);
        for _ in 0..3 {
            assert_eq!(t.loom_acquire(a, 5, 1), Ok(Some(0)));
            assert_eq!(t.loom_acquire(d, 5, 1), Ok(Some(0)));
        }
        let (sa, sd) = (t.loom_slots_of(a)[0], t.loom_slots_of(d)[0]);
        let b = (10u64..).find(|&k| t.loom_home(k) == sa).unwrap();
        let c = (10u64..).find(|&k| t.loom_home(k) == sd && k != b).unwrap();
        let (t1, t2) = (t.clone(), t.clone());
        let h1 = spawn(move || t1.loom_acquire(b, 6, 1));
        let h2 = spawn(move || t2.loom_acquire(c, 6, 1));
        let (db, dc) = (h1.join().unwrap(), h2.join().unwrap());
        let evicted = t.occupancy(6).evicted;
        let mut a_booked = vec![(0, 3)];
        a_booked.extend(take_all(&t, a, 15, 4));
        let mut d_booked = vec![(0, 3)];
        d_booked.extend(take_all(&t, d, 15, 4));
        within(&ledger(&a_booked), 4);
        within(&ledger(&d_booked), 4);
        let mut b_booked: Vec<(u64, u64)> = db.unwrap().map(|w| (w, 1)).into_iter().collect();
        b_booked.extend(take_all(&t, b, 15, 4));
        within(&ledger(&b_booked), 4);
        let mut c_booked: Vec<(u64, u64)> = dc.unwrap().map(|w| (w, 1)).into_iter().collect();
        c_booked.extend(take_all(&t, c, 15, 4));
        within(&ledger(&c_booked), 4);
        record(evicted);
    });
    // Both evicted a key (A and D folded, at the same time in some
    // schedules).
    seen.assert_all(&[2]);
}

/// A returning key reads its estimate while the eviction that folds its
/// counts happens. Two slots, limit 4: K holds 3 permits in window 0, M
/// holds 4 (more demand). Thread 2's new key J evicts K (the least
/// valued), folding K's 3 before its swap; thread 1 asks for one more for
/// K. If thread 1's scan finds K's slot taken, it evicts in turn and its
/// settle reads K's estimate after that scan, so it sees the fold: K
/// starts from 3. After the race K asks again in window 1: K never has
/// more than 4 in windows 0 and 1. Bug it catches: reading the estimate
/// before the scan (before thread 2's fold is visible): K starts from 0.
#[test]
fn a_returning_key_reads_its_estimate_while_it_is_folded() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let t = Arc::new(KeyedGate::<2, 2>::new(W, 4));
        let (k, m, j) = (1u64, 2u64, 3u64);
        for _ in 0..4 {
            assert_eq!(t.loom_acquire(m, 5, 1), Ok(Some(0)));
        }
        for _ in 0..3 {
            assert_eq!(t.loom_acquire(k, 5, 1), Ok(Some(0)));
        }
        let (t1, t2) = (t.clone(), t.clone());
        let h1 = spawn(move || t1.loom_acquire(k, 6, 1));
        let h2 = spawn(move || t2.loom_acquire(j, 6, 1));
        let (dk, _) = (h1.join().unwrap(), h2.join().unwrap());
        let mut booked = vec![(0, 3)];
        booked.extend(dk.unwrap().map(|w| (w, 1)));
        booked.extend(take_all(&t, k, 15, 4));
        within(&ledger(&booked), 4);
        record(t.occupancy(15).remembered > 0);
    });
    // K came back from its estimate in some schedule.
    seen.assert_all(&[true]);
}
