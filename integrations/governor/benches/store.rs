//! `check_key` on governor's `RateLimiter` with three keyed stores, in one
//! run: `cargo bench -p leaparray-governor --bench store`.
//!
//! - `check_key_1k/*`: 1,000 distinct `u64` keys (cache-resident),
//!   `KeyedStore<u64, 2048>` (load 0.49).
//! - `check_key_1m/*`: 1,000,000 distinct keys, `KeyedStore<u64, 2^21>`
//!   (32 MiB, load 0.48).
//! - Each key set is inserted before measuring and then looked up in a
//!   pregenerated random order (2^22 draws from the set, cycled).
//! - `keyed_store` is this crate's `KeyedStore` told the quota (as
//!   `RateLimiter::leaparray(quota)` builds it; `keyed_store_untold`: the
//!   same store not told, which assumes a burst period of a minute),
//!   `dashmap` governor's
//!   `DashMapStateStore`, `hashmap` its `HashMapStateStore` (a mutex
//!   around a `HashMap`); all hash with SipHash-1-3 and random keys: the
//!   two governor stores with std's `RandomState`, `KeyedStore` with its
//!   default `RandomSip13` (the same function).
//! - The quota: a burst of 1,000, one cell per microsecond. The clock is
//!   governor's `FakeRelativeClock` (no clock read in the measurement),
//!   advanced 1 microsecond every 256 decisions with 1,000 keys and every
//!   4,096 with 1,000,000, so nearly every decision admits. Refusals are
//!   counted and printed.
//! - `flood/*`: a new key every decision, the clock 1 microsecond later
//!   each time, 10 per second per key (`workload::flood_quota`): the
//!   `KeyedStore` of 2^20 slots told the quota, evicting; governor's
//!   stores with `retain_recent` and `shrink_to_fit` every 1,000,000
//!   decisions (a second of the flood's clock), inside the measured
//!   closure, so their cost is amortized into the time per decision.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::{DashMapStateStore, HashMapStateStore};
use governor::state::StateStore;
use governor::RateLimiter;
use leaparray_governor::KeyedStore;

mod workload;
use workload::{
    flood_key, flood_quota, keys, quota, CAP_1K, CAP_1M, CAP_FLOOD, FLOOD_RETAIN_EVERY, SIZE_1K,
    SIZE_1M,
};

fn bench_store<S: StateStore<Key = u64>>(
    c: &mut Criterion,
    group: &str,
    name: &str,
    store: S,
    set: &[u64],
    seq: &[u64],
    every: usize,
) {
    let clock = FakeRelativeClock::default();
    let lim: RateLimiter<u64, S, FakeRelativeClock, NoOpMiddleware<Nanos>> =
        RateLimiter::new(quota(), store, clock.clone());
    let mut refused = 0u64;
    for k in set {
        refused += u64::from(lim.check_key(k).is_err());
    }
    if refused > 0 {
        eprintln!(
            "{group}/{name}: {refused} of {} keys refused at insertion",
            set.len()
        );
    }
    let (mut i, mut decided, mut refused) = (0usize, 0u64, 0u64);
    c.benchmark_group(group).bench_function(name, |b| {
        b.iter(|| {
            let k = &seq[i & (seq.len() - 1)];
            i = i.wrapping_add(1);
            if i % every == 0 {
                clock.advance(Duration::from_micros(1));
            }
            let r = black_box(lim.check_key(black_box(k)));
            decided += 1;
            refused += u64::from(r.is_err());
        })
    });
    eprintln!("{group}/{name}: {refused} of {decided} decisions refused");
}

/// The flood: one new key per decision; `cleanup` runs every
/// [`FLOOD_RETAIN_EVERY`] decisions (governor's stores: `retain_recent` and
/// `shrink_to_fit`; `KeyedStore`: nothing).
fn bench_flood<S: StateStore<Key = u64>>(
    c: &mut Criterion,
    name: &str,
    store: S,
    cleanup: fn(&RateLimiter<u64, S, FakeRelativeClock, NoOpMiddleware<Nanos>>),
) {
    let clock = FakeRelativeClock::default();
    let lim: RateLimiter<u64, S, FakeRelativeClock, NoOpMiddleware<Nanos>> =
        RateLimiter::new(flood_quota(), store, clock.clone());
    let (mut i, mut refused) = (0u64, 0u64);
    c.benchmark_group("flood").bench_function(name, |b| {
        b.iter(|| {
            i += 1;
            clock.advance(Duration::from_micros(1));
            if i.is_multiple_of(FLOOD_RETAIN_EVERY) {
                cleanup(&lim);
            }
            let r = black_box(lim.check_key(black_box(&flood_key(i))));
            refused += u64::from(r.is_err());
        })
    });
    eprintln!("flood/{name}: {refused} of {i} decisions refused");
}

fn stores(c: &mut Criterion) {
    // The flood first: its stores are the largest, dropped before the rest.
    bench_flood(
        c,
        "keyed_store",
        KeyedStore::<u64>::with_capacity(CAP_FLOOD).with_quota(flood_quota()),
        |_| {},
    );
    bench_flood(c, "dashmap", DashMapStateStore::<u64>::default(), |lim| {
        lim.retain_recent();
        lim.shrink_to_fit();
    });
    bench_flood(c, "hashmap", HashMapStateStore::<u64>::default(), |lim| {
        lim.retain_recent();
        lim.shrink_to_fit();
    });
    let (set, seq) = keys(SIZE_1K.keys, SIZE_1K.seed);
    bench_store(
        c,
        "check_key_1k",
        "keyed_store",
        KeyedStore::<u64>::with_capacity(CAP_1K).with_quota(quota()),
        &set,
        &seq,
        SIZE_1K.every,
    );
    bench_store(
        c,
        "check_key_1k",
        "dashmap",
        DashMapStateStore::<u64>::default(),
        &set,
        &seq,
        SIZE_1K.every,
    );
    bench_store(
        c,
        "check_key_1k",
        "hashmap",
        HashMapStateStore::<u64>::default(),
        &set,
        &seq,
        SIZE_1K.every,
    );
    let (set, seq) = keys(SIZE_1M.keys, SIZE_1M.seed);
    bench_store(
        c,
        "check_key_1m",
        "keyed_store",
        KeyedStore::<u64>::with_capacity(CAP_1M).with_quota(quota()),
        &set,
        &seq,
        SIZE_1M.every,
    );
    bench_store(
        c,
        "check_key_1m",
        "keyed_store_untold",
        KeyedStore::<u64>::with_capacity(CAP_1M),
        &set,
        &seq,
        SIZE_1M.every,
    );
    bench_store(
        c,
        "check_key_1m",
        "dashmap",
        DashMapStateStore::<u64>::default(),
        &set,
        &seq,
        SIZE_1M.every,
    );
    bench_store(
        c,
        "check_key_1m",
        "hashmap",
        HashMapStateStore::<u64>::default(),
        &set,
        &seq,
        SIZE_1M.every,
    );
}

criterion_group!(benches, stores);
criterion_main!(benches);
