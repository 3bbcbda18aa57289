//! The store's paths that governor's own stores do not have: a new key
//! whose probe is full evicts the key with the earliest arrival time, an
//! evicted key returns with what it had booked (the memory of evicted
//! arrival times), and a late caller of a key freed by `retain_recent` is
//! limited by the key's freed arrival time, and a used store given a new
//! memory (`with_memory`) keeps its keys within their quota. Driven by
//! governor's `RateLimiter` where a shared
//! clock is enough, and by a copy of governor's GCRA closure
//! (`gcra::test_and_update`) where two callers need different `now`s.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, FakeRelativeClock};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::ShrinkableKeyedStateStore;
use governor::state::StateStore;
use governor::{Quota, RateLimiter};
use leaparray_governor::KeyedStore;

type Lim = RateLimiter<u32, KeyedStore<u32>, FakeRelativeClock, NoOpMiddleware<Nanos>>;

/// governor's single-cell GCRA closure (`Gcra::test_and_update`) for a
/// caller at `now`, cell time `t`, tolerance `tau` (all nanoseconds):
/// `Ok(new TAT)` or `Err(earliest time)`.
fn decide(store: &KeyedStore<u32>, key: u32, now: u64, t: u64, tau: u64) -> Result<u64, u64> {
    store.measure_and_replace(&key, |tat| {
        let tat = tat.map_or(now, Nanos::as_u64);
        let earliest = tat.saturating_sub(tau);
        if now < earliest {
            Err(earliest)
        } else {
            let next = tat.max(now) + t;
            Ok((next, Nanos::from(next)))
        }
    })
}

mod common;
use common::Id;

type IdLim = RateLimiter<u32, KeyedStore<u32, Id>, FakeRelativeClock, NoOpMiddleware<Nanos>>;

fn id_limiter(clock: &FakeRelativeClock) -> IdLim {
    let quota = Quota::per_second(NonZeroU32::new(10).unwrap());
    RateLimiter::new(
        quota,
        KeyedStore::with_capacity_and_hasher(64, Id).with_quota(quota),
        clock.clone(),
    )
}

/// A new key whose probe is full of live keys is admitted and evicts the
/// key with the earliest arrival time (the most headroom): keys `k = 1..=16`
/// book `k` of their 10 per second (arrival time `k` cells ahead), key 17
/// takes key 1's slot.
#[test]
fn a_full_probe_evicts_the_key_with_the_earliest_arrival_time() {
    let clock = FakeRelativeClock::default();
    let lim = id_limiter(&clock);
    for k in 1..=16u32 {
        let n = NonZeroU32::new(k.min(10)).unwrap();
        assert_eq!(lim.check_key_n(&k, n), Ok(Ok(())));
    }
    assert_eq!(lim.check_key(&17), Ok(()));
    let store = lim.into_state_store();
    assert!(!store.contains_key(&1), "key 1 (earliest) evicted");
    assert!((2..=17).all(|k| store.contains_key(&k)));
}

/// An evicted key comes back with what it had booked: key 1 spends its
/// burst (10) at 0, keys 2..=16 fill the probe 10 ms later, key 17 evicts
/// key 1; key 1, back 10 ms after that, is refused (a fresh start would
/// admit it) until its own arrival time allows, as governor alone would
/// decide, or up to a generation of the memory later (a third of the
/// quota's burst period of 1 s: its arrival time, 1 s, is read as the end
/// of its generation).
#[test]
fn an_evicted_key_returns_with_what_it_had_booked() {
    let clock = FakeRelativeClock::default();
    let lim = id_limiter(&clock);
    let ten = NonZeroU32::new(10).unwrap();
    assert_eq!(lim.check_key_n(&1, ten), Ok(Ok(())));
    clock.advance(Duration::from_millis(10));
    for k in 2..=16u32 {
        assert_eq!(lim.check_key_n(&k, ten), Ok(Ok(())));
    }
    assert_eq!(lim.check_key(&17), Ok(()));
    clock.advance(Duration::from_millis(10));
    // Key 1 is out of its slot (its arrival time, 1 s, was the earliest).
    let refused = lim.check_key(&1).expect_err("key 1 spent its burst at 0");
    // governor alone: one cell (100 ms) after 0, i.e. 80 ms from now; a
    // generation is 333,333,334 ns, and 1 s is read as 3 of them.
    let wait = refused.wait_time_from(clock.now());
    assert_eq!(wait, Duration::from_nanos(80_000_002));
    clock.advance(wait);
    assert_eq!(lim.check_key(&1), Ok(()));
    assert!(lim.check_key(&1).is_err());
}

/// Eviction never admits a key past its quota: with one slot and two keys
/// alternating at random times (busy stretches and pauses: each new key
/// evicts the other), each key's admissions, replayed into a fresh
/// governor limiter of its own, are all admitted there too. (One slot has
/// one block of memory, shared by both keys: each also carries the other's
/// arrival times, which only refuses more.) The store is told its quota.
#[test]
fn eviction_admits_nothing_a_key_of_its_own_would_refuse() {
    let quota = Quota::per_second(NonZeroU32::new(5).unwrap());
    two_keys_in_one_slot(quota, KeyedStore::with_capacity(1).with_quota(quota));
}

/// The same with a store told a burst period of 1 ns (generations of 1
/// ns, so a plane is taken over while its generation is still ahead): what
/// leaves a plane goes to the floor, and the keys are refused more, never
/// admitted past their quota (`src/slot.rs`, "How far above", (c)).
#[test]
fn a_store_told_too_short_a_burst_period_admits_nothing_more() {
    let quota = Quota::per_second(NonZeroU32::new(5).unwrap());
    let one_ns = Quota::with_period(Duration::from_nanos(1)).unwrap();
    two_keys_in_one_slot(quota, KeyedStore::with_capacity(1).with_quota(one_ns));
}

fn two_keys_in_one_slot(quota: Quota, store: KeyedStore<u32>) {
    let mut r = 7u64;
    let mut next = || {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        r
    };
    let clock = FakeRelativeClock::default();
    let lim: Lim = RateLimiter::new(quota, store, clock.clone());
    let mut admitted: [Vec<Duration>; 2] = [vec![], vec![]];
    let mut at = Duration::ZERO;
    for _ in 0..5_000 {
        // Mostly busy (steps under half a cell: keys reach their limit),
        // with a pause of up to 2 s one step in 20 (arrival times pass).
        let step = match next() % 20 {
            0 => Duration::from_micros(next() % 2_000_000),
            _ => Duration::from_micros(next() % 100_000),
        };
        clock.advance(step);
        at += step;
        let key = (next() % 2) as u32;
        if lim.check_key(&key).is_ok() {
            admitted[key as usize].push(at);
        }
    }
    for (key, times) in admitted.iter().enumerate() {
        assert!(times.len() > 100, "key {key}: {} admitted", times.len());
        let alone = FakeRelativeClock::default();
        let replay: RateLimiter<_, _, _, NoOpMiddleware<Nanos>> =
            RateLimiter::direct_with_clock(quota, alone.clone());
        let mut now = Duration::ZERO;
        for &t in times {
            alone.advance(t - now);
            now = t;
            assert_eq!(replay.check(), Ok(()), "key {key} at {t:?}");
        }
    }
}

/// A caller whose clock is behind the one that freed a key's slot is
/// limited as if the key still had its arrival time: `retain_recent`
/// (at 110) frees key 1 (arrival time 110, into the memory's floor); a late
/// caller of key 1 at 105 (burst 1, one cell per 10) is refused, as it
/// would be had the slot stayed.
#[test]
fn a_late_caller_of_a_freed_key_starts_from_its_freed_arrival_time() {
    let store = KeyedStore::<u32>::with_capacity(1);
    assert_eq!(decide(&store, 1, 100, 10, 0), Ok(110));
    store.retain_recent(Nanos::from(110));
    assert!(store.is_empty());
    assert_eq!(decide(&store, 1, 105, 10, 0), Err(110));
    // A caller at or after that time decides as for a new key.
    assert_eq!(decide(&store, 1, 110, 10, 0), Ok(120));
}

/// A used store given a new memory (`with_memory`) keeps every key it
/// held within its quota (folded into the new memory), and a key it never
/// saw starts fresh; a memory that cannot be allocated leaves the store
/// as it was (`try_set_memory`).
#[test]
fn a_used_store_given_a_new_memory_admits_no_key_over_its_quota() {
    let (t, tau) = (1_000, 0); // burst 1: one cell a microsecond
    let mut store = KeyedStore::<u32>::with_capacity(64);
    assert_eq!(decide(&store, 7, 5_000, t, tau), Ok(6_000));
    assert!(store.try_set_memory(usize::MAX).is_err());
    assert_eq!(decide(&store, 7, 5_100, t, tau), Err(6_000));
    let store = store.with_memory(4096);
    assert_eq!(store.memory(), 4096);
    // Key 7 spent its burst until 6,000 (read up to a generation late).
    assert!(matches!(decide(&store, 7, 5_500, t, tau), Err(e) if e >= 6_000));
    assert_eq!(decide(&store, 8, 5_500, t, tau), Ok(6_500));
}
