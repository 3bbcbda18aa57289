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
        run(seed, KeyedStore::<u32, 16>::new());
        run(seed + 1_000, KeyedStore::<u32, 17>::new());
        run(seed + 2_000, KeyedStore::<u32, 64>::new());
    }
}
