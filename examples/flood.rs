//! Floods of keys against a `KeyedGate<2, 4096>` (limit 10 per interval of
//! two windows): the share of their requests legitimate newcomers and
//! established keys keep, and admissions over a key's limit (a ledger kept
//! apart from the table), for the floods of `benches/flood/README.md`:
//! one-shot keys spread over each window from 5 to 200 times the table's
//! slots, floods packed into the first tenth of each window, flood keys
//! that ask for their whole limit, and established callers whose clock
//! lags. `Overflow::Evict` (the default) beside `Overflow::Refuse`.
//!
//! ```text
//! cargo run --release -p leaparray-examples --example flood            # the tables
//! cargo run --release -p leaparray-examples --example flood -- --curve # and the curve to 200x
//! ```

use core::num::NonZeroU64;

use leaparray::keyed::{HeapKeyedGate, Overflow};

#[path = "../tests/common/flood.rs"]
mod flood;
use flood::{Outcome, Traffic, LIMIT, WINDOW};

const CAP: usize = 4096;

fn table(policy: Overflow) -> HeapKeyedGate<2> {
    HeapKeyedGate::new(CAP, NonZeroU64::new(WINDOW).unwrap(), LIMIT).with_overflow(policy)
}

fn row(what: &str, policy: Overflow, t: Traffic) {
    let o = flood::run(table(policy), t, 1);
    assert_eq!(o.ledger.0, o.ledger.1, "the ledger holds every pass");
    println!(
        "| {what} | {policy:?} | {:.1} | {:.1} | {:.1} | {} | {} | {} |",
        Outcome::pct(o.newcomers),
        Outcome::pct(o.established),
        Outcome::pct(o.flood),
        o.over_limit,
        o.evicted,
        o.remembered
    );
}

fn main() {
    let curve = std::env::args().any(|a| a == "--curve");
    println!("KeyedGate<2, {CAP}>, limit {LIMIT} per 2 windows; 50 established keys, 200 newcomers a window; seed 1; 6 measured windows after 2 calm + 2 flood warm-up");
    println!();
    println!("| flood per window | policy | newcomers admitted % | established kept % | flood admitted % | over the limit | evicted | remembered |");
    println!("|---|---|---|---|---|---|---|---|");
    for x in [20, 40, 100] {
        row(
            &format!("{x}x uniform"),
            Overflow::Evict,
            Traffic::harder(x),
        );
    }
    for x in [20, 40] {
        let t = Traffic {
            flood_head: 10,
            ..Traffic::harder(x)
        };
        row(
            &format!("{x}x, first 10% of each window"),
            Overflow::Evict,
            t,
        );
    }
    for x in [2, 4] {
        let t = Traffic {
            flood_n: LIMIT,
            ..Traffic::harder(x)
        };
        row(&format!("{x}x, each asking {LIMIT}"), Overflow::Evict, t);
    }
    for (x, lag) in [(5, 1), (5, 2), (20, 1), (20, 2)] {
        let t = Traffic {
            lag,
            ..Traffic::harder(x)
        };
        row(
            &format!("{x}x, established lagging {lag}"),
            Overflow::Evict,
            t,
        );
    }
    if curve {
        println!();
        println!("| flood per window (uniform) | policy | newcomers admitted % | established kept % | flood admitted % | over the limit | evicted | remembered |");
        println!("|---|---|---|---|---|---|---|---|");
        for x in [5, 10, 20, 40, 60, 80, 100, 150, 200] {
            for policy in [Overflow::Evict, Overflow::Refuse] {
                row(&format!("{x}x"), policy, Traffic::harder(x));
            }
        }
    }
}
