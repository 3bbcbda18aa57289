//! Review of issue 46 (the memory of evicted keys, `start`, `raise`,
//! `value_of`): random ledger runs of `KeyedGate` and `LocalKeyedGate`
//! side by side under `Overflow::Evict`, with many seeds, N from 1 to 31,
//! tiny capacities and limits where the ladder is not exact.
//!
//! `cargo test --release --test review46 -- --include-ignored` runs the
//! ignored reproducers too.

use std::collections::HashMap;
use std::num::NonZeroU64;

use leaparray::keyed::LocalKeyedGate;
use leaparray::{Decision, KeyedGate};

#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

/// Admissions per key per window.
#[derive(Default, Debug)]
struct Ledger(HashMap<u64, HashMap<u64, u64>>);

impl Ledger {
    /// Books `n` for `key` in window `w`; the largest total of an interval
    /// of `n_windows` windows holding `w`.
    fn book(&mut self, key: u64, w: u64, n: u64, n_windows: u64) -> u64 {
        let m = self.0.entry(key).or_default();
        *m.entry(w).or_default() += n;
        let mut worst = 0;
        for start in w.saturating_sub(n_windows - 1)..=w {
            let s: u64 = (start..start + n_windows)
                .map(|x| m.get(&x).copied().unwrap_or(0))
                .sum();
            worst = worst.max(s);
        }
        worst
    }
}

/// One call of a run: key index, time, n.
type Step = (u64, u64, u64);

/// The steps of a random run: `keys` keys, times that never go back
/// (mostly small moves, sometimes a window or two, sometimes far).
fn steps(seed: u64, len: usize, keys: u64, limit: u64, window: u64) -> Vec<Step> {
    let mut r = Rng(seed | 1);
    let mut now = r.below(1 << 20);
    let mut out = Vec::with_capacity(len);
    for _ in 0..len {
        now += match r.below(100) {
            0..=59 => 0,
            60..=84 => r.below(window),
            85..=96 => window * (1 + r.below(3)),
            97 => window * (1 << 16),
            98 => window * ((1 << 16) - 1 - r.below(3)),
            _ => window * r.below(1 << 24),
        };
        let key = r.below(keys);
        let n = match r.below(10) {
            0..=5 => 1,
            6 | 7 => 1 + r.below(limit.max(1)),
            _ => limit,
        };
        out.push((key, now, n));
    }
    out
}

/// Runs `steps` on both tables; the first over-limit admission or the
/// first decision on which they differ, as a message.
fn run<const N: usize, const CAP: usize>(
    limit: u64,
    window: u64,
    seed: u64,
    steps: &[Step],
) -> Result<(), String> {
    let shared = KeyedGate::<N, CAP>::new(nz(window), limit).with_seed(seed);
    let mut local = LocalKeyedGate::<N, CAP>::new(nz(window), limit).with_seed(seed);
    let mut ledger = Ledger::default();
    for (i, &(k, now, n)) in steps.iter().enumerate() {
        let key = 0x1000 + k;
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
        let d = shared.try_acquire(key, now, n);
        let e = local.try_acquire(key, now, n);
        if d != e {
            return Err(format!(
                "step {i}: shared {d:?} local {e:?} key {key} now {now} n {n}"
            ));
        }
        if shared.occupancy(now) != local.occupancy(now) {
            return Err(format!(
                "step {i}: occupancy shared {:?} local {:?}",
                shared.occupancy(now),
                local.occupancy(now)
            ));
        }
        if d == Decision::Pass && n > 0 {
            let worst = ledger.book(key, now / window, n, N as u64);
            if worst > limit {
                return Err(format!(
                    "step {i}: key {key} at {now} (window {}) n {n}: an interval holds {worst} > {limit}",
                    now / window
                ));
            }
        }
    }
    Ok(())
}

/// Many seeds of one shape; panics with the first failure, shrunk to the
/// shortest prefix and then with single steps dropped.
fn many<const N: usize, const CAP: usize>(limits: &[u64], seeds: u64, len: usize) {
    let window = 10;
    // A debug build runs a tenth of the seeds.
    let seeds = if cfg!(debug_assertions) {
        seeds / 10
    } else {
        seeds
    };
    for &limit in limits {
        if limit > KeyedGate::<N, CAP>::max_limit() {
            continue;
        }
        for s in 1..=seeds {
            let keys = 1 + (s % 7) * (s % 5) + CAP as u64;
            let st = steps(s * 0x9e37_79b9 + limit, len, keys, limit, window);
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

fn shrink(st: &[Step], fails: impl Fn(&[Step]) -> bool) -> Vec<Step> {
    let mut cur: Vec<Step> = st.to_vec();
    // Shortest failing prefix.
    let mut lo = 1;
    while lo < cur.len() && !fails(&cur[..lo]) {
        lo += 1;
    }
    cur.truncate(lo);
    // Drop single steps while it still fails.
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

const LIMITS: &[u64] = &[1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 100, 1023, 32_767];

#[test]
fn ledger_n1() {
    many::<1, 1>(LIMITS, 300, 400);
    many::<1, 2>(LIMITS, 300, 400);
    many::<1, 3>(LIMITS, 300, 400);
    many::<1, 17>(LIMITS, 100, 400);
}

#[test]
fn ledger_n2() {
    many::<2, 1>(LIMITS, 300, 400);
    many::<2, 2>(LIMITS, 300, 400);
    many::<2, 3>(LIMITS, 300, 400);
    many::<2, 17>(LIMITS, 100, 400);
}

#[test]
fn ledger_n3_to_5() {
    many::<3, 1>(LIMITS, 200, 400);
    many::<3, 2>(LIMITS, 200, 400);
    many::<4, 1>(LIMITS, 200, 400);
    many::<4, 3>(LIMITS, 200, 400);
    many::<5, 1>(LIMITS, 200, 400);
    many::<5, 2>(LIMITS, 200, 400);
    many::<5, 16>(LIMITS, 100, 400);
}

#[test]
fn ledger_n_large() {
    many::<7, 1>(LIMITS, 200, 400);
    many::<7, 2>(LIMITS, 200, 400);
    many::<8, 2>(LIMITS, 200, 400);
    many::<8, 3>(LIMITS, 200, 400);
    many::<9, 3>(LIMITS, 200, 400);
    many::<15, 4>(LIMITS, 100, 400);
    many::<16, 4>(LIMITS, 100, 400);
    many::<31, 8>(LIMITS, 100, 400);
    // Memory too small for N planes: evicts nothing.
    many::<31, 7>(LIMITS, 100, 400);
}

/// memory.rs: "counts up to 4 (6 for limits up to 12) read exactly, and a
/// larger one reads as at most twice itself or the limit"; mod.rs: "a key
/// evicted with more than 4 in a window may come back charged up to twice
/// that, or its limit". With limit 100 the ladder is 0, 1, 2, 3, 4, 25,
/// 50, 100: a key evicted with 5 comes back charged 25 (five times its
/// count, not the limit). One slot, N = 2: A books 5, B evicts it, A
/// comes back in the same window with 75 left, not the 90 or more the
/// docs bound it by.
#[test]
#[ignore = "review: the ladder's over-read bound in memory.rs/mod.rs is false (5 reads as 25 for limit 100)"]
fn a_count_of_5_reads_at_most_twice_itself() {
    for local in [false, true] {
        let shared = KeyedGate::<2, 1>::new(nz(10), 100);
        let mut own = LocalKeyedGate::<2, 1>::new(nz(10), 100);
        let mut go = |key: u64, now: u64, n: u64| {
            if local {
                own.try_acquire(key, now, n)
            } else {
                shared.try_acquire(key, now, n)
            }
        };
        assert_eq!(go(1, 0, 5), Decision::Pass);
        assert_eq!(go(2, 0, 1), Decision::Pass); // evicts key 1 (5 in window 0)
        let left = if local {
            own.remaining(1, 0)
        } else {
            shared.remaining(1, 0)
        };
        // The docs: charged at most twice its 5 (10), or the limit (0 left).
        assert!(
            left >= 90 || left == 0,
            "local {local}: key 1 booked 5, comes back with {left} of 100 left"
        );
    }
}

/// memory.rs, "How far above the truth an estimate reads": "With `k` keys
/// folded into a plane of `W` cells a row, ... the chance that both of a
/// fresh key's cells were raised is at most about `(1 - e^(-k / W))^2`".
/// Both rows hash into the same `W = 16 * words` cells of a plane
/// (`Shape::cells`), so `k` keys raise `2k` cells there and the chance is
/// about `(1 - e^(-2k / W))^2`. `N = 1`, 64 slots (one plane of 256 words,
/// 4,096 cells): about 4,096 one-shot keys folded in one window; of 20,000
/// fresh keys, the share whose estimate is nonzero (`remaining < limit`).
#[test]
#[ignore = "review: the (1 - e^(-k/W))^2 collision bound in memory.rs is about half the measured share"]
fn fresh_keys_read_a_collision_at_most_as_often_as_the_docs_say() {
    let t = KeyedGate::<1, 64>::new(nz(10), 10);
    let mut key = 1u64 << 40;
    while t.occupancy(0).evicted < 4_096 {
        key += 1;
        assert_eq!(t.try_acquire(key, 0, 1), Decision::Pass);
    }
    let k = t.occupancy(0).evicted as f64;
    let w = 4.0 * 64.0 * 16.0;
    let fresh: u32 = 20_000;
    let raised = (0..fresh)
        .filter(|&i| t.remaining((1 << 50) + u64::from(i), 0) < 10)
        .count() as f64
        / f64::from(fresh);
    let claimed = (1.0 - (-k / w).exp()).powi(2);
    let two_rows_one_pool = (1.0 - (-2.0 * k / w).exp()).powi(2);
    eprintln!("k {k} W {w}: measured {raised:.3}, docs {claimed:.3}, two rows in one pool {two_rows_one_pool:.3}");
    assert!(
        raised <= claimed * 1.25,
        "measured {raised:.3} of fresh keys with both cells raised; the docs bound it by about {claimed:.3}"
    );
}

/// GUARANTEES: "48 * CAP bytes ... plus at most 1,024".
#[test]
fn the_header_is_at_most_1024_bytes() {
    fn h<const N: usize, const CAP: usize>() -> usize {
        std::mem::size_of::<KeyedGate<N, CAP>>() - 48 * CAP
    }
    fn l<const N: usize, const CAP: usize>() -> usize {
        std::mem::size_of::<LocalKeyedGate<N, CAP>>() - 48 * CAP
    }
    for (name, v) in [
        ("shared 1 1", h::<1, 1>()),
        ("shared 31 1", h::<31, 1>()),
        ("shared 2 4096", h::<2, 4096>()),
        ("local 2 1", l::<2, 1>()),
        ("local 31 4096", l::<31, 4096>()),
    ] {
        eprintln!("{name}: header {v}");
        assert!(v <= 1024, "{name}: {v}");
    }
}

/// GUARANTEES section 3 ("Never over the limit, evicted or not"): "An
/// estimate reads above the key's count only where both its cells hold
/// other keys' larger counts". A 16-bit tag aliases windows `2^16` apart
/// (memory.rs, "Expiry", says so): key A, evicted with its limit in window
/// 0 and idle since, is refused outright `2^16` windows later, when another
/// key's eviction folded into the plane (raising its id) without touching
/// A's words. No other key's count is in A's cells; A reads its own count
/// of 65,536 windows ago.
#[test]
#[ignore = "review: GUARANTEES' over-read wording omits the tag alias (and the ladder): A is refused 2^16 windows later for its own old count"]
fn an_estimate_reads_above_the_count_only_for_other_keys_counts() {
    const W: u64 = 10;
    let later = (1u64 << 16) * W;
    let mut seen = 0;
    for c in 1_000..1_200u64 {
        let t = KeyedGate::<1, 1>::new(nz(W), 10);
        let (a, b, d) = (1u64, 2u64, 3u64);
        assert_eq!(t.try_acquire(a, 0, 10), Decision::Pass);
        assert_eq!(t.try_acquire(b, 0, 1), Decision::Pass); // evicts A: 10 in window 0
        assert_eq!(t.try_acquire(c, later, 1), Decision::Pass); // recycles B's slot
        assert_eq!(t.try_acquire(d, later, 1), Decision::Pass); // evicts C: 1 in window 2^16
                                                                // A booked nothing in the last 65,535 windows.
        let left = t.remaining(a, later);
        if left == 0 {
            seen += 1;
            assert_eq!(
                t.try_acquire(a, later, 1),
                Decision::Block,
                "A is refused: its estimate is its own 10 from window 0"
            );
        }
    }
    assert_eq!(
        seen, 0,
        "{seen} of 200 keys C leave A refused 2^16 windows after it booked, for its own old count"
    );
}

/// GUARANTEES ("Exactly its own gate while there is room"): "While its
/// probe has room and no key has been evicted (or the policy is not
/// `Evict`), a key is decided as a `Gate` of its own". A table that
/// evicted under `Evict` and then changed to `Refuse` still seeds every
/// key inserted later from its memory (`start_word`: "read whatever the
/// policy is now"), so a key never seen before, with room in its probe,
/// is refused where its own gate admits: its two cells are those of the
/// evicted key A. Two slots, limit 10, N = 2: X busy in window 0, A books
/// 10 in window 3, B evicts A; the policy becomes `Refuse`; in window 4
/// X's slot is recyclable, and C (a stranger) finds room.
#[test]
#[ignore = "review: GUARANTEES' '(or the policy is not Evict)' is false after a policy change: a stranger with room is refused"]
fn a_key_with_room_under_refuse_is_decided_as_its_own_gate() {
    let mut refused = Vec::new();
    for c in 10_000..200_000u64 {
        let t = KeyedGate::<2, 2>::new(nz(10), 10);
        let (x, a, b) = (1u64, 2u64, 3u64);
        for _ in 0..300 {
            let _ = t.try_acquire(x, 0, 1);
        }
        assert_eq!(t.try_acquire(a, 30, 10), Decision::Pass);
        assert_eq!(t.try_acquire(b, 30, 1), Decision::Pass); // evicts A
        assert_eq!(t.occupancy(30).evicted, 1);
        let t = t.with_overflow(leaparray::keyed::Overflow::Refuse);
        if t.try_acquire(c, 40, 1) == Decision::Block {
            refused.push(c);
            if refused.len() >= 3 {
                break;
            }
        }
    }
    assert!(
        refused.is_empty(),
        "keys {refused:?}, never seen, with room under Refuse, refused where a Gate of their own admits"
    );
}

/// Bursts (the same `now` for every request, repeated keys, evictions
/// inside the burst) decide as single calls in order, on both tables, and
/// never over the limit.
fn bursts<const N: usize, const CAP: usize>(limit: u64, seed: u64) -> Result<(), String> {
    let window = 10;
    let shared = KeyedGate::<N, CAP>::new(nz(window), limit).with_seed(seed);
    let single = KeyedGate::<N, CAP>::new(nz(window), limit).with_seed(seed);
    let mut local = LocalKeyedGate::<N, CAP>::new(nz(window), limit).with_seed(seed);
    let mut r = Rng(seed * 0x9e37_79b9 | 1);
    let mut now = 1 << 30;
    let mut ledger = Ledger::default();
    let keys = CAP as u64 + 1 + r.below(40);
    for b in 0..60 {
        now += match r.below(4) {
            0 => 0,
            1 => r.below(window),
            2 => window,
            _ => window * r.below(2 * N as u64 + 2),
        };
        let len = r.below(70) as usize;
        let reqs: Vec<(u64, u64)> = (0..len)
            .map(|_| {
                let n = if r.below(3) == 0 {
                    limit
                } else {
                    1 + r.below(limit)
                };
                (0x1000 + r.below(keys), n)
            })
            .collect();
        let mut ds = vec![Decision::Block; len];
        let mut dl = vec![Decision::Block; len];
        shared.try_acquire_burst(now, &reqs, &mut ds);
        local.try_acquire_burst(now, &reqs, &mut dl, |_| ());
        for (i, &(key, n)) in reqs.iter().enumerate() {
            let d = single.try_acquire(key, now, n);
            if d != ds[i] || d != dl[i] {
                return Err(format!(
                    "burst {b} request {i} key {key} n {n}: single {d:?} shared burst {:?} local burst {:?}",
                    ds[i], dl[i]
                ));
            }
            if d == Decision::Pass {
                let worst = ledger.book(key, now / window, n, N as u64);
                if worst > limit {
                    return Err(format!(
                        "burst {b} request {i} key {key}: {worst} > {limit}"
                    ));
                }
            }
        }
        if shared.occupancy(now) != local.occupancy(now)
            || shared.occupancy(now) != single.occupancy(now)
        {
            return Err(format!(
                "burst {b}: occupancy {:?} {:?} {:?}",
                shared.occupancy(now),
                local.occupancy(now),
                single.occupancy(now)
            ));
        }
    }
    Ok(())
}

#[test]
fn bursts_decide_as_single_calls() {
    let seeds = if cfg!(debug_assertions) { 15 } else { 150 };
    for seed in 1..=seeds {
        for limit in [1, 2, 5, 7, 13, 100] {
            for res in [
                bursts::<1, 1>(limit, seed),
                bursts::<2, 1>(limit, seed),
                bursts::<2, 3>(limit, seed),
                bursts::<2, 17>(limit, seed),
                bursts::<3, 20>(limit.min(1023), seed),
                bursts::<4, 2>(limit.min(127), seed),
            ] {
                if let Err(e) = res {
                    panic!("limit {limit} seed {seed}: {e}");
                }
            }
        }
    }
}
