//! Review of issue 46: random runs of a `KeyedGate` (seeing the window each
//! booking went into) and a `LocalKeyedGate` of the same seed, with late
//! callers, far jumps, tiny capacities, N from 1 to 31 and limits where the
//! memory's ladder is not exact. Per key, every interval of `N` windows
//! holds at most the limit; a booking lands no earlier than its caller's
//! window and no later than the newest window any caller reached; both
//! tables decide alike.
//!
//! `cargo test --release --lib review46` (the ignored ones with
//! `-- --include-ignored`).

extern crate std;
use std::collections::HashMap;
use std::format;
use std::string::String;
use std::vec::Vec;

use core::num::NonZeroU64;

use super::KeyedGate;
use crate::keyed::slot::Booking;
use crate::keyed::LocalKeyedGate;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Key index, time, n.
pub(super) type Step = (u64, u64, u64);

/// Random steps: a clock that mostly moves forward a little, sometimes a
/// window or more, sometimes far (tag wrap, `2^24` windows); callers lag
/// it by up to `lag` windows now and then.
fn steps(seed: u64, len: usize, keys: u64, limit: u64, window: u64, lag: u64) -> Vec<Step> {
    let mut r = Rng(seed | 1);
    let mut clock = (1 << 30) + r.below(1 << 20);
    let mut out = Vec::with_capacity(len);
    for _ in 0..len {
        clock += match r.below(100) {
            0..=54 => 0,
            55..=84 => r.below(window),
            85..=96 => window * (1 + r.below(3)),
            97 => window * (1 << 16),
            98 => window * ((1 << 16) - 1 - r.below(3)),
            _ => window * r.below(1 << 24),
        };
        let back = match r.below(10) {
            0..=6 => 0,
            7 | 8 => r.below(window * (lag + 1)),
            _ => window * r.below(4 * lag + 1),
        };
        let key = r.below(keys);
        let n = match r.below(10) {
            0..=5 => 1,
            6 | 7 => 1 + r.below(limit.max(1)),
            _ => limit,
        };
        out.push((key, clock - back, n));
    }
    out
}

/// Runs `steps`; the first defect found, as a message.
pub(super) fn run<const N: usize, const CAP: usize>(
    limit: u64,
    window: u64,
    seed: u64,
    steps: &[Step],
) -> Result<(), String> {
    let shared = KeyedGate::<N, CAP>::new(NonZeroU64::new(window).unwrap(), limit).with_seed(seed);
    let mut local =
        LocalKeyedGate::<N, CAP>::new(NonZeroU64::new(window).unwrap(), limit).with_seed(seed);
    let mut ledger: HashMap<u64, HashMap<u64, u64>> = HashMap::new();
    let mut reached = 0u64;
    for (i, &(k, now, n)) in steps.iter().enumerate() {
        let key = 0x1000 + k;
        let c = now / window;
        reached = reached.max(c);
        let (rs, rl) = (shared.remaining(key, now), local.remaining(key, now));
        if rs != rl {
            return Err(format!(
                "step {i}: remaining shared {rs} local {rl} key {key} now {now}"
            ));
        }
        for m in [1, n.max(1), limit] {
            let (a, b) = (
                shared.retry_after(key, now, m),
                local.retry_after(key, now, m),
            );
            if a != b {
                return Err(format!(
                    "step {i}: retry_after({m}) shared {a:?} local {b:?} key {key} now {now}"
                ));
            }
        }
        let b = shared.inner.book(key, now, n);
        let d = shared.inner.decision(b_clone(&b));
        let e = local.try_acquire(key, now, n);
        if d != e {
            return Err(format!(
                "step {i}: shared {d:?} local {e:?} key {key} now {now} (window {c}) n {n}"
            ));
        }
        if shared.occupancy(now) != local.occupancy(now) {
            return Err(format!(
                "step {i}: occupancy shared {:?} local {:?}",
                shared.occupancy(now),
                local.occupancy(now)
            ));
        }
        if let Booking::In { at, .. } = b {
            if at < c || at > reached {
                return Err(format!(
                    "step {i}: key {key} window {c} booked into {at} (reached {reached})"
                ));
            }
            let m = ledger.entry(key).or_default();
            *m.entry(at).or_default() += n;
            for start in at.saturating_sub(N as u64 - 1)..=at {
                let s: u64 = (start..start + N as u64)
                    .map(|x| m.get(&x).copied().unwrap_or(0))
                    .sum();
                if s > limit {
                    return Err(format!(
                        "step {i}: key {key} now {now} (window {c}) n {n} booked into {at}: \
                         windows {start}..{} hold {s} > {limit}",
                        start + N as u64 - 1
                    ));
                }
            }
        }
    }
    if std::env::var("R46_STATS").is_ok() {
        let o = shared.occupancy(0);
        std::eprintln!(
            "N {N} CAP {CAP} limit {limit}: evicted {} remembered {} recycled {}",
            o.evicted,
            o.remembered,
            o.recycled
        );
    }
    Ok(())
}

fn b_clone(b: &Booking) -> Booking {
    match b {
        Booking::In { at, word } => Booking::In {
            at: *at,
            word: *word,
        },
        Booking::Refused => Booking::Refused,
        Booking::Counted => Booking::Counted,
        Booking::Overflowed => Booking::Overflowed,
        Booking::Nothing => Booking::Nothing,
    }
}

pub(super) fn shrink(st: &[Step], fails: impl Fn(&[Step]) -> bool) -> Vec<Step> {
    let mut lo = 1;
    while lo < st.len() && !fails(&st[..lo]) {
        lo += 1;
    }
    let mut cur: Vec<Step> = st[..lo].to_vec();
    let mut i = 0;
    while i < cur.len() {
        let mut t = cur.clone();
        t.remove(i);
        if fails(&t) {
            cur = t;
        } else {
            i += 1;
        }
    }
    cur
}

fn many<const N: usize, const CAP: usize>(limits: &[u64], seeds: u64, len: usize, lag: u64) {
    let window = 10;
    let (seeds, base) = match std::env::var("R46_SEEDS") {
        Ok(v) => (
            seeds * v.parse::<u64>().unwrap(),
            std::env::var("R46_BASE").map_or(0, |b| b.parse().unwrap()),
        ),
        // A debug build (CI's) runs a hundredth of the seeds; a release
        // build all of them.
        Err(_) if cfg!(debug_assertions) => ((seeds / 100).max(1), 0),
        Err(_) => (seeds, 0),
    };
    for &limit in limits {
        if limit > KeyedGate::<N, CAP>::max_limit() {
            continue;
        }
        for s in base + 1..=base + seeds {
            let keys = 1 + (s % 7) * (s % 5) + CAP as u64;
            let st = steps(s * 0x9e37_79b9 + limit, len, keys, limit, window, lag);
            if let Err(e) = run::<N, CAP>(limit, window, s, &st) {
                let shrunk = shrink(&st, |t| run::<N, CAP>(limit, window, s, t).is_err());
                panic!(
                    "N {N} CAP {CAP} limit {limit} seed {s}: {e}\nshrunk ({} steps): {:?}\n{:?}",
                    shrunk.len(),
                    shrunk,
                    run::<N, CAP>(limit, window, s, &shrunk)
                );
            }
        }
    }
}

const LIMITS: &[u64] = &[1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 100, 1023, 32_767];

#[test]
#[cfg_attr(
    miri,
    ignore = "random runs: minutes under Miri; the ledger and model tests cover it there"
)]
fn late_ledger_n1() {
    for lag in [1, 3] {
        many::<1, 1>(LIMITS, 200, 400, lag);
        many::<1, 2>(LIMITS, 200, 400, lag);
        many::<1, 3>(LIMITS, 200, 400, lag);
        many::<1, 17>(LIMITS, 60, 400, lag);
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "random runs: minutes under Miri; the ledger and model tests cover it there"
)]
fn late_ledger_n2() {
    for lag in [1, 3, 6] {
        many::<2, 1>(LIMITS, 200, 400, lag);
        many::<2, 2>(LIMITS, 200, 400, lag);
        many::<2, 3>(LIMITS, 200, 400, lag);
        many::<2, 17>(LIMITS, 60, 400, lag);
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "random runs: minutes under Miri; the ledger and model tests cover it there"
)]
fn late_ledger_n3_to_5() {
    for lag in [2, 6] {
        many::<3, 1>(LIMITS, 150, 400, lag);
        many::<3, 2>(LIMITS, 150, 400, lag);
        many::<4, 1>(LIMITS, 150, 400, lag);
        many::<4, 3>(LIMITS, 150, 400, lag);
        many::<5, 1>(LIMITS, 150, 400, lag);
        many::<5, 2>(LIMITS, 150, 400, lag);
        many::<5, 16>(LIMITS, 60, 400, lag);
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "random runs: minutes under Miri; the ledger and model tests cover it there"
)]
fn late_ledger_n_large() {
    for lag in [3, 10, 40] {
        many::<7, 1>(LIMITS, 100, 400, lag);
        many::<7, 2>(LIMITS, 100, 400, lag);
        many::<8, 2>(LIMITS, 100, 400, lag);
        many::<9, 3>(LIMITS, 100, 400, lag);
        many::<15, 4>(LIMITS, 60, 400, lag);
        many::<16, 4>(LIMITS, 60, 400, lag);
        many::<31, 8>(LIMITS, 60, 400, lag);
        many::<31, 7>(LIMITS, 60, 400, lag);
    }
}

/// Real threads on one small table: each thread's clock lags or leads a
/// shared one; every booking's window is recorded, and per key no interval
/// of `N` windows holds more than the limit.
fn threads<const N: usize, const CAP: usize>(limit: u64, seed: u64, keys: u64, rounds: u64) {
    use crate::sync::{AtomicU64, Ordering};
    use std::sync::Arc;
    let window = 10;
    let t = Arc::new(KeyedGate::<N, CAP>::new(
        NonZeroU64::new(window).unwrap(),
        limit,
    ));
    let clock = Arc::new(AtomicU64::new(1 << 30));
    let mut hs = Vec::new();
    for th in 0..3u64 {
        let (t, clock) = (t.clone(), clock.clone());
        hs.push(std::thread::spawn(move || {
            let mut r = Rng((seed + th).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let mut out = Vec::new();
            for _ in 0..rounds {
                if th == 0 && r.below(8) == 0 {
                    clock.fetch_add(r.below(window * 2), Ordering::Relaxed);
                }
                let now = clock.load(Ordering::Relaxed) - r.below(window * 2 * N as u64 + 1);
                let key = 0x1000 + r.below(keys);
                let n = if r.below(4) == 0 {
                    limit
                } else {
                    1 + r.below(limit)
                };
                if let Booking::In { at, .. } = t.inner.book(key, now, n) {
                    out.push((key, at, n));
                }
            }
            out
        }));
    }
    let mut ledger: HashMap<u64, HashMap<u64, u64>> = HashMap::new();
    for h in hs {
        for (key, at, n) in h.join().unwrap() {
            *ledger.entry(key).or_default().entry(at).or_default() += n;
        }
    }
    for (key, m) in &ledger {
        for &w in m.keys() {
            for start in w.saturating_sub(N as u64 - 1)..=w {
                let s: u64 = (start..start + N as u64)
                    .map(|x| m.get(&x).copied().unwrap_or(0))
                    .sum();
                assert!(
                    s <= limit,
                    "N {N} CAP {CAP} limit {limit} seed {seed}: key {key} windows {start}.. hold {s}"
                );
            }
        }
    }
    assert!(t.occupancy(0).evicted > 0);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "random runs: minutes under Miri; the ledger and model tests cover it there"
)]
fn threads_never_over() {
    let rounds = std::env::var("R46_ROUNDS").map_or(
        if cfg!(debug_assertions) {
            2_000
        } else {
            20_000
        },
        |v| v.parse().unwrap(),
    );
    let rounds = if cfg!(debug_assertions) {
        rounds / 10
    } else {
        rounds
    };
    for seed in 1..=4 {
        threads::<1, 1>(3, seed, 6, rounds);
        threads::<2, 1>(5, seed, 6, rounds);
        threads::<2, 3>(7, seed, 9, rounds);
        threads::<3, 2>(13, seed, 8, rounds);
        threads::<2, 17>(100, seed, 40, rounds);
    }
}
