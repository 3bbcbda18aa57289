//! The store's paths that governor's own stores do not have: a new key
//! whose probe is full (refused, phase 1), reuse of a slot whose arrival
//! time has passed, and the high water that keeps a late caller of a freed
//! key within its quota. Driven by governor's `RateLimiter` where a shared
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

type Lim<const CAP: usize> =
    RateLimiter<u32, KeyedStore<u32, CAP>, FakeRelativeClock, NoOpMiddleware<Nanos>>;

/// governor's single-cell GCRA closure (`Gcra::test_and_update`) for a
/// caller at `now`, cell time `t`, tolerance `tau` (all nanoseconds):
/// `Ok(new TAT)` or `Err(earliest time)`.
fn decide(store: &KeyedStore<u32, 1>, key: u32, now: u64, t: u64, tau: u64) -> Result<u64, u64> {
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

/// One slot: a second key is refused while the first key's arrival time
/// is live, whatever its own burst, and gets the slot once it passed.
#[test]
fn a_full_probe_refuses_a_new_key_until_a_time_passes() {
    let clock = FakeRelativeClock::default();
    let quota = Quota::per_second(NonZeroU32::new(1_000).unwrap());
    let lim: Lim<1> = RateLimiter::new(quota, KeyedStore::new(), clock.clone());
    assert_eq!(lim.check_key(&1), Ok(()));
    // Key 1's arrival time is 1 ms ahead: key 2 finds no room.
    let refused = lim.check_key(&2).expect_err("no room for key 2");
    // governor's own `NotUntil`, usable: a wait of at least the time left.
    assert!(refused.wait_time_from(clock.now()) >= Duration::from_millis(1));
    assert_eq!(lim.len(), 1);
    clock.advance(Duration::from_millis(1));
    // Key 1's arrival time has passed: its slot is key 2's, with the full burst.
    assert_eq!(
        lim.check_key_n(&2, NonZeroU32::new(1_000).unwrap()),
        Ok(Ok(()))
    );
    assert_eq!(lim.len(), 1);
    // And key 1 is now the one without room.
    assert!(lim.check_key(&1).is_err());
}

/// Reuse never admits a key past its quota: with one slot and two keys
/// alternating at random times (busy stretches and pauses), each key's admissions, replayed into a
/// fresh governor limiter of its own, are all admitted there too.
#[test]
fn reuse_admits_nothing_a_key_of_its_own_would_refuse() {
    let mut r = 7u64;
    let mut next = || {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        r
    };
    let quota = Quota::per_second(NonZeroU32::new(5).unwrap());
    let clock = FakeRelativeClock::default();
    let lim: Lim<1> = RateLimiter::new(quota, KeyedStore::new(), clock.clone());
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
/// (at 110) frees key 1 (arrival time 110); a late caller of key 1 at 105
/// (burst 1, one cell per 10) is refused, as it would be had the slot
/// stayed.
#[test]
fn a_late_caller_of_a_freed_key_starts_from_the_high_water() {
    let store = KeyedStore::<u32, 1>::new();
    assert_eq!(decide(&store, 1, 100, 10, 0), Ok(110));
    store.retain_recent(Nanos::from(110));
    assert!(store.is_empty());
    assert_eq!(decide(&store, 1, 105, 10, 0), Err(110));
    // A caller at or after the high water decides as for a new key.
    assert_eq!(decide(&store, 1, 110, 10, 0), Ok(120));
}

/// Reuse on a full probe takes a slot only once its arrival time has
/// passed for the caller: key 2 is refused at 105 (key 1's 110 is live) and
/// takes the slot at 111; key 1 is then the key with no room.
#[test]
fn reuse_takes_a_slot_whose_time_passed() {
    let store = KeyedStore::<u32, 1>::new();
    assert_eq!(decide(&store, 1, 100, 10, 0), Ok(110));
    // At 105 key 1's arrival time is live: no room for key 2.
    assert_eq!(decide(&store, 2, 105, 10, 0).map_err(|_| ()), Err(()));
    assert_eq!(decide(&store, 2, 111, 10, 0), Ok(121));
    assert!(store.contains_key(&2) && !store.contains_key(&1));
    assert_eq!(decide(&store, 1, 112, 10, 0).map_err(|_| ()), Err(()));
}
