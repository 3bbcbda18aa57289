//! Issue 31's flood against a `KeyedGate<2, 4096>` with `Overflow::Evict`
//! (the default): 10 times the table's slots in one-shot keys per window,
//! with established keys at their limit, abusers above it and legitimate
//! newcomers within it. Checks the ledger kept apart from the table: no key
//! is ever admitted over its limit, and every pass is in the ledger. The
//! shares admitted are printed, not asserted (their curve is measured by
//! `cargo run --release --example flood`, `benches/flood/`).

use core::num::NonZeroU64;

use leaparray::keyed::Overflow;
use leaparray::KeyedGate;

#[path = "common/flood.rs"]
mod flood;
use flood::{Outcome, Traffic, LIMIT, WINDOW};

fn check<const CAP: usize>(policy: Overflow, traffic: Traffic) {
    let table: Box<KeyedGate<2, CAP>> =
        Box::new(KeyedGate::new(NonZeroU64::new(WINDOW).unwrap(), LIMIT).with_overflow(policy));
    let o = flood::run(&table, traffic, 1);
    println!(
        "{policy:?} {}x: newcomers {:.1}%, established {:.1}%, flood {:.1}%, over-limit {}, evicted {}, remembered {}",
        traffic.flood,
        Outcome::pct(o.newcomers),
        Outcome::pct(o.established),
        Outcome::pct(o.flood),
        o.over_limit,
        o.evicted,
        o.remembered
    );
    assert_eq!(o.over_limit, 0, "no key over its limit: {o:?}");
    assert_eq!(o.ledger.0, o.ledger.1, "the ledger holds every pass: {o:?}");
    assert!(o.newcomers.0 > 0 && o.established.0 > 0 && o.flood.0 > 0);
    if policy == Overflow::Evict {
        assert!(o.evicted > 0, "the flood evicted keys: {o:?}");
    }
}

#[test]
fn a_flood_of_ten_times_the_slots_admits_no_key_over_its_limit() {
    if cfg!(miri) {
        // A table of 16 slots and a few keys of each kind.
        let small = Traffic {
            established: 2,
            abusers: 1,
            newcomers: 2,
            flood: 4,
            calm: 1,
            warmup: 1,
            measured: 1,
        };
        check::<16>(Overflow::Evict, small);
    } else {
        check::<4096>(Overflow::Evict, Traffic::issue(10));
        check::<4096>(Overflow::Refuse, Traffic::issue(10));
    }
}

/// Churn: a table of 64 slots under 40 times its slots in flood keys, with
/// abusers at three times their limit evicted and returning all the time.
#[test]
fn keys_evicted_and_returning_all_the_time_stay_within_their_limit() {
    if cfg!(miri) {
        // 16 slots, a few keys of each kind.
        let small = Traffic {
            established: 2,
            abusers: 4,
            newcomers: 2,
            flood: 2,
            calm: 1,
            warmup: 0,
            measured: 1,
        };
        check::<16>(Overflow::Evict, small);
        return;
    }
    let traffic = Traffic {
        established: 20,
        abusers: 120,
        newcomers: 10,
        flood: 40,
        calm: 1,
        warmup: 1,
        measured: 8,
    };
    check::<64>(Overflow::Evict, traffic);
}
