//! Loom models of `leaparray-governor`'s store: leaparray's keyed slot
//! table (`src/keyed/table/mod.rs`) with the GCRA policy
//! (`integrations/governor/src/slot.rs`): governor's `measure_and_replace`
//! on one key from two threads, two threads inserting one key while a
//! third frees a slot of its probe, `retain_recent` racing an update, and
//! an eviction racing an update of the evicted key.
//!
//! The closure is governor's single-cell GCRA (`Gcra::test_and_update`),
//! copied with an explicit `now` so that each thread has its own clock.
//! Keys are placed by an identity hasher: a key's hash is the key, so in a
//! table of 2 slots a key's home is its top bit (its fingerprint is 56
//! bits of an odd multiple of it: `Table::place`).
//!
//! Under loom a slot's 128-bit word is a value behind a loom mutex (loom
//! has no 128-bit atomic; leaparray's `src/sync.rs`): each load and
//! compare-and-swap is one critical section, with acquire/release, all the
//! protocol uses. The memory cells and the claim tokens are loom atomics.
//!
//! Bounds: every interleaving up to `LOOM_MAX_PREEMPTIONS` preemptions (5
//! in CI) with two racing threads, each making one call, tables of 2
//! slots; the insertion model has three threads (two inserters and a
//! `retain_recent`) and a fixed bound of 3 preemptions.
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=5 cargo test --release --test governor`
#![cfg(leaparray_loom)]

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};

use governor::nanos::Nanos;
use governor::state::keyed::ShrinkableKeyedStateStore;
use governor::state::StateStore;
use leaparray_governor::KeyedStore;
use leaparray_loom_tests::{spawn, Seen};
use loom::sync::Arc;

/// A fingerprint that is the key.
#[derive(Clone, Copy, Default)]
struct Id;

struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("u64 keys only")
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

impl BuildHasher for Id {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

type Store = KeyedStore<u64, Id>;

/// A store of 2 slots sized for a burst period of 3 ns: generations of the
/// memory of evicted keys are 1 ns wide, so a key's start is its own
/// folded TAT exactly in these models (`src/slot.rs`, "The memory of
/// evicted keys"), and a TAT 3 ns or more before the latest written goes
/// to the floor ("A time that has passed").
fn store() -> Store {
    let three_ns = governor::Quota::with_period(std::time::Duration::from_nanos(1))
        .unwrap()
        .allow_burst(std::num::NonZeroU32::new(3).unwrap());
    Store::with_capacity_and_hasher(2, Id).with_quota(three_ns)
}

/// Home slot 0 and home slot 1 of a 2-slot table.
const HOME0: u64 = 1;
const HOME1: u64 = 1 << 63;

/// governor's GCRA decision for a caller at `now` (cell time `t`,
/// tolerance `tau`): `Ok(the TAT it decided from)` if admitted, `Err(())`
/// if refused. `runs` counts the closure's calls.
fn decide(
    store: &Store,
    key: u64,
    now: u64,
    t: u64,
    tau: u64,
    runs: &AtomicUsize,
) -> Result<u64, ()> {
    store.measure_and_replace(&key, |tat| {
        runs.fetch_add(1, Ordering::Relaxed);
        let tat = tat.map_or(now, Nanos::as_u64);
        if now < tat.saturating_sub(tau) {
            Err(())
        } else {
            Ok((tat, Nanos::from(tat.max(now) + t)))
        }
    })
}

/// The TAT a key holds (`0`: none), read through the store's own update.
fn tat(store: &Store, key: u64) -> u64 {
    store
        .measure_and_replace(&key, |tat| Ok::<_, ()>((tat, tat.unwrap_or_default())))
        .unwrap()
        .map_or(0, Nanos::as_u64)
}

/// Two threads on one key, a burst of 2 (cell time 10, tolerance 10), both
/// at `now = 100`, the key already at TAT 100: both are admitted, never
/// from the same TAT (governor's "update only if unchanged"), and the key
/// ends at TAT 120. Some schedule makes a closure run again (the race).
/// Mutation caught: swapping from the slot's current value instead of the
/// one the closure saw (both admit from 100, the key ends at 110).
#[test]
fn two_threads_on_one_key_never_update_from_one_value() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let store = Arc::new(store());
        let runs = Arc::new(AtomicUsize::new(0));
        assert_eq!(decide(&store, HOME0, 90, 10, 10, &runs), Ok(90));
        let (a, b) = (store.clone(), store.clone());
        let (ra, rb) = (runs.clone(), runs.clone());
        let t1 = spawn(move || decide(&a, HOME0, 100, 10, 10, &ra));
        let t2 = spawn(move || decide(&b, HOME0, 100, 10, 10, &rb));
        let (d1, d2) = (t1.join().unwrap(), t2.join().unwrap());
        let (f1, f2) = (d1.expect("burst of 2"), d2.expect("burst of 2"));
        assert_ne!(f1, f2, "both updated from one value");
        assert_eq!(tat(&store, HOME0), 120);
        record(runs.load(Ordering::Relaxed) > 3);
    });
    seen.assert_all(&[false, true]);
}

/// Two threads insert one new key K (burst 1: cell time 10, tolerance 0,
/// both at now 100) while a third frees slot 0, K's home, with
/// `retain_recent(100)` (it held X at TAT 100); slot 1 is free. A thread
/// that read slot 0 before the retain freed it takes slot 1, one that read
/// it after takes slot 0: K claimed in two slots. Settling keeps K in one,
/// so exactly one of the two is admitted (the other finds K at TAT 110).
/// Mutation caught: settling without reading the probe's other slots (K in
/// two slots, both admitted).
#[test]
fn two_threads_inserting_one_key_end_with_one_slot() {
    let seen = Seen::new();
    let record = seen.recorder();
    // Three threads: at 5 preemptions this model runs for more than ten
    // minutes, so its bound is 3 (8 s), whatever LOOM_MAX_PREEMPTIONS says.
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(move || {
        let store = Arc::new(store());
        let runs = Arc::new(AtomicUsize::new(0));
        let x = HOME0;
        let k = HOME0 + 1;
        assert_eq!(decide(&store, x, 90, 10, 0, &runs), Ok(90));
        let (a, b, c) = (store.clone(), store.clone(), store.clone());
        let (ra, rb) = (runs.clone(), runs.clone());
        let t1 = spawn(move || decide(&a, k, 100, 10, 0, &ra));
        let t2 = spawn(move || decide(&b, k, 100, 10, 0, &rb));
        let t3 = spawn(move || c.retain_recent(Nanos::from(100)));
        let (d1, d2) = (t1.join().unwrap(), t2.join().unwrap());
        t3.join().unwrap();
        assert_eq!(
            u8::from(d1.is_ok()) + u8::from(d2.is_ok()),
            1,
            "exactly one admitted: {d1:?} {d2:?}"
        );
        assert_eq!(
            ShrinkableKeyedStateStore::len(&*store),
            1,
            "K in one slot, X freed"
        );
        assert_eq!(tat(&store, k), 110);
        record(d1.is_ok());
    });
    // Either thread can be the one admitted.
    seen.assert_all(&[false, true]);
}

/// `retain_recent` races an update of the key it frees: K at TAT 110
/// (burst 1: cell time 10, tolerance 0); thread 1 runs
/// `retain_recent(110)`, thread 2 decides K at now 110. K is admitted in
/// every schedule, and its new TAT (120) is never lost: the retain's swap
/// fails if the update came first, and an update after the retain starts
/// from K's cells, into which the retain folded 110. Mutation caught: a retain that stores 0
/// instead of swapping from the value it read (K's update lost: TAT 0).
#[test]
fn retain_recent_never_loses_an_update() {
    loom::model(move || {
        let store = Arc::new(store());
        let runs = Arc::new(AtomicUsize::new(0));
        let k = HOME1;
        assert_eq!(decide(&store, k, 100, 10, 0, &runs), Ok(100));
        let (a, b) = (store.clone(), store.clone());
        let rb = runs.clone();
        let t1 = spawn(move || a.retain_recent(Nanos::from(110)));
        let t2 = spawn(move || decide(&b, k, 110, 10, 0, &rb));
        t1.join().unwrap();
        // From K's own TAT (update first) or its cells (retain first): 110
        // either way.
        assert_eq!(t2.join().unwrap(), Ok(110));
        assert_eq!(tat(&store, k), 120);
    });
}

/// An eviction races an update of the evicted key. Keys A (1), X (2) and
/// K (4) all have home 0 in the 2-slot table. A is at TAT 110 (it
/// booked at 100; burst 2: cell time 10, tolerance 10), X at 121 (booked
/// at 111: a caller 11 ns ahead, so a TAT of 118 or less has passed for
/// it and goes to the memory's floor, exactly; 120 goes to a generation).
/// Thread 1
/// decides A at 100; thread 2 inserts K at 100, so evicts A (the earliest
/// TAT). Either thread 1's swap lands first (the eviction's swap fails, it
/// scans again and folds A's new TAT 120), or the eviction's does (thread
/// 1's swap fails, it scans again, reinserts A, and its settler starts A
/// from the memory, which the fold raised to 110 before the evicting swap).
/// Either way thread 1 decides from 110, and A, asked again at 100, is
/// refused (its burst is spent). Both schedules are seen. Mutation caught:
/// folding after the evicting swap (thread 1 can start A from 0 and is
/// admitted from 100: a third request in A's burst of 2).
#[test]
fn an_eviction_races_an_update_of_the_evicted_key() {
    const A: u64 = 1;
    const X: u64 = 2;
    const K: u64 = 4;
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let store = Arc::new(store());
        let runs = Arc::new(AtomicUsize::new(0));
        let other = Arc::new(AtomicUsize::new(0));
        assert_eq!(decide(&store, A, 100, 10, 10, &other), Ok(100));
        assert_eq!(decide(&store, X, 111, 10, 10, &other), Ok(111));
        let (a, b) = (store.clone(), store.clone());
        let (ra, rb) = (runs.clone(), other.clone());
        let t1 = spawn(move || decide(&a, A, 100, 10, 10, &ra));
        let t2 = spawn(move || decide(&b, K, 100, 10, 10, &rb));
        assert_eq!(t1.join().unwrap(), Ok(110), "A decided from its own TAT");
        assert!(t2.join().unwrap().is_ok(), "K is new");
        assert_eq!(
            decide(&store, A, 100, 10, 10, &other),
            Err(()),
            "A's burst of 2 is spent"
        );
        // Thread 1's closure ran again: its swap lost to the eviction.
        record(runs.load(Ordering::Relaxed) > 1);
    });
    seen.assert_all(&[false, true]);
}
