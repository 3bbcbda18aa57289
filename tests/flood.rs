//! Floods of keys against the keyed tables with `Overflow::Evict` (the
//! default), one test per flood of `benches/flood/README.md`, each on a
//! `KeyedGate` and a `LocalKeyedGate` of 1,024 slots: one-shot keys at 40
//! and 100 times the slots per window, 20 and 40 times packed into the
//! first tenth of each window, flood keys asking for their whole limit,
//! established callers whose clock lags a window. The ledger kept apart
//! from the table checks that no key is ever admitted over its limit and
//! that every pass is in it; each test also checks the share newcomers or
//! established keys keep (the full curve is `cargo run --release -p
//! leaparray-examples --example flood -- --curve`).

use core::num::NonZeroU64;

use leaparray::keyed::{LocalKeyedGate, Overflow};
use leaparray::KeyedGate;

#[path = "common/flood.rs"]
mod flood;
use flood::{Outcome, Traffic, LIMIT, WINDOW};

const CAP: usize = 1024;

/// The scenario at a quarter of the example's table: 12 established keys
/// and 50 newcomers a window; fewer windows under Miri.
fn scenario(flood: usize) -> Traffic {
    Traffic {
        established: 12,
        newcomers: 50,
        measured: 4,
        ..Traffic::harder(flood)
    }
}

/// Runs `traffic` on both kinds of table (and under Miri on tables of 16
/// slots, a few keys, a flood of at most twice the slots): no key over its
/// limit, the ledger holds every pass; gives both outcomes.
fn both(policy: Overflow, traffic: Traffic) -> [Outcome; 2] {
    let w = NonZeroU64::new(WINDOW).unwrap();
    if cfg!(miri) {
        let small = Traffic {
            established: 2,
            newcomers: 2,
            flood: traffic.flood.min(2),
            calm: 1,
            warmup: 1,
            measured: 1,
            ..traffic
        };
        let shared = KeyedGate::<2, 16>::new(w, LIMIT).with_overflow(policy);
        let local = LocalKeyedGate::<2, 16>::new(w, LIMIT).with_overflow(policy);
        return [flood::run(&shared, small, 1), flood::run(local, small, 1)];
    }
    let shared: Box<KeyedGate<2, CAP>> = Box::new(KeyedGate::new(w, LIMIT).with_overflow(policy));
    let local: Box<LocalKeyedGate<2, CAP>> =
        Box::new(LocalKeyedGate::new(w, LIMIT).with_overflow(policy));
    let out = [
        flood::run(&*shared, traffic, 1),
        flood::run(*local, traffic, 1),
    ];
    for (o, kind) in out.iter().zip(["KeyedGate", "LocalKeyedGate"]) {
        println!(
            "{kind} {policy:?} {traffic:?}: newcomers {:.1}%, established {:.1}%, flood {:.1}%, over the limit {}, evicted {}, remembered {}",
            Outcome::pct(o.newcomers),
            Outcome::pct(o.established),
            Outcome::pct(o.flood),
            o.over_limit,
            o.evicted,
            o.remembered
        );
        assert_eq!(o.over_limit, 0, "{kind}: no key over its limit: {o:?}");
        assert_eq!(
            o.ledger.0, o.ledger.1,
            "{kind}: the ledger holds every pass: {o:?}"
        );
        assert!(o.newcomers.0 > 0 && o.established.0 > 0 && o.flood.0 > 0);
        if policy == Overflow::Evict {
            assert!(o.evicted > 0, "{kind}: the flood evicted keys: {o:?}");
        }
    }
    out
}

/// At least `pct` percent of `(sent, admitted)`, outside Miri (whose
/// tables are too small for shares to mean anything).
fn at_least(what: &str, pct: f64, share: (u64, u64)) {
    if !cfg!(miri) {
        let got = Outcome::pct(share);
        assert!(got >= pct, "{what}: {got:.1}% of {share:?}, wanted {pct}%");
    }
}

#[test]
fn a_flood_of_40_times_the_slots_lets_newcomers_in() {
    for o in both(Overflow::Evict, scenario(40)) {
        at_least("newcomers at 40x", 95.0, o.newcomers);
        at_least("established at 40x", 99.0, o.established);
    }
}

#[test]
fn a_flood_of_100_times_the_slots_lets_newcomers_in() {
    for o in both(Overflow::Evict, scenario(100)) {
        at_least("newcomers at 100x", 90.0, o.newcomers);
        at_least("established at 100x", 99.0, o.established);
    }
}

#[test]
fn a_flood_packed_into_each_window_start_lets_newcomers_in() {
    for x in [20, 40] {
        let t = Traffic {
            flood_head: 10,
            ..scenario(x)
        };
        for o in both(Overflow::Evict, t) {
            at_least("newcomers, flood in the first tenth", 95.0, o.newcomers);
        }
    }
}

#[test]
fn flood_keys_asking_for_their_whole_limit_do_not_push_established_keys_out() {
    for x in [2, 4] {
        let t = Traffic {
            flood_n: LIMIT,
            ..scenario(x)
        };
        for o in both(Overflow::Evict, t) {
            at_least(
                "established, flood keys asking their limit",
                90.0,
                o.established,
            );
        }
    }
}

#[test]
fn established_callers_lagging_a_window_keep_their_limit() {
    let t = Traffic {
        lag: 1,
        ..scenario(5)
    };
    for o in both(Overflow::Evict, t) {
        at_least("established lagging a window", 90.0, o.established);
    }
    // Two windows behind: still exact (the share is measured, not promised).
    both(
        Overflow::Evict,
        Traffic {
            lag: 2,
            ..scenario(5)
        },
    );
}

/// `Overflow::Refuse` under the same flood: exact too (newcomers mostly
/// refused: the curve's other column).
#[test]
fn a_refusing_table_under_a_flood_admits_no_key_over_its_limit() {
    both(Overflow::Refuse, scenario(10));
}

/// Churn: 64 slots under 40 times its slots in flood keys, with abusers at
/// three times their limit evicted and returning all the time.
#[test]
fn keys_evicted_and_returning_all_the_time_stay_within_their_limit() {
    let w = NonZeroU64::new(WINDOW).unwrap();
    let traffic = Traffic {
        established: if cfg!(miri) { 2 } else { 20 },
        abusers: if cfg!(miri) { 4 } else { 120 },
        newcomers: if cfg!(miri) { 2 } else { 10 },
        flood: if cfg!(miri) { 2 } else { 40 },
        calm: 1,
        warmup: if cfg!(miri) { 0 } else { 1 },
        measured: if cfg!(miri) { 1 } else { 8 },
        ..Traffic::issue(0)
    };
    for o in [
        flood::run(&KeyedGate::<2, 64>::new(w, LIMIT), traffic, 7),
        flood::run(LocalKeyedGate::<2, 64>::new(w, LIMIT), traffic, 7),
    ] {
        assert_eq!(o.over_limit, 0, "no key over its limit: {o:?}");
        assert_eq!(o.ledger.0, o.ledger.1, "the ledger holds every pass: {o:?}");
        assert!(o.evicted > 0, "keys were evicted: {o:?}");
    }
}
