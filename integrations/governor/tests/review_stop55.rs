//! Regression tests from a hostile review of `KeyedStore`'s documented
//! bounds (`/work/helpers/review-governor-stop55.md`): a caller lagging
//! the one that evicted, the memory's 16-bit generation tags, the high
//! water's step, and arrival times past `2^63 - 1` ns. Each pins the
//! bound the crate docs state ("Guarantees", "What is not guaranteed").
//!
//! Run: `cargo test -p leaparray-governor --test review_stop55`

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::DashMapStateStore;
use governor::state::StateStore;
use governor::{Quota, RateLimiter};
use leaparray_governor::KeyedStore;

mod common;
use common::Id;

const S: u64 = 1_000_000_000;

/// A decision: the new arrival time, or the earliest time it would admit.
type Decided = Result<u64, u64>;

/// governor's GCRA for one cell with an explicit `now`, on any store:
/// `Ok(new TAT)` or `Err(earliest time it would admit)`.
fn gcra<K, S: StateStore<Key = K>>(
    store: &S,
    key: K,
    now: u64,
    t: u64,
    tau: u64,
) -> Result<u64, u64> {
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

/// A burst of one a second (`tau` 0): key 1 and 15 more keys fill the
/// probe of home 0 (`Id` hashes a key to itself: keys 1 to 17 have home 0
/// in 64 slots) at the evictor's time, key 17 evicts key 1, whose time has
/// passed for the evictor: the memory's floor holds it. A new key of a
/// caller whose clock is 1 µs behind starts from the floor: refused for
/// at most its lag, then admitted as governor's `DashMap` store admits it.
#[test]
fn a_new_key_of_a_caller_behind_the_evictor_waits_at_most_its_lag() {
    let quota = Quota::per_second(NonZeroU32::new(1).unwrap());
    let (t, tau) = (S, 0);
    let ours = KeyedStore::<u64, Id>::with_capacity_and_hasher(64, Id).with_quota(quota);
    let theirs = DashMapStateStore::<u64>::default();
    assert!(gcra(&ours, 1, S, t, tau).is_ok());
    for k in 2..=17 {
        assert_eq!(gcra(&ours, k, 2 * S, t, tau), Ok(3 * S));
    }
    let lag = 1_000;
    let behind = 2 * S - lag;
    let new = 1u64 << 63;
    match gcra(&ours, new, behind, t, tau) {
        Ok(tat) => assert_eq!(tat, behind + t),
        Err(earliest) => assert!(
            earliest <= behind + lag,
            "refused until {earliest}, {} ns past a caller {lag} ns behind",
            earliest - behind
        ),
    }
    assert_eq!(
        gcra(&ours, new, 2 * S, t, tau),
        gcra(&theirs, new, 2 * S, t, tau)
    );
}

/// The same lag with a burst of 2 (`tau` = the period): a lag shorter
/// than `tau` refuses no new key.
#[test]
fn a_new_key_of_a_caller_behind_by_less_than_tau_is_admitted() {
    let quota =
        Quota::per_second(NonZeroU32::new(1).unwrap()).allow_burst(NonZeroU32::new(2).unwrap());
    let (t, tau) = (S, S);
    let ours = KeyedStore::<u64, Id>::with_capacity_and_hasher(64, Id).with_quota(quota);
    let theirs = DashMapStateStore::<u64>::default();
    assert!(gcra(&ours, 1, 0, t, tau).is_ok());
    for k in 2..=17 {
        assert!(gcra(&ours, k, 3 * S, t, tau).is_ok());
    }
    let behind = 3 * S - S / 2;
    assert_eq!(
        gcra(&ours, 1u64 << 63, behind, t, tau),
        gcra(&theirs, 1u64 << 63, behind, t, tau)
    );
}

/// A burst of one per 3 s (`D` = 3 s, a generation 1 s, the high water's
/// step an eighth of it). Keys 1, 2, 3 fill 3 slots; key 4 evicts key 1;
/// key 1 comes back. `key1_at` sets key 1's arrival time (3 s after its
/// request); the latest written is key 3's, 6.5 s.
fn evicted_and_back(key1_at: u64) -> (Vec<Decided>, Vec<Decided>) {
    let ms = 1_000_000;
    let quota = Quota::with_period(Duration::from_secs(3)).unwrap();
    let (t, tau) = (3 * S, 0);
    let ours = KeyedStore::<u32>::with_capacity(3).with_quota(quota);
    let theirs = DashMapStateStore::<u32>::default();
    let steps = [
        (1u32, key1_at),
        (2, 3_400 * ms),
        (3, 3_500 * ms),
        (4, 3_500 * ms),
        (1, 3_600 * ms),
    ];
    steps
        .iter()
        .map(|&(k, now)| (gcra(&ours, k, now, t, tau), gcra(&theirs, k, now, t, tau)))
        .unzip()
}

/// Key 1 evicted with an arrival time `D + D / 24` or more before the
/// latest written (3.35 s against 6.5 s): every decision is governor's.
#[test]
fn exact_when_the_evicted_key_is_a_burst_period_and_a_24th_behind_the_latest_write() {
    let (ours, theirs) = evicted_and_back(350_000_000);
    assert_eq!(ours, theirs);
}

/// Key 1 evicted 3.05 s before the latest written (less than `D + D /
/// 24`): it comes back reading its arrival time (3.45 s) up to a
/// generation (`D / 3`) late, never early.
#[test]
fn an_evicted_key_sooner_than_that_reads_at_most_a_third_of_d_late() {
    let (ours, theirs) = evicted_and_back(450_000_000);
    assert_eq!(ours[..4], theirs[..4]);
    assert_eq!(theirs[4], Ok(6_600_000_000));
    match ours[4] {
        Ok(tat) => assert_eq!(tat, 6_600_000_000),
        Err(earliest) => assert!(
            (3_600_000_000..=3_450_000_000 + S).contains(&earliest),
            "refused until {earliest}"
        ),
    }
}

/// A burst of one per 3 µs (a generation 1 µs), one slot, a large memory.
/// Key 11 is evicted live (arrival time 3,000: generation 3); 65,536
/// generations later another key's fold takes generation 3's plane for
/// generation 65,539, whose 16-bit tag is 3's: key 11's untouched word
/// reads as current. Key 11, back with its time long past, is refused at
/// most until `now + D + D / 3` (an over-read for one generation), then
/// admitted as governor admits it.
#[test]
fn a_word_whose_tag_wrapped_over_reads_for_one_generation_at_most() {
    let quota = Quota::with_period(Duration::from_nanos(3_000)).unwrap();
    let (t, tau, d) = (3_000, 0, 3_000);
    let ours = KeyedStore::<u64, Id>::with_capacity_and_hasher(1, Id)
        .with_quota(quota)
        .with_memory(1 << 20);
    let theirs = DashMapStateStore::<u64>::default();
    assert!(gcra(&ours, 11, 0, t, tau).is_ok());
    assert!(gcra(&ours, 22, 0, t, tau).is_ok());
    let t1 = 65_535_500;
    assert!(gcra(&ours, 33, t1, t, tau).is_ok());
    assert!(gcra(&ours, 44, t1, t, tau).is_ok());
    let now = t1 + 1_000;
    match gcra(&ours, 11, now, t, tau) {
        Ok(tat) => assert_eq!(tat, now + t),
        Err(earliest) => {
            assert!(
                earliest <= now + d + d / 3,
                "refused until {earliest}, now {now}"
            );
            assert_eq!(
                gcra(&ours, 11, earliest, t, tau),
                gcra(&theirs, 11, earliest, t, tau)
            );
        }
    }
}

/// Quotas whose arrival times pass `2^63 - 1` ns from the start (one
/// request per `2^63` ns; a burst of 2 per `2^62` ns each): the store
/// admits what governor's `DashMap` store admits.
#[test]
fn a_quota_whose_arrival_times_pass_2_63_ns_admits_as_governor_does() {
    type L<S> = RateLimiter<u32, S, FakeRelativeClock, NoOpMiddleware<Nanos>>;
    for (period, burst) in [(1u64 << 63, 1u32), (1 << 62, 2)] {
        let quota = Quota::with_period(Duration::from_nanos(period))
            .unwrap()
            .allow_burst(NonZeroU32::new(burst).unwrap());
        let clock = FakeRelativeClock::default();
        let store = KeyedStore::with_capacity(64).with_quota(quota);
        let ours: L<KeyedStore<u32>> = RateLimiter::new(quota, store, clock.clone());
        let theirs: L<DashMapStateStore<u32>> =
            RateLimiter::new(quota, DashMapStateStore::default(), clock.clone());
        clock.advance(Duration::from_secs(1));
        for key in 0..3u32 {
            for i in 0..=burst {
                let a = ours.check_key(&key).is_ok();
                let b = theirs.check_key(&key).is_ok();
                assert_eq!(a, b, "period {period} burst {burst}: key {key} request {i}");
            }
        }
    }
}
