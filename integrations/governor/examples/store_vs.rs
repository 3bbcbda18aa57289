//! `check_key` at 1,000,000 resident keys through governor's `RateLimiter`,
//! `KeyedStore` beside governor's `DashMapStateStore` and
//! `HashMapStateStore` in one process: interleaved rounds (every store
//! makes `2^20` decisions in turn), medians, and the ratios of the run.
//!
//! ```text
//! cargo run --release -p leaparray-governor --example store_vs [-- --rounds R]
//! ```
//!
//! The workload is `benches/store.rs`'s `check_key_1m`: the same keys,
//! random order, quota, `FakeRelativeClock` and clock steps, the
//! `KeyedStore` of 2^21 slots told the quota as `RateLimiter::leaparray`
//! tells it. Every decision is admitted (checked: the run fails on a
//! refusal). Criterion times each store in a group of its own, after the
//! others' allocations; here the stores take turns, so a slower or busier
//! minute of a shared host falls on all of them.

use std::hint::black_box;
use std::time::{Duration, Instant};

use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::{DashMapStateStore, HashMapStateStore};
use governor::state::StateStore;
use governor::RateLimiter;
use leaparray_governor::KeyedStore;

// (`benches/store.rs`'s workload; the flood's and 1,000 keys' parts unused.)
#[allow(dead_code)]
#[path = "../benches/workload/mod.rs"]
mod workload;
use workload::{keys, quota, CAP_1M, SIZE_1M};

// The rounds' argument and statistics (`store_vs` and `flood_vs`).
#[path = "common/rounds.rs"]
mod common;
use common::{load, median, rounds};

/// Decisions per store per round.
const ROUND: usize = 1 << 20;

/// A limiter on `S` with its clock, the keys inserted, and its place in
/// the key sequence.
struct Contestant<S: StateStore<Key = u64>> {
    lim: RateLimiter<u64, S, FakeRelativeClock, NoOpMiddleware<Nanos>>,
    clock: FakeRelativeClock,
    i: usize,
}

impl<S: StateStore<Key = u64>> Contestant<S> {
    fn new(store: S, set: &[u64]) -> Self {
        let clock = FakeRelativeClock::default();
        let lim = RateLimiter::new(quota(), store, clock.clone());
        for k in set {
            assert!(
                lim.check_key(k).is_ok(),
                "every key is admitted at insertion"
            );
        }
        Contestant { lim, clock, i: 0 }
    }

    /// `ROUND` decisions from where the last round stopped (the body of
    /// `benches/store.rs`'s iteration); nanoseconds per decision.
    #[allow(clippy::manual_is_multiple_of)] // the clock step written as in benches/store.rs
    fn round(&mut self, seq: &[u64]) -> f64 {
        let mut refused = 0u64;
        let start = Instant::now();
        for _ in 0..ROUND {
            let k = &seq[self.i & (seq.len() - 1)];
            self.i = self.i.wrapping_add(1);
            if self.i % SIZE_1M.every == 0 {
                self.clock.advance(Duration::from_micros(1));
            }
            refused += u64::from(black_box(self.lim.check_key(black_box(k))).is_err());
        }
        let ns = start.elapsed().as_nanos() as f64 / ROUND as f64;
        assert_eq!(refused, 0, "every decision is admitted");
        ns
    }
}

fn main() {
    let rounds = rounds(11);
    let (set, seq) = keys(SIZE_1M.keys, SIZE_1M.seed);
    let mut ours = Contestant::new(
        KeyedStore::<u64>::with_capacity(CAP_1M).with_quota(quota()),
        &set,
    );
    let mut dash = Contestant::new(DashMapStateStore::<u64>::default(), &set);
    let mut hash = Contestant::new(HashMapStateStore::<u64>::default(), &set);
    println!(
        "{rounds} interleaved rounds of {ROUND} decisions each, {} keys, medians; load average at start: {}",
        set.len(),
        load()
    );
    let mut t = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..rounds {
        t[0].push(ours.round(&seq));
        t[1].push(dash.round(&seq));
        t[2].push(hash.round(&seq));
    }
    let [k, d, h] = t.map(median);
    println!();
    println!("| store | ns/decision (median) |");
    println!("|---|---:|");
    println!("| KeyedStore | {k:.1} |");
    println!("| DashMapStateStore | {d:.1} |");
    println!("| HashMapStateStore | {h:.1} |");
    println!();
    println!("KeyedStore / DashMapStateStore: {:.2}x", k / d);
    println!("KeyedStore / HashMapStateStore: {:.2}x", k / h);
    println!("load average at end: {}", load());
}
