//! `KeyedStore` against governor's `DashMapStateStore`, request for
//! request: random quotas, keys, clock steps and weights (`check_key_n`,
//! including weights past the burst), and `retain_recent` at random times,
//! both limiters on one `FakeRelativeClock`. While the store holds every
//! key the decisions are identical, `NotUntil` included.
//!
//! "Holds every key" is made certain, not likely: at most 16 distinct keys
//! per run, so a new key's probe (16 slots) always has room (at most 15
//! other keys), in tables of 16 to 64 slots (probes wrap, slots are
//! reused after `retain_recent`).
//!
//! 300 seeded runs of 2,000 requests (splitmix64; a failing run prints its
//! seed and step).
//!
//! Under a flood (many more keys than slots, so keys are evicted and come
//! back), decisions differ, but never in the key's favour: every request
//! the store admitted, replayed alone with its key's other admitted
//! requests (same times, same weights) into a fresh governor limiter on
//! its own `DashMapStateStore`, is admitted there too
//! (`under_a_flood_every_admission_replays_alone`).

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::DashMapStateStore;
use governor::state::StateStore;
use governor::{Quota, RateLimiter};
use leaparray_governor::KeyedStore;

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

type Lim<S> = RateLimiter<u32, S, FakeRelativeClock, NoOpMiddleware<Nanos>>;

fn run<S: StateStore<Key = u32> + governor::state::keyed::ShrinkableKeyedStateStore<u32>>(
    seed: u64,
    ours: S,
) {
    let mut r = seed;
    let period = Duration::from_micros(1 + splitmix(&mut r) % 1_000_000);
    let burst = 1 + (splitmix(&mut r) % 20) as u32;
    let quota = Quota::with_period(period)
        .unwrap()
        .allow_burst(NonZeroU32::new(burst).unwrap());
    let keys = 1 + splitmix(&mut r) % 16;
    let clock = FakeRelativeClock::default();
    let theirs: Lim<DashMapStateStore<u32>> =
        RateLimiter::new(quota, DashMapStateStore::default(), clock.clone());
    let ours: Lim<S> = RateLimiter::new(quota, ours, clock.clone());
    for step in 0..2_000 {
        let key = (splitmix(&mut r) % keys) as u32;
        match splitmix(&mut r) % 100 {
            0 => {
                theirs.retain_recent();
                ours.retain_recent();
                continue;
            }
            1..=30 => {}
            // Steps of up to two cells' time, in nanoseconds.
            _ => clock.advance(Duration::from_nanos(
                splitmix(&mut r) % (2 * period.as_nanos() as u64 + 1),
            )),
        }
        let n = NonZeroU32::new(1 + (splitmix(&mut r) % (u64::from(burst) + 1)) as u32).unwrap();
        let expected = theirs.check_key_n(&key, n);
        let got = ours.check_key_n(&key, n);
        assert_eq!(
            got, expected,
            "seed {seed}, step {step}: key {key}, n {n}, quota {quota:?}"
        );
    }
}

#[test]
fn same_decisions_as_dashmap_while_every_key_has_a_slot() {
    for seed in 0..100 {
        run(seed, KeyedStore::<u32>::with_capacity(16));
        run(seed + 1_000, KeyedStore::<u32>::with_capacity(17));
        run(seed + 2_000, KeyedStore::<u32>::with_capacity(64));
    }
}

/// One flood run: `cap` slots, 100 to 2,000 keys, 4,000 requests (random
/// quota, weights up to the burst, clock steps up to two cells' time).
/// Returns (admitted, refused) after checking that each key's admissions,
/// replayed alone into a fresh governor limiter, are all admitted.
fn flood(cap: usize, seed: u64) -> (usize, usize) {
    let mut r = seed;
    let period = Duration::from_micros(1 + splitmix(&mut r) % 100_000);
    let burst = 1 + (splitmix(&mut r) % 20) as u32;
    let quota = Quota::with_period(period)
        .unwrap()
        .allow_burst(NonZeroU32::new(burst).unwrap());
    let keys = 100 + splitmix(&mut r) % 1_900;
    let clock = FakeRelativeClock::default();
    let ours: Lim<KeyedStore<u32>> =
        RateLimiter::new(quota, KeyedStore::with_capacity(cap), clock.clone());
    // Per key: (time since start, weight) of each admitted request.
    let mut admitted: std::collections::HashMap<u32, Vec<(Duration, NonZeroU32)>> =
        Default::default();
    let (mut at, mut refused) = (Duration::ZERO, 0);
    for _ in 0..4_000 {
        if splitmix(&mut r) % 100 >= 30 {
            let step = Duration::from_nanos(splitmix(&mut r) % (2 * period.as_nanos() as u64 + 1));
            clock.advance(step);
            at += step;
        }
        // Half the requests from a few hot keys (they reach their limit),
        // half from all keys (the flood that evicts them).
        let key = match splitmix(&mut r) % 2 {
            0 => (splitmix(&mut r) % 8) as u32,
            _ => (splitmix(&mut r) % keys) as u32,
        };
        let n = NonZeroU32::new(1 + (splitmix(&mut r) % u64::from(burst)) as u32).unwrap();
        match ours.check_key_n(&key, n) {
            Ok(Ok(())) => admitted.entry(key).or_default().push((at, n)),
            Ok(Err(_)) => refused += 1,
            Err(e) => panic!("seed {seed}: n <= burst, yet {e:?}"),
        }
    }
    let mut total = 0;
    for (key, requests) in &admitted {
        let alone = FakeRelativeClock::default();
        let replay: Lim<DashMapStateStore<u32>> =
            RateLimiter::dashmap_with_clock(quota, alone.clone());
        let mut now = Duration::ZERO;
        for (i, &(t, n)) in requests.iter().enumerate() {
            alone.advance(t - now);
            now = t;
            assert_eq!(
                replay.check_key_n(key, n),
                Ok(Ok(())),
                "seed {seed}: key {key}'s admission {i} (at {t:?}, n {n}) is refused alone; quota {quota:?}"
            );
        }
        total += requests.len();
    }
    (total, refused)
}

#[test]
fn under_a_flood_every_admission_replays_alone() {
    let (mut admitted, mut refused) = (0, 0);
    for seed in 0..40 {
        for (a, r) in [flood(16, seed), flood(64, seed + 1_000)] {
            admitted += a;
            refused += r;
        }
    }
    // Not vacuous: the store admits and refuses in earnest (80 runs of
    // 4,000 requests).
    assert!(
        admitted > 80_000 && refused > 10_000,
        "{admitted} admitted, {refused} refused"
    );
}
