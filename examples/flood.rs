//! The flood of issue 31 against a `KeyedGate<2, 4096>` (limit 10 per
//! interval of two windows): legitimate newcomers admitted, established
//! keys' limit kept and over-limit admissions (a ledger kept apart from
//! the table), as the flood of one-shot keys grows from 5 to 40 times the
//! table's slots per window, with `Overflow::Evict` and `Overflow::Refuse`.
//!
//! Then the cost per decision (one thread, wall clock, a rough figure: the
//! benchmarks in `benches/` are the measurements): keys within their
//! table's room, and a flood of new keys, per policy.
//!
//! ```text
//! cargo run --release --manifest-path examples/Cargo.toml --example flood
//! ```

use core::num::NonZeroU64;
use std::hint::black_box;
use std::time::Instant;

use leaparray::keyed::Overflow;
use leaparray::KeyedGate;

#[path = "../tests/common/flood.rs"]
mod flood;
use flood::{Outcome, Traffic, LIMIT, WINDOW};

const CAP: usize = 4096;

fn main() {
    println!("KeyedGate<2, {CAP}>, limit {LIMIT} per 2 windows; seed 1; 6 measured windows after 2 calm + 2 flood warm-up");
    println!("| flood / window | policy | newcomers admitted % | established kept % | flood admitted % | over-limit | evicted | remembered |");
    println!("|---|---|---|---|---|---|---|---|");
    for x in [5usize, 10, 20, 40] {
        for policy in [Overflow::Evict, Overflow::Refuse] {
            let table: Box<KeyedGate<2, CAP>> = Box::new(
                KeyedGate::new(NonZeroU64::new(WINDOW).unwrap(), LIMIT).with_overflow(policy),
            );
            let o = flood::run(&table, Traffic::issue(x), 1);
            assert_eq!(o.ledger.0, o.ledger.1, "the ledger holds every pass");
            println!(
                "| {x}x | {policy:?} | {:.1} | {:.1} | {:.1} | {} | {} | {} |",
                Outcome::pct(o.newcomers),
                Outcome::pct(o.established),
                Outcome::pct(o.flood),
                o.over_limit,
                o.evicted,
                o.remembered
            );
        }
    }
    println!();
    println!("| cost per decision (ns) | policy | 2,048 resident keys, round robin | a new key each decision (flood) |");
    println!("|---|---|---|---|");
    for policy in [Overflow::Evict, Overflow::Refuse] {
        let table: Box<KeyedGate<2, CAP>> = Box::new(
            KeyedGate::new(NonZeroU64::new(WINDOW).unwrap(), u64::from(u16::MAX >> 1))
                .with_overflow(policy),
        );
        const ROUNDS: u64 = 4_000_000;
        let t0 = Instant::now();
        for i in 0..ROUNDS {
            let key = (i % 2_048).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let _ = black_box(table.try_acquire(key, i / 1_000, 1));
        }
        let resident = t0.elapsed().as_nanos() as f64 / ROUNDS as f64;
        let t0 = Instant::now();
        for i in 0..ROUNDS {
            let key = (i + (1 << 40)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let _ = black_box(table.try_acquire(key, 4_000 + i / 1_000, 1));
        }
        let flood = t0.elapsed().as_nanos() as f64 / ROUNDS as f64;
        println!("| | {policy:?} | {resident:.1} | {flood:.1} |");
    }
}
