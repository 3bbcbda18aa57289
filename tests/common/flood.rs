//! The flood of issue 31 (`benches/flood/README.md`), against a
//! `KeyedGate<2, CAP>` at a limit of 10 per interval of two windows:
//! established keys sending their limit, abusers sending three times it,
//! legitimate newcomers sending within it, and `flood * CAP` one-shot keys
//! per window, shuffled within each window. A ledger kept apart from the
//! table, by true key, counts every admission and every admission after
//! which a key holds more than its limit in some interval. Shared by
//! `tests/flood.rs` and the `flood` example (included with `#[path]`).

#![allow(dead_code)]

use std::collections::HashMap;

use leaparray::{Decision, KeyedGate};

#[path = "rng.rs"]
mod rng;
use rng::Rng;

/// The per-key limit per interval of two windows.
pub const LIMIT: u64 = 10;
/// Ticks per window.
pub const WINDOW: u64 = 1_000;

/// The traffic: how many of each kind and how many windows.
#[derive(Clone, Copy, Debug)]
pub struct Traffic {
    /// Established keys, each sending `LIMIT / 2` per window.
    pub established: usize,
    /// Abusers, each sending `3 * LIMIT / 2` per window.
    pub abusers: usize,
    /// New legitimate keys per window, each sending 2 to 6 requests: half
    /// in its first window, the rest in the next.
    pub newcomers: usize,
    /// One-shot flood keys per window: `flood * CAP`.
    pub flood: usize,
    /// Windows before the flood starts.
    pub calm: u64,
    /// Flood windows before the measured ones.
    pub warmup: u64,
    /// Measured windows.
    pub measured: u64,
}

impl Traffic {
    /// The issue's scenario at `flood` times `CAP` one-shot keys a window.
    pub const fn issue(flood: usize) -> Traffic {
        Traffic {
            established: 500,
            abusers: 50,
            newcomers: 200,
            flood,
            calm: 2,
            warmup: 2,
            measured: 6,
        }
    }
}

/// What a run measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Outcome {
    /// Newcomers' requests in measured windows: sent, admitted.
    pub newcomers: (u64, u64),
    /// Established keys' requests in measured windows: sent, admitted.
    pub established: (u64, u64),
    /// Flood keys' requests in measured windows: sent, admitted.
    pub flood: (u64, u64),
    /// Admissions after which some key held more than `LIMIT` in an
    /// interval of two windows (the ledger).
    pub over_limit: u64,
    /// Admissions the ledger recorded, and passes the table answered: equal.
    pub ledger: (u64, u64),
    /// Evictions and remembered insertions (`Occupancy`).
    pub evicted: u64,
    /// Insertions seeded from the memory.
    pub remembered: u64,
}

impl Outcome {
    /// A share in percent.
    pub fn pct((sent, admitted): (u64, u64)) -> f64 {
        if sent == 0 {
            100.0
        } else {
            admitted as f64 * 100.0 / sent as f64
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Established,
    Abuser,
    Newcomer,
    Flood,
}

/// Runs `traffic` against `table` with seed `seed`.
pub fn run<const CAP: usize>(table: &KeyedGate<2, CAP>, traffic: Traffic, seed: u64) -> Outcome {
    let mut rng = Rng(seed | 1);
    let mut out = Outcome::default();
    // The ledger: admissions per (key, window).
    let mut ledger: HashMap<(u64, u64), u64> = HashMap::new();
    let established: Vec<u64> = (0..traffic.established).map(|_| rng.next()).collect();
    let abusers: Vec<u64> = (0..traffic.abusers).map(|_| rng.next()).collect();
    // Newcomers of the previous window, with the requests they still send.
    let mut pending: Vec<(u64, u64)> = Vec::new();
    let windows = traffic.calm + traffic.warmup + traffic.measured;
    for w in 0..windows {
        let measured = w >= traffic.calm + traffic.warmup;
        let flooding = w >= traffic.calm;
        let mut requests: Vec<(u64, Kind)> = Vec::new();
        for &k in &established {
            requests.extend((0..LIMIT / 2).map(|_| (k, Kind::Established)));
        }
        for &k in &abusers {
            requests.extend((0..3 * LIMIT / 2).map(|_| (k, Kind::Abuser)));
        }
        for (k, rest) in pending.drain(..) {
            requests.extend((0..rest).map(|_| (k, Kind::Newcomer)));
        }
        for _ in 0..traffic.newcomers {
            let k = rng.next();
            let total = 2 + rng.below(5);
            requests.extend((0..total / 2).map(|_| (k, Kind::Newcomer)));
            pending.push((k, total - total / 2));
        }
        if flooding {
            for _ in 0..traffic.flood * CAP {
                requests.push((rng.next(), Kind::Flood));
            }
        }
        // Shuffle (Fisher-Yates).
        for i in (1..requests.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            requests.swap(i, j);
        }
        let n = requests.len() as u64;
        for (i, (key, kind)) in requests.into_iter().enumerate() {
            let now = w * WINDOW + (i as u64 * WINDOW) / n;
            let pass = table.try_acquire(key, now, 1) == Decision::Pass;
            if pass {
                out.ledger.1 += 1;
                out.ledger.0 += 1;
                let here = ledger.entry((key, w)).or_default();
                *here += 1;
                let here = *here;
                let before = w
                    .checked_sub(1)
                    .and_then(|p| ledger.get(&(key, p)))
                    .copied()
                    .unwrap_or(0);
                let after = ledger.get(&(key, w + 1)).copied().unwrap_or(0);
                if here + before > LIMIT || here + after > LIMIT {
                    out.over_limit += 1;
                }
            }
            if measured {
                let slot = match kind {
                    Kind::Established => &mut out.established,
                    Kind::Newcomer => &mut out.newcomers,
                    Kind::Flood => &mut out.flood,
                    Kind::Abuser => continue,
                };
                slot.0 += 1;
                slot.1 += u64::from(pass);
            }
        }
    }
    // The ledger's total is what it was told; recount it from the map.
    out.ledger.0 = ledger.values().sum();
    let s = table.occupancy(windows * WINDOW);
    out.evicted = s.evicted;
    out.remembered = s.remembered;
    out
}
