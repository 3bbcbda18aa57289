//! `check_key` under a flood of new keys through governor's `RateLimiter`,
//! the stores taking turns in one process: interleaved rounds (every store
//! makes `2^20` decisions in turn, each continuing its own flood), medians,
//! and the ratios of the run.
//!
//! ```text
//! cargo run --release -p leaparray-governor --example flood_vs [-- --rounds R]
//! ```
//!
//! The flood is `benches/store.rs`'s: a new key every decision, the clock
//! one microsecond on per decision, 10 per second per key (about 100,000
//! keys live at once). The stores:
//! - `KeyedStore` of 2^20 slots told the quota (the default memory of
//!   evicted keys, 32 bytes a slot): the store recycles no slot (a key's
//!   slot goes only by eviction or `retain_recent`), so once the flood
//!   has filled it every decision evicts;
//! - governor's `DashMapStateStore` with `retain_recent` and
//!   `shrink_to_fit` every 1,000,000 decisions (a second of the flood's
//!   clock), as a user of it runs them;
//! - `KeyedStore` of 65,536 slots (the flood is 1.5 times that: every
//!   decision evicts), with the default memory (2 MiB) and with
//!   `with_memory` of 1 KiB a slot (64 MiB, the setting the README gives
//!   for no lockout): what the larger memory costs a decision.
//!
//! The first two from `2 * 10^6` decisions in (both warmed up, governor's
//! store cleaned up at least once), the others from `10^6` in.

use std::hint::black_box;
use std::time::{Duration, Instant};

use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::{DashMapStateStore, ShrinkableKeyedStateStore};
use governor::state::StateStore;
use governor::RateLimiter;
use leaparray_governor::KeyedStore;

// (`benches/store.rs`'s workload; the resident key sets unused.)
#[allow(dead_code)]
#[path = "../benches/workload/mod.rs"]
mod workload;
use workload::{flood_key, flood_quota, CAP_FLOOD, FLOOD_RETAIN_EVERY};

// The rounds' argument and statistics (`store_vs` and `flood_vs`).
#[path = "common/rounds.rs"]
mod common;
use common::{load, median, rounds};

/// Decisions per store per round.
const ROUND: u64 = 1 << 20;
/// The evicting table's slots.
const SMALL: usize = 65_536;

type Limiter<S> = RateLimiter<u64, S, FakeRelativeClock, NoOpMiddleware<Nanos>>;

/// A limiter on `S` in its own flood: its clock, its next key, what it
/// runs every `FLOOD_RETAIN_EVERY` decisions.
struct Contestant<S: StateStore<Key = u64>> {
    lim: Limiter<S>,
    clock: FakeRelativeClock,
    i: u64,
    cleanup: fn(&Limiter<S>),
    refused: u64,
}

impl<S: StateStore<Key = u64>> Contestant<S> {
    fn new(store: S, cleanup: fn(&Limiter<S>), warm: u64) -> Self {
        let clock = FakeRelativeClock::default();
        let lim = RateLimiter::new(flood_quota(), store, clock.clone());
        let mut c = Contestant {
            lim,
            clock,
            i: 0,
            cleanup,
            refused: 0,
        };
        c.run(warm);
        c.refused = 0;
        c
    }

    /// `n` decisions of the flood from where it stopped (`check_cost`'s
    /// `run_flood`).
    #[inline(always)]
    fn run(&mut self, n: u64) {
        for _ in 0..n {
            self.i += 1;
            self.clock.advance(Duration::from_micros(1));
            if self.i.is_multiple_of(FLOOD_RETAIN_EVERY) {
                (self.cleanup)(&self.lim);
            }
            let r = black_box(self.lim.check_key(black_box(&flood_key(self.i))));
            self.refused += u64::from(r.is_err());
        }
    }

    /// One round; nanoseconds per decision.
    fn round(&mut self) -> f64 {
        let start = Instant::now();
        self.run(ROUND);
        start.elapsed().as_nanos() as f64 / ROUND as f64
    }
}

/// What a user of governor's stores runs periodically.
fn shrink<S: ShrinkableKeyedStateStore<u64>>(lim: &Limiter<S>) {
    lim.retain_recent();
    lim.shrink_to_fit();
}

fn main() {
    let rounds = rounds(11);
    let warm = 2 * FLOOD_RETAIN_EVERY;
    let mut ours = Contestant::new(
        KeyedStore::<u64>::with_capacity(CAP_FLOOD).with_quota(flood_quota()),
        |_| {},
        warm,
    );
    let mut dash = Contestant::new(DashMapStateStore::<u64>::default(), shrink, warm);
    let mut small = Contestant::new(
        KeyedStore::<u64>::with_capacity(SMALL).with_quota(flood_quota()),
        |_| {},
        FLOOD_RETAIN_EVERY,
    );
    let mut large = Contestant::new(
        KeyedStore::<u64>::with_capacity(SMALL)
            .with_quota(flood_quota())
            .with_memory(1024 * SMALL),
        |_| {},
        FLOOD_RETAIN_EVERY,
    );
    println!(
        "{rounds} interleaved rounds of {ROUND} flood decisions each, medians; load average at start: {}",
        load()
    );
    let mut t = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..rounds {
        t[0].push(ours.round());
        t[1].push(dash.round());
        t[2].push(small.round());
        t[3].push(large.round());
    }
    let [k, d, s, l] = t.map(median);
    let share = |c: u64| 100.0 * c as f64 / (rounds as u64 * ROUND) as f64;
    println!();
    println!("| store | ns/decision (median) | refused |");
    println!("|---|---:|---:|");
    println!(
        "| KeyedStore, {CAP_FLOOD} slots | {k:.1} | {:.2}% |",
        share(ours.refused)
    );
    println!(
        "| DashMapStateStore, retain_recent + shrink_to_fit every {FLOOD_RETAIN_EVERY} | {d:.1} | {:.2}% |",
        share(dash.refused)
    );
    println!(
        "| KeyedStore, {SMALL} slots (evicting), 32 B of memory a slot | {s:.1} | {:.2}% |",
        share(small.refused)
    );
    println!(
        "| KeyedStore, {SMALL} slots (evicting), with_memory 1 KiB a slot | {l:.1} | {:.2}% |",
        share(large.refused)
    );
    println!();
    println!(
        "KeyedStore ({CAP_FLOOD} slots) / DashMapStateStore: {:.2}x",
        k / d
    );
    println!(
        "with_memory 1 KiB / 32 B a slot ({SMALL} slots): {:.2}x",
        l / s
    );
    println!("load average at end: {}", load());
}
