//! Regression tests from a hostile review of `KeyedStore`'s documented
//! bounds (crate docs, "Guarantees" and "What is not guaranteed";
//! `src/slot.rs`, "How far above" and "A TAT out of range"): a caller lagging
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

/// governor's GCRA (`test_n_all_and_update`) for `n` cells with an
/// explicit `now`, on any store.
fn gcra_n<K, S: StateStore<Key = K>>(
    store: &S,
    key: K,
    now: u64,
    t: u64,
    tau: u64,
    n: u64,
) -> Decided {
    let w = t * (n - 1);
    store.measure_and_replace(&key, |tat| {
        let tat = tat.map_or(now, Nanos::as_u64);
        let earliest = (tat + w).saturating_sub(tau);
        if now < earliest {
            Err(earliest)
        } else {
            let next = tat.max(now) + t + w;
            Ok((next, Nanos::from(next)))
        }
    })
}

/// The same for one cell.
fn gcra<K, S: StateStore<Key = K>>(store: &S, key: K, now: u64, t: u64, tau: u64) -> Decided {
    gcra_n(store, key, now, t, tau, 1)
}

/// The largest arrival time a slot holds.
const M: u64 = (1 << 63) - 1;

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
    // The floor (2 s) is ahead of this caller: it waits, at most its lag.
    let earliest = gcra(&ours, new, behind, t, tau).expect_err("the floor is ahead of the caller");
    assert!(
        earliest <= behind + lag,
        "refused until {earliest}, {} ns past a caller {lag} ns behind",
        earliest - behind
    );
    assert_eq!(
        gcra(&ours, new, 2 * S, t, tau),
        gcra(&theirs, new, 2 * S, t, tau)
    );
}

/// A burst of 2 (`tau` = the period), the floor 1 s behind the lagging
/// caller (key 1's arrival time): the new key's first request is admitted
/// as governor admits it.
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
    // The over-read happens, within its bound, and ends there.
    let earliest = gcra(&ours, 11, now, t, tau).expect_err("the wrapped word over-reads");
    assert!(
        earliest <= now + d + d / 3,
        "refused until {earliest}, now {now}"
    );
    assert_eq!(
        gcra(&ours, 11, earliest, t, tau),
        gcra(&theirs, 11, earliest, t, tau)
    );
}

/// A burst of 2 per second (`t` = `tau` = 1 s, `D` = 2 s). Key 1 is
/// admitted at 3 s (arrival time 4 s); keys 2 to 16 at 4 s, key 2 twice
/// (arrival time 6 s, the latest written: the high water). Key 17 evicts
/// key 1, whose time is `D` before the latest: the floor takes it, 4 s,
/// the evicting caller's `now`. A new key of a caller half a period
/// behind starts at the floor: its first request is admitted, and its
/// second, which governor's `DashMap` store admits, waits at most the lag
/// (up to the lag of its burst spent).
#[test]
fn a_caller_behind_spends_at_most_its_lag_of_a_new_keys_burst() {
    let quota =
        Quota::per_second(NonZeroU32::new(1).unwrap()).allow_burst(NonZeroU32::new(2).unwrap());
    let (t, tau) = (S, S);
    let ours = KeyedStore::<u64, Id>::with_capacity_and_hasher(64, Id).with_quota(quota);
    let theirs = DashMapStateStore::<u64>::default();
    assert_eq!(gcra(&ours, 1, 3 * S, t, tau), Ok(4 * S));
    for k in 2..=16 {
        assert_eq!(gcra(&ours, k, 4 * S, t, tau), Ok(5 * S));
    }
    assert_eq!(gcra(&ours, 2, 4 * S, t, tau), Ok(6 * S));
    assert_eq!(gcra(&ours, 17, 4 * S, t, tau), Ok(5 * S));
    let lag = S / 2;
    let behind = 4 * S - lag;
    let new = 1u64 << 63;
    assert_eq!(gcra(&ours, new, behind, t, tau), Ok(5 * S));
    assert!(gcra(&theirs, new, behind, t, tau).is_ok());
    assert!(gcra(&theirs, new, behind, t, tau).is_ok());
    let earliest = gcra(&ours, new, behind, t, tau).expect_err("the floor spent part of the burst");
    assert!(
        earliest <= behind + lag,
        "refused until {earliest}, {} ns past a caller {lag} ns behind",
        earliest - behind
    );
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

/// A burst of one per 3 ms, 3 slots. Key 3's admission near `2^63` ns
/// writes past it (`M` stored); key 1's arrival time is more than `D + D
/// / 24` before that latest write, so key 1, evicted by key 4 and back
/// after its time passed, decides as governor's `DashMap` store decides:
/// the high water follows the stored `M` too (`src/slot.rs`, "A TAT out
/// of range").
#[test]
fn exact_after_a_write_past_2_63_ns() {
    let p: u64 = 3_000_000;
    let quota = Quota::with_period(Duration::from_nanos(p)).unwrap();
    let (t, tau) = (p, 0);
    let ours = KeyedStore::<u64, Id>::with_capacity_and_hasher(3, Id).with_quota(quota);
    let theirs = DashMapStateStore::<u64>::default();
    let tat_1 = M - p - 200_000;
    let t_3 = M - p + 1;
    for (key, now) in [
        (1u64, tat_1 - p),
        (2, tat_1 - p + 1),
        (3, t_3),
        (4, t_3),
        (1, t_3 + 1),
    ] {
        assert_eq!(
            gcra(&ours, key, now, t, tau),
            gcra(&theirs, key, now, t, tau),
            "key {key} at {now}"
        );
    }
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Near `2^63` ns, every request below `2^63 - 1 - tau`: weights, tables
/// of 1 to 4 slots (saturated keys evicted and folded), stores told the
/// quota, not told, and with a memory of one block, `retain_recent`,
/// callers up to `3 D` behind. Each key's admissions, replayed alone into
/// governor's `DashMap` store, are admitted there.
#[test]
fn near_2_63_ns_no_key_past_its_quota() {
    use governor::state::keyed::ShrinkableKeyedStateStore;
    let mut saturated = 0usize;
    for seed in 0..1000u64 {
        let mut r = seed.wrapping_mul(0x1234_5678_9abc_def1) ^ 77;
        let p = 200 + splitmix(&mut r) % 2000;
        let burst = [1u64, 1, 2, 3, 5][(splitmix(&mut r) % 5) as usize];
        let (t, tau, d) = (p, p * (burst - 1), p * burst);
        let quota = Quota::with_period(Duration::from_nanos(p))
            .unwrap()
            .allow_burst(NonZeroU32::new(burst as u32).unwrap());
        let cap = 1 + (splitmix(&mut r) % 4) as usize;
        let ours = KeyedStore::<u64, Id>::with_capacity_and_hasher(cap, Id);
        let ours = match splitmix(&mut r) % 3 {
            0 => ours.with_quota(quota),
            1 => ours,
            _ => ours.with_quota(quota).with_memory(32),
        };
        let top = M - tau - 1;
        let mut now = top - 12 * d - splitmix(&mut r) % (4 * d);
        let keys = 2 + splitmix(&mut r) % 6;
        let mut admitted = vec![];
        for _ in 0..300 {
            now = (now + splitmix(&mut r) % (d / 2 + 1)).min(top);
            let lag = if splitmix(&mut r).is_multiple_of(4) {
                splitmix(&mut r) % (3 * d + 1)
            } else {
                0
            };
            let at = now - lag;
            if splitmix(&mut r).is_multiple_of(25) {
                ours.retain_recent(Nanos::from(at));
                continue;
            }
            let key = splitmix(&mut r) % keys;
            let n = 1 + splitmix(&mut r) % burst;
            if let Ok(next) = gcra_n(&ours, key, at, t, tau, n) {
                saturated += usize::from(next > M);
                admitted.push((key, at, n));
            }
        }
        let alone = DashMapStateStore::<u64>::default();
        for &(key, at, n) in &admitted {
            assert!(
                gcra_n(&alone, key, at, t, tau, n).is_ok(),
                "seed {seed}: key {key}, {n} cells at {at}: admitted here, refused alone"
            );
        }
    }
    assert!(saturated > 0, "no admission wrote past 2^63 - 1 ns");
}
