//! The owned keyed gate: every answer against a `KeyedGate` of the same
//! seed, capacity and policy (full probes, recycling, times going back), its
//! limit against a ledger of admissions per window, the burst's prefetch
//! hook, and bad parameters.

use std::collections::HashMap;
use std::num::NonZeroU64;

use leaparray::keyed::{KeyedError, LocalKeyedGate, Overflow};
use leaparray::Decision;
use leaparray::KeyedGate;
use proptest::prelude::*;

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

fn max_steps(n: usize) -> usize {
    if cfg!(miri) {
        (n / 20).max(2)
    } else {
        n
    }
}

/// One step of a differential run.
#[derive(Debug, Clone)]
enum Op {
    /// `try_acquire(keys[k], now, n)`.
    Acquire(usize, u64),
    /// `try_acquire_burst` of these `(k, n)`.
    Burst(Vec<(usize, u64)>),
}

/// Runs `steps` (`(dt, back, op)`: the clock moves `dt` ahead, and the call
/// is made `back` ticks before the clock: late callers) on an
/// `LocalKeyedGate<2, CAP>` and a `KeyedGate<2, CAP>` of the same seed and
/// policy: every decision, and before each step `remaining`, `retry_after`
/// and `stats`, agree.
fn matches_a_keyed_gate<const CAP: usize>(
    window: u64,
    limit: u64,
    seed: u64,
    overflow: Overflow,
    keys: &[u64],
    steps: &[(u64, u64, Op)],
) -> Result<(), TestCaseError> {
    let shared = KeyedGate::<2, CAP>::new(nz(window), limit)
        .with_seed(seed)
        .with_overflow(overflow);
    let mut owned = LocalKeyedGate::<2, CAP>::new(nz(window), limit)
        .with_seed(seed)
        .with_overflow(overflow);
    let mut clock = 0u64;
    for (dt, back, op) in steps {
        clock += dt;
        let now = clock.saturating_sub(*back);
        for &key in keys {
            prop_assert_eq!(owned.remaining(key, now), shared.remaining(key, now));
            for n in [1, limit, limit + 1] {
                prop_assert_eq!(
                    owned.retry_after(key, now, n),
                    shared.retry_after(key, now, n),
                    "retry_after key {} n {} at {}",
                    key,
                    n,
                    now
                );
            }
        }
        match op {
            Op::Acquire(k, n) => {
                let key = keys[k % keys.len()];
                prop_assert_eq!(
                    owned.try_acquire(key, now, *n),
                    shared.try_acquire(key, now, *n),
                    "key {} n {} at {}",
                    key,
                    n,
                    now
                );
            }
            Op::Burst(reqs) => {
                let reqs: Vec<(u64, u64)> = reqs
                    .iter()
                    .map(|&(k, n)| (keys[k % keys.len()], n))
                    .collect();
                let mut got = vec![Decision::Block; reqs.len()];
                prop_assert_eq!(
                    owned.try_acquire_burst(now, &reqs, &mut got, |_| ()),
                    reqs.len()
                );
                for (&(key, n), &d) in reqs.iter().zip(&got) {
                    prop_assert_eq!(
                        d,
                        shared.try_acquire(key, now, n),
                        "burst key {} n {}",
                        key,
                        n
                    );
                }
            }
        }
        prop_assert_eq!(owned.occupancy(now), shared.occupancy(now));
    }
    Ok(())
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..64, 0u64..5).prop_map(|(k, n)| Op::Acquire(k, n)),
        1 => prop::collection::vec((0usize..64, 0u64..5), 0..40).prop_map(Op::Burst),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 1 } else { 256 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Small tables and more keys than slots: probes fill, keys overflow
    /// and are recycled; callers lag the clock by up to 12 windows.
    #[test]
    fn answers_as_a_keyed_gate_of_the_same_seed(
        window in 1u64..100,
        limit in 0u64..6,
        seed in any::<u64>(),
        policy in 0u8..3,
        keys in prop::collection::hash_set(any::<u64>(), 1..24),
        steps in prop::collection::vec((0u64..300, 0u64..1_200, op()), 1..max_steps(120)),
    ) {
        let keys: Vec<u64> = keys.into_iter().collect();
        let overflow = [Overflow::Evict, Overflow::Refuse, Overflow::Admit][usize::from(policy)];
        let steps: Vec<(u64, u64, Op)> = steps
            .into_iter()
            .map(|(dt, back, op)| (dt, back * window / 100, op))
            .collect();
        matches_a_keyed_gate::<1>(window, limit, seed, overflow, &keys, &steps)?;
        matches_a_keyed_gate::<5>(window, limit, seed, overflow, &keys, &steps)?;
        matches_a_keyed_gate::<16>(window, limit, seed, overflow, &keys, &steps)?;
        matches_a_keyed_gate::<40>(window, limit, seed, overflow, &keys, &steps)?;
    }

    /// With a clock that never goes back, every admission books into its
    /// caller's window: per key, no interval of 2 windows holds more than
    /// the limit, and a key alone in a large table is admitted whenever
    /// its own ledger has room (nothing else limits it).
    #[test]
    fn no_interval_holds_more_than_the_limit(
        window in 1u64..50,
        limit in 1u64..8,
        steps in prop::collection::vec((0u64..40, 0u64..30, 1u64..4), 1..max_steps(400)),
    ) {
        let mut t = LocalKeyedGate::<2, 8>::new(nz(window), limit);
        // Per key: admitted permits per window.
        let mut ledger: HashMap<u64, HashMap<u64, u64>> = HashMap::new();
        let mut now = 0;
        for (dt, key, n) in steps {
            now += dt;
            let w = now / window;
            let mine = ledger.entry(key).or_default();
            let in_interval = |m: &HashMap<u64, u64>, last: u64| {
                m.get(&last).copied().unwrap_or(0)
                    + last.checked_sub(1).and_then(|p| m.get(&p)).copied().unwrap_or(0)
            };
            let before = in_interval(mine, w);
            match t.try_acquire(key, now, n) {
                Decision::Pass => {
                    *mine.entry(w).or_default() += n;
                    prop_assert!(
                        in_interval(mine, w) <= limit,
                        "key {} window {}: {:?}", key, w, mine
                    );
                }
                _ => {
                    // Refused only if the ledger had no room, or the key
                    // found no slot (30 keys, 8 slots).
                    if before + n <= limit {
                        prop_assert!(t.occupancy(now).overflowed > 0 || n > limit);
                    }
                }
            }
        }
    }
}

/// The burst calls the prefetch once per request, before deciding it, with
/// the address of the slot where the key's probe starts: the slot the key
/// lives in when it is alone there.
#[test]
fn the_burst_prefetches_each_home_slot_before_deciding() {
    let mut t = LocalKeyedGate::<2, 1024>::new(nz(100), 5);
    let reqs: Vec<(u64, u64)> = (0..70).map(|k| (k * 7919, 1)).collect();
    let mut out = vec![Decision::Block; reqs.len()];
    let mut seen = Vec::new();
    assert_eq!(
        t.try_acquire_burst(0, &reqs, &mut out, |p| seen.push(p as usize)),
        70
    );
    assert_eq!(out, vec![Decision::Pass; 70]);
    assert_eq!(seen.len(), 70);
    let base = &t as *const _ as usize;
    let end = base + std::mem::size_of_val(&t);
    assert!(seen.iter().all(|&p| p >= base && p + 16 <= end));
    // A slot's address is a multiple of 16 bytes from any other's.
    assert!(seen.iter().all(|&p| p.abs_diff(seen[0]) % 16 == 0));
    // Decided again, the keys are found where they were prefetched: with
    // 70 keys in 1,024 slots most are alone in their home slot, and the
    // same key always gets the same address.
    let mut again = Vec::new();
    let _ = t.try_acquire_burst(0, &reqs, &mut out, |p| again.push(p as usize));
    assert_eq!(seen, again);
    let distinct: std::collections::HashSet<usize> = seen.iter().copied().collect();
    assert!(distinct.len() > 60, "{} distinct homes", distinct.len());
}

/// The address the burst prefetches for `key`: its home slot's.
fn home_of<const CAP: usize>(t: &mut LocalKeyedGate<2, CAP>, key: u64) -> usize {
    let mut home = 0;
    let _ = t.try_acquire_burst(0, &[(key, 0)], &mut [Decision::Block], |p| {
        home = p as usize
    });
    home
}

/// A lookup stops at the first free slot of its probe, and passes slots
/// whose key is recyclable: a key that lives behind an idle key's slot is
/// still found there once that slot is recyclable, and is not handed a
/// fresh limit in it.
#[test]
fn a_key_behind_a_recyclable_slot_is_still_found() {
    let mut probe = LocalKeyedGate::<2, 2>::new(nz(100), 3);
    let idle = 1u64;
    let home = home_of(&mut probe, idle);
    let busy = (2u64..1_000)
        .find(|&k| home_of(&mut probe, k) == home)
        .expect("a key with the same home slot");
    let mut t = LocalKeyedGate::<2, 2>::new(nz(100), 3);
    assert_eq!(t.try_acquire(idle, 0, 1), Decision::Pass); // its home
    assert_eq!(t.try_acquire(busy, 350, 3), Decision::Pass); // the next slot
                                                             // At 400 (window 4) `idle`'s slot is recyclable; `busy` is full.
    assert_eq!(t.occupancy(400).recyclable, 1);
    assert_eq!(t.try_acquire(busy, 400, 1), Decision::Block);
    assert_eq!(t.remaining(busy, 400), 0);
    assert_eq!(t.retry_after(busy, 400, 1), Some(100));
    assert_eq!(
        t.occupancy(400).recycled,
        0,
        "nothing recycled for a resident key"
    );
}

/// The high-water rule, as in `KeyedGate`: a key full in window 5,
/// recycled at window 10, comes back with a clock still in window 5 and
/// finds room: it may be admitted, but its permits count from window 8 on.
#[test]
fn a_key_back_after_eviction_counts_from_the_high_water() {
    let (kept, evicted) = (1u64, 2u64);
    for z in 100u64..200 {
        let mut t = LocalKeyedGate::<2, 2>::new(nz(100), 10);
        assert_eq!(t.try_acquire(kept, 0, 1), Decision::Pass); // window 0
        assert_eq!(t.try_acquire(evicted, 550, 10), Decision::Pass); // window 5: full
        assert_eq!(t.try_acquire(z, 1_000, 1), Decision::Pass); // window 10
        if t.remaining(evicted, 550) != 10 {
            continue; // `z` recycled `kept`'s slot, not `evicted`'s
        }
        assert_eq!(t.occupancy(1_000).recycled, 1);
        assert_eq!(
            t.try_acquire(evicted, 560, 10),
            Decision::Pass,
            "room, late"
        );
        assert_eq!(t.occupancy(1_000).recycled, 2);
        assert_eq!(t.remaining(evicted, 950), 0, "its 10 count in window 8");
        assert_eq!(t.retry_after(evicted, 950, 1), Some(50));
        return;
    }
    panic!("no key in 100..200 recycles the evicted key's slot");
}

#[test]
fn a_limit_that_does_not_fit_is_an_error() {
    let w = nz(500);
    assert_eq!(
        LocalKeyedGate::<2, 8>::try_new(w, 32_768).unwrap_err(),
        KeyedError::LimitTooLarge { max: 32_767 }
    );
    assert_eq!(
        LocalKeyedGate::<2, 8>::try_new(w, u64::MAX).unwrap_err(),
        KeyedError::LimitTooLarge { max: 32_767 }
    );
    assert_eq!(
        LocalKeyedGate::<2, 8>::try_new(w, 32_767).unwrap().limit(),
        32_767
    );
}

#[test]
#[should_panic(
    expected = "LocalKeyedGate::new: the limit does not fit a key slot's word; for N = 2 the largest is 32,767"
)]
fn new_panics_with_the_reason_a_limit_does_not_fit() {
    let _ = LocalKeyedGate::<2, 8>::new(nz(500), std::hint::black_box(u64::MAX));
}

#[test]
fn bad_requests_are_decided_not_panics() {
    let w = nz(500);
    let mut t = LocalKeyedGate::<2, 8>::new(w, 3);
    // More than the limit never passes and takes no slot; times at the
    // ends of the range are decided, not a panic.
    assert_eq!(t.try_acquire(1, 0, 4), Decision::Block);
    assert_eq!(t.occupancy(0).resident, 0);
    assert_eq!(t.try_acquire(1, u64::MAX, 3), Decision::Pass);
    assert_eq!(t.try_acquire(1, u64::MAX, 1), Decision::Block);
    assert_eq!(t.retry_after(1, u64::MAX, 1), None, "never: past u64::MAX");
    assert!(format!("{t:?}").starts_with("LocalKeyedGate"));
}

/// The memory the docs state: `48 * CAP` bytes (16 of slots, 32 of the
/// memory of evicted keys) plus at most 1,024 bytes for a `KeyedGate`,
/// 496 for a `LocalKeyedGate` on 64-bit targets.
#[test]
fn the_tables_take_the_memory_their_docs_state() {
    fn over<T>(cap: usize) -> usize {
        std::mem::size_of::<T>() - 48 * cap
    }
    for keyed in [over::<KeyedGate<2, 1>>(1), over::<KeyedGate<2, 1024>>(1024)] {
        assert!(keyed <= 1_024, "KeyedGate: {keyed}");
    }
    for owned in [
        over::<LocalKeyedGate<2, 1>>(1),
        over::<LocalKeyedGate<2, 1024>>(1024),
    ] {
        assert!(owned <= 700, "LocalKeyedGate: {owned}");
        #[cfg(target_pointer_width = "64")]
        assert_eq!(owned, 496, "LocalKeyedGate: the docs say 496");
    }
}
