//! Keyed tables on the heap (`alloc`): built in place whatever their size
//! and the build profile, and deciding exactly as the tables of the same
//! capacity built by value.

use std::num::NonZeroU64;

use leaparray::keyed::{
    HeapKeyedGate, HeapLocalKeyedGate, KeyedError, KeyedTable, LocalKeyedGate, Overflow,
};
use leaparray::{Decision, KeyedGate};

#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

const BIG: usize = 1 << 20;

fn w() -> NonZeroU64 {
    NonZeroU64::new(500).unwrap()
}

/// A 2^20-slot table of each kind (48 MiB each), built and used on a
/// thread with std's default stack (2 MiB, less than one of them): in a
/// debug build a table passed by value would overflow it.
#[test]
#[cfg_attr(
    miri,
    ignore = "four 48 MiB tables: hours under Miri, and Miri's stack is not std's"
)]
fn a_table_of_2_to_the_20_slots_is_built_on_a_default_stack() {
    std::thread::spawn(|| {
        let shared = KeyedGate::<2, BIG>::boxed(w(), 10);
        let heap = HeapKeyedGate::<2>::new(BIG, w(), 10);
        let mut local = LocalKeyedGate::<2, BIG>::boxed(w(), 10);
        let mut heap_local = HeapLocalKeyedGate::<2>::new(BIG, w(), 10);
        for key in 0..50_000u64 {
            assert_eq!(shared.try_acquire(key, 0, 10), Decision::Pass);
            assert_eq!(heap.try_acquire(key, 0, 10), Decision::Pass);
            assert_eq!(local.try_acquire(key, 0, 10), Decision::Pass);
            assert_eq!(heap_local.try_acquire(key, 0, 10), Decision::Pass);
        }
        for key in (0..50_000u64).step_by(97) {
            assert_eq!(shared.try_acquire(key, 999, 1), Decision::Block);
            assert_eq!(heap.try_acquire(key, 999, 1), Decision::Block);
            assert_eq!(local.try_acquire(key, 999, 1), Decision::Block);
            assert_eq!(heap_local.try_acquire(key, 999, 1), Decision::Block);
        }
        for t in [&shared as &dyn KeyedTable, &heap, &local, &heap_local] {
            assert_eq!(t.capacity(), BIG);
            assert_eq!(t.occupancy(999).resident, 50_000);
        }
    })
    .join()
    .unwrap();
}

/// One random walk of requests (keys colliding in small tables, probes
/// full, eviction, windows moving and going back), decided by a table built
/// by value and by its twin on the heap: every answer equal.
fn twins<const CAP: usize>(rng: &mut Rng, overflow: Overflow, seed: u64) {
    let limit = 1 + rng.below(8);
    let a = KeyedGate::<2, CAP>::new(w(), limit)
        .with_overflow(overflow)
        .with_seed(seed);
    let b = HeapKeyedGate::<2>::new(CAP, w(), limit)
        .with_overflow(overflow)
        .with_seed(seed);
    let mut c = LocalKeyedGate::<2, CAP>::new(w(), limit)
        .with_overflow(overflow)
        .with_seed(seed);
    let mut d = HeapLocalKeyedGate::<2>::new(CAP, w(), limit)
        .with_overflow(overflow)
        .with_seed(seed);
    let keys = 1 + rng.below(4 * CAP as u64);
    let mut now = 0u64;
    // Under Miri 100 steps a table (about two minutes for the whole test).
    for _ in 0..if cfg!(miri) { 100 } else { 3_000 } {
        now = match rng.below(10) {
            0 => now.saturating_sub(rng.below(1_500)),
            1 => now + rng.below(3_000),
            _ => now + rng.below(20),
        };
        let key = rng.below(keys);
        let n = rng.below(limit + 2);
        match rng.below(6) {
            0 => {
                let reqs: Vec<(u64, u64)> = (0..1 + rng.below(40))
                    .map(|_| (rng.below(keys), rng.below(limit + 1)))
                    .collect();
                let mut out: [Vec<Decision>; 4] =
                    core::array::from_fn(|_| vec![Decision::Block; reqs.len()]);
                let [oa, ob, oc, od] = &mut out;
                assert_eq!(a.try_acquire_burst(now, &reqs, oa), reqs.len());
                assert_eq!(b.try_acquire_burst(now, &reqs, ob), reqs.len());
                assert_eq!(c.try_acquire_burst(now, &reqs, oc, |_| ()), reqs.len());
                assert_eq!(d.try_acquire_burst(now, &reqs, od, |_| ()), reqs.len());
                assert!(oa == ob && ob == oc && oc == od, "burst at {now}: {out:?}");
            }
            1 => {
                let r = a.remaining(key, now);
                assert_eq!((b.remaining(key, now), c.remaining(key, now)), (r, r));
                assert_eq!(d.remaining(key, now), r);
            }
            2 => {
                let r = a.retry_after(key, now, n);
                assert_eq!(
                    (b.retry_after(key, now, n), c.retry_after(key, now, n)),
                    (r, r)
                );
                assert_eq!(d.retry_after(key, now, n), r);
            }
            3 => {
                let (x, y) = (
                    a.try_acquire_headroom(key, now, n),
                    b.try_acquire_headroom(key, now, n),
                );
                assert_eq!(x, y, "headroom of {key} at {now}");
                assert_eq!(c.try_acquire(key, now, n), x.0);
                assert_eq!(d.try_acquire(key, now, n), x.0);
            }
            _ => {
                let x = a.try_acquire(key, now, n);
                assert_eq!(b.try_acquire(key, now, n), x, "{key} x {n} at {now}");
                assert_eq!(c.try_acquire(key, now, n), x);
                assert_eq!(d.try_acquire(key, now, n), x);
            }
        }
    }
    let o = a.occupancy(now);
    assert_eq!(
        (b.occupancy(now), c.occupancy(now), d.occupancy(now)),
        (o, o, o)
    );
}

/// Capacities of 1, 3, 16, 17 and 64 (two not powers of two, and tables
/// smaller and larger than a probe), every overflow policy, random seeds.
#[test]
fn a_heap_table_decides_as_the_table_of_its_capacity_built_by_value() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let rounds = if cfg!(miri) { 1 } else { 8 };
    for _ in 0..rounds {
        for overflow in [Overflow::Evict, Overflow::Refuse, Overflow::Admit] {
            let seed = rng.next();
            twins::<1>(&mut rng, overflow, seed);
            twins::<3>(&mut rng, overflow, seed);
            twins::<16>(&mut rng, overflow, seed);
            twins::<17>(&mut rng, overflow, seed);
            twins::<64>(&mut rng, overflow, seed);
        }
    }
}

/// A table whose memory of evicted keys is past 1 MiB (2^16 slots: 2 MiB),
/// where a shared table's evictor loads its keys' memory lines early: under
/// a flood of new keys (4 a slot each window, each asking 1 to 3) it
/// evicts, and decides exactly as the single-writer table of the same
/// capacity and seed, which never loads early.
#[test]
#[cfg_attr(
    miri,
    ignore = "2^20 decisions on two 3 MiB tables: minutes under Miri"
)]
fn a_table_with_a_far_memory_evicts_as_the_local_table_does() {
    const CAP: usize = 1 << 16;
    let a = HeapKeyedGate::<2>::new(CAP, w(), 3).with_seed(7);
    let mut b = HeapLocalKeyedGate::<2>::new(CAP, w(), 3).with_seed(7);
    let mut rng = Rng(0x5eed_0000_0000_f00d);
    let keys = 8 * CAP as u64;
    for i in 0..(1u64 << 20) {
        // A window every 2^18 decisions: four new keys a slot each window;
        // every 16th request an old key comes back.
        let now = (i * 500) >> 18;
        let key = if i % 16 == 0 { rng.below(keys) } else { i };
        let n = 1 + rng.below(3);
        let x = a.try_acquire(key, now, n);
        assert_eq!(b.try_acquire(key, now, n), x, "{key} x {n} at {now}");
    }
    let (oa, ob) = (a.occupancy(1_000), b.occupancy(1_000));
    assert!(oa.evicted > 3 * CAP as u64, "{oa:?}");
    assert_eq!(oa, ob);
}

/// Bad input: no capacity, a limit that does not fit, an allocation that
/// cannot be made; an error from `try_new`, a panic with the reason from
/// `new`.
#[test]
fn bad_capacities_and_limits_are_errors() {
    assert_eq!(
        HeapKeyedGate::<2>::try_new(0, w(), 1).unwrap_err(),
        KeyedError::ZeroCapacity
    );
    assert_eq!(
        HeapLocalKeyedGate::<2>::try_new(0, w(), 1).unwrap_err(),
        KeyedError::ZeroCapacity
    );
    let huge = usize::MAX / 8;
    assert_eq!(
        HeapKeyedGate::<2>::try_new(huge, w(), 1).unwrap_err(),
        KeyedError::OutOfMemory { capacity: huge }
    );
    assert_eq!(
        KeyedGate::<4, 8>::try_boxed(w(), 128).unwrap_err(),
        KeyedError::LimitTooLarge { max: 127 }
    );
    let message = |p: Box<dyn std::any::Any + Send>| match p.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => p.downcast_ref::<&str>().unwrap().to_string(),
    };
    let zero = std::panic::catch_unwind(|| HeapKeyedGate::<2>::new(0, w(), 1)).unwrap_err();
    assert_eq!(
        message(zero),
        "HeapKeyedGate::new: a keyed table needs at least one slot"
    );
    let limit =
        std::panic::catch_unwind(|| HeapLocalKeyedGate::<2>::new(4, w(), 40_000)).unwrap_err();
    let msg = message(limit);
    assert!(
        msg.contains("HeapLocalKeyedGate::new") && msg.contains("32,767"),
        "{msg}"
    );
}
