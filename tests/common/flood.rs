//! Floods of keys against a keyed table at a limit of 10 per interval of
//! two windows (`benches/flood/README.md`): established keys sending half
//! their limit each window, abusers sending three times it, legitimate
//! newcomers sending within it, and `flood * capacity` flood keys per
//! window, each asking once for `flood_n` permits, spread over the window
//! or packed into its first part. Established callers may read a clock
//! that lags the others'. A ledger kept apart from the table, by true key
//! and by the window of the time each caller passed in, counts every
//! admission and every admission after which a key holds more than its
//! limit in some interval. Shared by `tests/flood.rs` and the `flood`
//! example (included with `#[path]`).

#![allow(dead_code)]

use std::collections::HashMap;

use leaparray::keyed::{HeapKeyedGate, HeapLocalKeyedGate, KeyedTable, LocalKeyedGate};
use leaparray::{Decision, KeyedGate};

#[path = "rng.rs"]
mod rng;
use rng::Rng;

/// The per-key limit per interval of two windows.
pub const LIMIT: u64 = 10;
/// Ticks per window.
pub const WINDOW: u64 = 1_000;

/// A keyed table the flood runs against: any of the four kinds.
pub trait Table: KeyedTable {
    /// One decision.
    fn decide(&mut self, key: u64, now: u64, n: u64) -> Decision;
}

impl<const CAP: usize> Table for &KeyedGate<2, CAP> {
    fn decide(&mut self, key: u64, now: u64, n: u64) -> Decision {
        self.try_acquire(key, now, n)
    }
}

impl<const CAP: usize> Table for LocalKeyedGate<2, CAP> {
    fn decide(&mut self, key: u64, now: u64, n: u64) -> Decision {
        self.try_acquire(key, now, n)
    }
}

impl Table for HeapKeyedGate<2> {
    fn decide(&mut self, key: u64, now: u64, n: u64) -> Decision {
        self.try_acquire(key, now, n)
    }
}

impl Table for HeapLocalKeyedGate<2> {
    fn decide(&mut self, key: u64, now: u64, n: u64) -> Decision {
        self.try_acquire(key, now, n)
    }
}

/// The traffic: how many of each kind, how they arrive, how many windows.
#[derive(Clone, Copy, Debug)]
pub struct Traffic {
    /// Established keys, each sending `LIMIT / 2` per window.
    pub established: usize,
    /// Windows the established keys' clock lags the others'.
    pub lag: u64,
    /// Abusers, each sending `3 * LIMIT / 2` per window.
    pub abusers: usize,
    /// New legitimate keys per window, each sending 2 to 6 requests: half
    /// in its first window, the rest in the next.
    pub newcomers: usize,
    /// Flood keys per window: `flood * capacity`.
    pub flood: usize,
    /// Permits each flood key asks for, once.
    pub flood_n: u64,
    /// The flood arrives in the first `1 / flood_head` of each window
    /// (1: spread over the whole window).
    pub flood_head: u64,
    /// Windows before the flood starts.
    pub calm: u64,
    /// Flood windows before the measured ones.
    pub warmup: u64,
    /// Measured windows.
    pub measured: u64,
}

impl Traffic {
    /// Issue 31's scenario at `flood` times the table's slots in one-shot
    /// keys a window.
    pub const fn issue(flood: usize) -> Traffic {
        Traffic {
            established: 500,
            lag: 0,
            abusers: 50,
            newcomers: 200,
            flood,
            flood_n: 1,
            flood_head: 1,
            calm: 2,
            warmup: 2,
            measured: 6,
        }
    }

    /// The harder floods' scenario: 50 established keys, 200 newcomers a
    /// window, `flood` times the slots in one-shot keys spread over each
    /// window.
    pub const fn harder(flood: usize) -> Traffic {
        Traffic {
            established: 50,
            lag: 0,
            abusers: 0,
            newcomers: 200,
            flood,
            flood_n: 1,
            flood_head: 1,
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
    /// Permits the ledger recorded, and permits the table admitted: equal.
    pub ledger: (u64, u64),
    /// Evictions (`Occupancy`).
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
pub fn run(mut table: impl Table, traffic: Traffic, seed: u64) -> Outcome {
    let cap = table.capacity();
    let mut rng = Rng(seed | 1);
    let mut out = Outcome::default();
    // The ledger: permits per (key, window of the caller's time).
    let mut ledger: HashMap<(u64, u64), u64> = HashMap::new();
    let established: Vec<u64> = (0..traffic.established).map(|_| rng.next()).collect();
    let abusers: Vec<u64> = (0..traffic.abusers).map(|_| rng.next()).collect();
    // Newcomers of the previous window, with the requests they still send.
    let mut pending: Vec<(u64, u64)> = Vec::new();
    let windows = traffic.calm + traffic.warmup + traffic.measured;
    let lag = traffic.lag * WINDOW;
    for w in traffic.lag..traffic.lag + windows {
        let measured = w >= traffic.lag + traffic.calm + traffic.warmup;
        let flooding = w >= traffic.lag + traffic.calm;
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
        // Shuffle (Fisher-Yates).
        for i in (1..requests.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            requests.swap(i, j);
        }
        // Each request's time in the window, in order; the flood's own
        // times (the first `1 / flood_head` of the window), merged in.
        let n = requests.len() as u64;
        let mut timed: Vec<(u64, u64, Kind)> = requests
            .into_iter()
            .enumerate()
            .map(|(i, (k, kind))| (w * WINDOW + (i as u64 * WINDOW) / n, k, kind))
            .collect();
        if flooding {
            let f = (traffic.flood * cap) as u64;
            let span = WINDOW / traffic.flood_head.max(1);
            timed.extend((0..f).map(|i| (w * WINDOW + (i * span) / f, rng.next(), Kind::Flood)));
            timed.sort_by_key(|&(t, _, _)| t);
        }
        for (t, key, kind) in timed {
            let (now, asked) = match kind {
                Kind::Established => (t - lag, 1),
                Kind::Flood => (t, traffic.flood_n),
                _ => (t, 1),
            };
            let pass = table.decide(key, now, asked) == Decision::Pass;
            if pass {
                out.ledger.1 += asked;
                let cw = now / WINDOW;
                let here = ledger.entry((key, cw)).or_default();
                *here += asked;
                let here = *here;
                let before = cw
                    .checked_sub(1)
                    .and_then(|p| ledger.get(&(key, p)))
                    .copied()
                    .unwrap_or(0);
                let after = ledger.get(&(key, cw + 1)).copied().unwrap_or(0);
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
    out.ledger.0 = ledger.values().sum();
    let s = table.occupancy((traffic.lag + windows) * WINDOW);
    out.evicted = s.evicted;
    out.remembered = s.remembered;
    out
}
