//! Instructions (and cache misses) per `check_key`, for valgrind: one
//! store, one key set, the decisions of `benches/store.rs` (the same keys,
//! seeds, random order, quota, `FakeRelativeClock` and clock steps), with
//! the measured decisions in one `#[inline(never)]` function, `measured`,
//! so that callgrind counts only them:
//!
//! ```text
//! cargo build --profile bench -p leaparray-governor --example check_cost
//! valgrind --tool=callgrind --collect-atstart=no --cache-sim=yes \
//!     '--toggle-collect=*check_cost*measured*' \
//!     target/release/examples/check_cost keyed_store 1m
//! ```
//!
//! Arguments: the store (`keyed_store`, told the quota as
//! `RateLimiter::leaparray(quota)` tells it; `keyed_store_untold`, with
//! `1m` only: the same store not told; `dashmap`, `hashmap`) and the key
//! set (`1k`: 1,000 keys, a `KeyedStore` of 2,048 slots; `1m`: 1,000,000
//! keys, 2^21 slots; `flood`: `benches/store.rs`'s flood, a new key every
//! decision, 2^20 slots, governor's stores with `retain_recent` and
//! `shrink_to_fit` every 1,000,000 decisions), then optionally the
//! decisions measured (default 1,000,000; the flood's warm-up is always
//! 2,000,000, so that governor's stores have been cleaned up at least
//! once). Each key of the set is inserted, then `warm`
//! decisions (as many as are measured) run outside the measured function,
//! then the measured ones continue the same sequence. Instructions per
//! decision are the callgrind total over the decisions measured, and
//! include the loop's own few instructions (an index, a clock step every
//! 256 or 4,096 decisions), the same for every store.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::ShrinkableKeyedStateStore;
use governor::state::keyed::{DashMapStateStore, HashMapStateStore};
use governor::state::StateStore;
use governor::RateLimiter;
use leaparray_governor::KeyedStore;

#[path = "../benches/workload/mod.rs"]
mod workload;
use workload::{
    flood_key, flood_quota, keys, quota, CAP_1K, CAP_1M, CAP_FLOOD, FLOOD_RETAIN_EVERY, SIZE_1K,
    SIZE_1M,
};

type Limiter<S> = RateLimiter<u64, S, FakeRelativeClock, NoOpMiddleware<Nanos>>;

/// `n` decisions from position `*i` of `seq`, the clock advanced 1
/// microsecond every `every` (the body of `benches/store.rs`'s iteration);
/// returns the refusals.
#[inline(always)]
#[allow(clippy::manual_is_multiple_of)] // the clock step written as in benches/store.rs
fn run<S: StateStore<Key = u64>>(
    lim: &Limiter<S>,
    clock: &FakeRelativeClock,
    seq: &[u64],
    every: usize,
    i: &mut usize,
    n: usize,
) -> u64 {
    let mut refused = 0u64;
    for _ in 0..n {
        let k = &seq[*i & (seq.len() - 1)];
        *i = i.wrapping_add(1);
        if *i % every == 0 {
            clock.advance(Duration::from_micros(1));
        }
        let r = black_box(lim.check_key(black_box(k)));
        refused += u64::from(r.is_err());
    }
    refused
}

/// The measured decisions: callgrind's `--toggle-collect` names this.
#[inline(never)]
fn measured<S: StateStore<Key = u64>>(
    lim: &Limiter<S>,
    clock: &FakeRelativeClock,
    seq: &[u64],
    every: usize,
    i: &mut usize,
    n: usize,
) -> u64 {
    run(lim, clock, seq, every, i, n)
}

fn cost<S: StateStore<Key = u64>>(store: S, set: &[u64], seq: &[u64], every: usize, n: usize) {
    let clock = FakeRelativeClock::default();
    let lim: Limiter<S> = RateLimiter::new(quota(), store, clock.clone());
    let inserted_refused: u64 = set
        .iter()
        .map(|k| u64::from(lim.check_key(k).is_err()))
        .sum();
    let mut i = 0usize;
    let warm_refused = run(&lim, &clock, seq, every, &mut i, n);
    let refused = measured(&lim, &clock, seq, every, &mut i, n);
    println!(
        "refused: {inserted_refused} of {} at insertion, {warm_refused} of {n} warm-up, {refused} of {n} measured",
        set.len()
    );
}

/// The flood's decisions from `*i` on (`benches/store.rs`'s `bench_flood`);
/// returns the refusals.
#[inline(always)]
fn run_flood<S: StateStore<Key = u64>>(
    lim: &Limiter<S>,
    clock: &FakeRelativeClock,
    cleanup: fn(&Limiter<S>),
    i: &mut u64,
    n: usize,
) -> u64 {
    let mut refused = 0u64;
    for _ in 0..n {
        *i += 1;
        clock.advance(Duration::from_micros(1));
        if i.is_multiple_of(FLOOD_RETAIN_EVERY) {
            cleanup(lim);
        }
        let r = black_box(lim.check_key(black_box(&flood_key(*i))));
        refused += u64::from(r.is_err());
    }
    refused
}

/// The measured flood decisions: callgrind's `--toggle-collect` names this
/// too (`*check_cost*measured*`).
#[inline(never)]
fn measured_flood<S: StateStore<Key = u64>>(
    lim: &Limiter<S>,
    clock: &FakeRelativeClock,
    cleanup: fn(&Limiter<S>),
    i: &mut u64,
    n: usize,
) -> u64 {
    run_flood(lim, clock, cleanup, i, n)
}

fn cost_flood<S: StateStore<Key = u64>>(store: S, cleanup: fn(&Limiter<S>), n: usize) {
    let clock = FakeRelativeClock::default();
    let lim: Limiter<S> = RateLimiter::new(flood_quota(), store, clock.clone());
    let mut i = 0u64;
    let warm_refused = run_flood(
        &lim,
        &clock,
        cleanup,
        &mut i,
        2 * FLOOD_RETAIN_EVERY as usize,
    );
    let refused = measured_flood(&lim, &clock, cleanup, &mut i, n);
    println!(
        "refused: {warm_refused} of {} warm-up, {refused} of {n} measured",
        2 * FLOOD_RETAIN_EVERY
    );
}

/// governor's stores in the flood: what a user of them runs periodically.
fn shrink<S: ShrinkableKeyedStateStore<u64>>(lim: &Limiter<S>) {
    lim.retain_recent();
    lim.shrink_to_fit();
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let usage =
        "usage: check_cost (keyed_store|keyed_store_untold|dashmap|hashmap) (1k|1m|flood) [decisions]";
    let (Some(store), Some(size)) = (args.get(1), args.get(2)) else {
        eprintln!("{usage}");
        return ExitCode::FAILURE;
    };
    let n: usize = match args.get(3).map(|a| a.parse()) {
        None => 1_000_000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("decisions: {e}\n{usage}");
            return ExitCode::FAILURE;
        }
    };
    if size == "flood" {
        match store.as_str() {
            "keyed_store" => cost_flood(
                KeyedStore::<u64>::with_capacity(CAP_FLOOD).with_quota(flood_quota()),
                |_| {},
                n,
            ),
            "dashmap" => cost_flood(DashMapStateStore::<u64>::default(), shrink, n),
            "hashmap" => cost_flood(HashMapStateStore::<u64>::default(), shrink, n),
            _ => {
                eprintln!("{usage}");
                return ExitCode::FAILURE;
            }
        }
        return ExitCode::SUCCESS;
    }
    let w = match size.as_str() {
        "1k" => SIZE_1K,
        "1m" => SIZE_1M,
        _ => {
            eprintln!("{usage}");
            return ExitCode::FAILURE;
        }
    };
    let (set, seq) = keys(w.keys, w.seed);
    match (store.as_str(), size.as_str()) {
        ("keyed_store", "1k") => cost(
            KeyedStore::<u64>::with_capacity(CAP_1K).with_quota(quota()),
            &set,
            &seq,
            w.every,
            n,
        ),
        ("keyed_store", _) => cost(
            KeyedStore::<u64>::with_capacity(CAP_1M).with_quota(quota()),
            &set,
            &seq,
            w.every,
            n,
        ),
        ("keyed_store_untold", "1m") => cost(
            KeyedStore::<u64>::with_capacity(CAP_1M),
            &set,
            &seq,
            w.every,
            n,
        ),
        ("dashmap", _) => cost(DashMapStateStore::<u64>::default(), &set, &seq, w.every, n),
        ("hashmap", _) => cost(HashMapStateStore::<u64>::default(), &set, &seq, w.every, n),
        _ => {
            eprintln!("{usage}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
