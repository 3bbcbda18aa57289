//! A hostile review of `Overflow::Evict` (issue 31): sequential attacks on
//! "no key, evicted or not, is ever admitted over its limit in any
//! interval", each against a ledger kept apart from the table.
//!
//! Where a pass lands: a keyed table books a pass into its key's newest
//! window (a late caller's too), so right after a pass of `n >= 1`
//! permits, `retry_after(key, now, limit)` is the start of window `b + N`
//! (every permit the word holds slides out then), where `b` is the window
//! booked. The harness reads `b` back that way and checks `c <= b` (the
//! caller's window) as the fuzz target does. The ledger then checks every
//! interval of `N` windows through `b`.
//!
//! Each test names the mutation that turns it red.

use std::collections::HashMap;
use std::num::NonZeroU64;

use leaparray::keyed::{LocalKeyedGate, Overflow};
use leaparray::{Decision, KeyedGate};

/// `n` cases, or 2 under Miri (which runs every test, slowly).
fn cases(n: usize) -> usize {
    if cfg!(miri) {
        2
    } else {
        n
    }
}

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

/// Permits per (key, window), and the check of every interval of `n`
/// windows through a window.
#[derive(Default, Debug)]
struct Ledger {
    n: u64,
    limit: u64,
    booked: HashMap<(u64, u64), u64>,
}

impl Ledger {
    fn new(n: u64, limit: u64) -> Self {
        Ledger {
            n,
            limit,
            booked: HashMap::new(),
        }
    }

    /// Books `p` permits of `key` into window `b`; the fullest interval of
    /// `n` windows through `b` if it is over the limit.
    fn book(&mut self, key: u64, b: u64, p: u64) -> Option<(u64, u64)> {
        *self.booked.entry((key, b)).or_default() += p;
        let at = |w: u64| self.booked.get(&(key, w)).copied().unwrap_or(0);
        for start in b.saturating_sub(self.n - 1)..=b {
            let sum: u64 = (start..start + self.n).map(at).sum();
            if sum > self.limit {
                return Some((start, sum));
            }
        }
        None
    }
}

/// One table under attack: the shared one and the local one behind one
/// face.
trait Table {
    fn acquire(&mut self, key: u64, now: u64, n: u64) -> Decision;
    fn retry(&self, key: u64, now: u64, n: u64) -> Option<u64>;
}

impl<const N: usize, const CAP: usize> Table for KeyedGate<N, CAP> {
    fn acquire(&mut self, key: u64, now: u64, n: u64) -> Decision {
        self.try_acquire(key, now, n)
    }
    fn retry(&self, key: u64, now: u64, n: u64) -> Option<u64> {
        self.retry_after(key, now, n)
    }
}

impl<const N: usize, const CAP: usize> Table for LocalKeyedGate<N, CAP> {
    fn acquire(&mut self, key: u64, now: u64, n: u64) -> Decision {
        self.try_acquire(key, now, n)
    }
    fn retry(&self, key: u64, now: u64, n: u64) -> Option<u64> {
        self.retry_after(key, now, n)
    }
}

/// Drives `t` (`N` windows of `window` ticks, `limit`) through `steps`
/// of (key, now, n), books every pass in the ledger at the window read
/// back from `retry_after`; the first violation, if any.
fn drive(
    t: &mut dyn Table,
    n_windows: u64,
    window: u64,
    limit: u64,
    steps: &[(u64, u64, u64)],
) -> Result<(), String> {
    let mut ledger = Ledger::new(n_windows, limit);
    for (i, &(key, now, n)) in steps.iter().enumerate() {
        let d = t.acquire(key, now, n);
        if d != Decision::Pass || n == 0 {
            continue;
        }
        let wait = t
            .retry(key, now, limit)
            .ok_or_else(|| format!("step {i}: retry_after None after a pass"))?;
        let end = (now + wait) / window; // b + N
        let c = now / window;
        if end < n_windows || end - n_windows < c {
            return Err(format!(
                "step {i}: key {key} at window {c}: booked before its window (end {end})"
            ));
        }
        let b = end - n_windows;
        if let Some((start, sum)) = ledger.book(key, b, n) {
            return Err(format!(
                "step {i}: key {key} caller window {c} booked {n} into window {b}: windows {start}..{} hold {sum} > {limit}; steps so far {:?}",
                start + n_windows - 1,
                &steps[..=i]
            ));
        }
    }
    Ok(())
}

/// A small deterministic generator (xorshift64*).
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

/// Steps that attack the memory: few keys competing for few slots, a
/// clock that mostly moves on but lags by up to `3N` windows, jumps far
/// ahead (sometimes by about `2^16` windows: tags wrap), and amounts
/// `1..=limit`.
fn steps(
    rng: &mut Rng,
    n_windows: u64,
    window: u64,
    limit: u64,
    keys: u64,
    len: usize,
) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::with_capacity(len);
    let mut high = 10 * n_windows * window;
    for _ in 0..len {
        let r = rng.below(100);
        let now = if r < 55 {
            high += rng.below(window);
            high
        } else if r < 90 {
            // Late: up to 3N windows behind the newest reached.
            high.saturating_sub(rng.below(3 * n_windows * window + 1))
        } else if r < 97 {
            high += rng.below(2 * n_windows + 2) * window;
            high
        } else if r < 99 {
            high += (65_536 - n_windows + rng.below(2 * n_windows + 1)) * window;
            high
        } else {
            // Far ahead, once, then back to where it was.
            high + rng.below(5_000) * window
        };
        let key = 0x7000 + rng.below(keys);
        let n = match rng.below(4) {
            0 => limit,
            1 => 1 + rng.below(limit),
            _ => 1 + rng.below(limit.min(4)),
        };
        out.push((key, now, n));
    }
    out
}

fn attack<const N: usize, const CAP: usize>(seed: u64, rounds: usize, len: usize, limits: &[u64]) {
    let window = 10;
    let mut rng = Rng(seed | 1);
    for round in 0..cases(rounds) {
        let limit = limits[round % limits.len()];
        let keys = 1 + rng.below(3 * CAP as u64 + 4);
        let s = steps(&mut rng, N as u64, window, limit, keys, cases(len));
        let mut shared = KeyedGate::<N, CAP>::new(nz(window), limit);
        assert_eq!(shared.overflow(), Overflow::Evict);
        if let Err(e) = drive(&mut shared, N as u64, window, limit, &s) {
            panic!("KeyedGate<{N}, {CAP}> limit {limit} round {round}: {e}");
        }
        let mut local = Box::new(LocalKeyedGate::<N, CAP>::new(nz(window), limit));
        if let Err(e) = drive(&mut *local, N as u64, window, limit, &s) {
            panic!("LocalKeyedGate<{N}, {CAP}> limit {limit} round {round}: {e}");
        }
    }
}

const LIMITS: &[u64] = &[1, 3, 5, 255, 256, 300, 511, 1000];

#[test]
fn random_n1() {
    attack::<1, 1>(1, 300, 200, LIMITS);
    attack::<1, 2>(2, 300, 200, LIMITS);
    attack::<1, 16>(3, 200, 300, LIMITS);
}

#[test]
fn random_n2() {
    attack::<2, 1>(4, 300, 200, LIMITS);
    attack::<2, 2>(5, 300, 200, LIMITS);
    attack::<2, 16>(6, 200, 300, LIMITS);
}

/// Large quanta: `N = 2` takes limits up to 32,767 (`q` up to 129) and
/// `N = 3` up to 1,023 (`q` up to 5); cells round up.
#[test]
fn random_large_quanta() {
    const L2: &[u64] = &[256, 1_000, 4_097, 32_767];
    attack::<2, 1>(41, 200, 200, L2);
    attack::<2, 2>(42, 200, 200, L2);
    attack::<2, 16>(43, 100, 300, L2);
    const L3: &[u64] = &[2, 255, 256, 600, 1_023];
    attack::<3, 1>(44, 200, 200, L3);
    attack::<3, 2>(45, 200, 200, L3);
    attack::<3, 16>(46, 100, 300, L3);
}

#[test]
fn random_n4() {
    // N = 4 takes limits up to 127: q is 1.
    const L4: &[u64] = &[1, 3, 5, 100, 127];
    attack::<4, 1>(7, 300, 200, L4);
    attack::<4, 2>(8, 300, 200, L4);
    attack::<4, 16>(9, 200, 300, L4);
}

/// Long idles: jumps of `2^20` to `2^30` windows forward (within the
/// `2^31` windows a 32-bit id reads right), late callers up to `3N`
/// windows behind, on the local table. (Beyond `2^31`: the ledger's
/// read-back is meaningless there; see `a_far_behind_caller_evicted_does_not_lock_out_new_keys`.)
#[test]
fn local_far_times() {
    fn run<const N: usize, const CAP: usize>(seed: u64, limits: &[u64]) {
        let window = 10;
        let mut rng = Rng(seed);
        for round in 0..cases(200) {
            let limit = limits[round % limits.len()];
            let keys = 1 + rng.below(3 * CAP as u64 + 4);
            let mut s = steps(&mut rng, N as u64, window, limit, keys, cases(200));
            // Shift some stretches far ahead, and put some callers far behind.
            let mut shift = 0u64;
            for st in s.iter_mut() {
                if rng.below(50) == 0 {
                    shift += (1u64 << (20 + rng.below(11))) * window;
                }
                st.1 += shift;
            }
            let mut local = Box::new(LocalKeyedGate::<N, CAP>::new(nz(window), limit));
            if let Err(e) = drive(&mut *local, N as u64, window, limit, &s) {
                panic!("LocalKeyedGate<{N}, {CAP}> limit {limit} round {round}: {e}");
            }
        }
    }
    run::<1, 1>(11, LIMITS);
    run::<2, 2>(12, LIMITS);
    run::<2, 16>(13, LIMITS);
    run::<4, 2>(14, &[1, 3, 127]);
}

/// Bursts under `Evict` decide as single calls in order (a twin table
/// takes the singles), with late callers and evictions in the burst.
#[test]
fn burst_is_singles_under_evict() {
    fn run<const N: usize, const CAP: usize>(seed: u64) {
        let window = 10;
        let mut rng = Rng(seed);
        for round in 0..cases(300) {
            let limit = [1, 3, 5, 300][round % 4].min(KeyedGate::<N, CAP>::max_limit());
            let keys = 1 + rng.below(3 * CAP as u64 + 4);
            let burst = KeyedGate::<N, CAP>::new(nz(window), limit);
            let single = KeyedGate::<N, CAP>::new(nz(window), limit);
            let mut lb = Box::new(LocalKeyedGate::<N, CAP>::new(nz(window), limit));
            let mut ls = Box::new(LocalKeyedGate::<N, CAP>::new(nz(window), limit));
            let mut now: u64 = 1_000;
            for _ in 0..cases(40) {
                now = if rng.below(3) == 0 {
                    now.saturating_sub(rng.below(3 * N as u64 * window))
                } else {
                    now + rng.below(2 * window)
                };
                let len = 1 + rng.below(20) as usize;
                let reqs: Vec<(u64, u64)> = (0..len)
                    .map(|_| (0x9000 + rng.below(keys), 1 + rng.below(limit.min(3))))
                    .collect();
                let mut out = vec![Decision::Block; len];
                let _ = burst.try_acquire_burst(now, &reqs, &mut out);
                let singles: Vec<Decision> = reqs
                    .iter()
                    .map(|&(k, n)| single.try_acquire(k, now, n))
                    .collect();
                assert_eq!(
                    out, singles,
                    "KeyedGate<{N}, {CAP}> round {round} at {now}: {reqs:?}"
                );
                let mut lout = vec![Decision::Block; len];
                let _ = lb.try_acquire_burst(now, &reqs, &mut lout, |_| ());
                let lsingles: Vec<Decision> = reqs
                    .iter()
                    .map(|&(k, n)| ls.try_acquire(k, now, n))
                    .collect();
                assert_eq!(
                    lout, lsingles,
                    "local <{N}, {CAP}> round {round} at {now}: {reqs:?}"
                );
                assert_eq!(
                    out, lout,
                    "local vs shared <{N}, {CAP}> round {round} at {now}"
                );
            }
        }
    }
    run::<1, 2>(21);
    run::<2, 1>(22);
    run::<2, 16>(23);
    run::<4, 16>(24);
}

/// `try_acquire_headroom` answers the `remaining` and `retry_after(limit)`
/// of a look made just after it, also for keys evicted and seeded.
#[test]
fn headroom_of_evicted_keys() {
    fn run<const N: usize, const CAP: usize>(seed: u64) {
        let window = 10;
        let mut rng = Rng(seed);
        for round in 0..cases(300) {
            let limit = [1, 3, 5, 300][round % 4].min(KeyedGate::<N, CAP>::max_limit());
            let keys = 1 + rng.below(3 * CAP as u64 + 4);
            let t = KeyedGate::<N, CAP>::new(nz(window), limit);
            let mut now: u64 = 1_000;
            for i in 0..cases(100) {
                now = if rng.below(3) == 0 {
                    now.saturating_sub(rng.below(3 * N as u64 * window))
                } else {
                    now + rng.below(2 * window)
                };
                let key = 0x9000 + rng.below(keys);
                let n = 1 + rng.below(limit.min(3));
                let (d, h) = t.try_acquire_headroom(key, now, n);
                let look = (t.remaining(key, now), t.retry_after(key, now, limit));
                assert_eq!(
                    (h.remaining, h.reset),
                    look,
                    "<{N}, {CAP}> round {round} step {i}: {key} at {now} n {n}: {d:?}"
                );
            }
        }
    }
    run::<1, 2>(31);
    run::<2, 1>(32);
    run::<2, 16>(33);
}

/// Local table, `Evict`: a caller `2^31` windows or more behind the
/// newest window is decided as a late caller at the bound, its key booked
/// there; once the newest window moves on, that word's 32-bit id reads as
/// `~2^31` windows *ahead*. Evicting it takes it no further than the newest
/// window the table reached: the high water stays there, and a new key
/// sending 1 per window is admitted every window (its own gate would), with
/// `retry_after` never `Some(0)` for a refusal. Without that bound the
/// high water jumps `~2^31` windows ahead and every new key is refused
/// after `limit` permits. Sequence found by `local_far_times` and
/// minimized (window 10 ticks, `N = 1`, one slot, limit 3).
#[test]
fn a_far_behind_caller_evicted_does_not_lock_out_new_keys() {
    let mut t = LocalKeyedGate::<1, 1>::new(nz(10), 3);
    let steps = [
        (0x7001u64, 10_737_453_552u64, 2u64),
        (0x7003, 268_435_456_773, 2),
        (0x7003, 3_119_310, 3), // far behind: window 311,931
        (0x7002, 268_435_456_799, 3),
        (0x7003, 268_435_456_769, 3),
        (0x7002, 268_435_456_810, 3),
    ];
    for (k, now, n) in steps {
        let _ = t.try_acquire(k, now, n);
    }
    let w0 = 268_435_456_810u64 / 10;
    // A new key sending one request per window, 10 windows in a row: its
    // own gate (N = 1, limit 3) admits every one.
    let mut refused = Vec::new();
    for k in 1..=10 {
        let now = (w0 + k) * 10;
        let says = t.retry_after(0xe, now, 1);
        let d = t.try_acquire(0xe, now, 1);
        assert!(
            !(says == Some(0) && d == Decision::Block),
            "retry_after said Some(0) at window {}, then refused",
            w0 + k
        );
        if d == Decision::Block {
            refused.push(w0 + k);
        }
    }
    assert!(
        refused.is_empty(),
        "a new key sending 1 per window (limit 3, N = 1) refused in windows {refused:?}; retry_after {:?}",
        t.retry_after(0xe, (w0 + 10) * 10, 1)
    );
}

/// `retry_after` / `remaining` of a key whose insertion evicts: both read
/// the word the key would start from with the memory as it is, but the
/// insertion first evicts a victim and folds its counts into the memory;
/// in a small table the victim's cells overlap the newcomer's (count-min
/// noise), so the newcomer starts from more. Documented (`retry_after`,
/// GUARANTEES): `remaining` is then an upper bound and `retry_after` a
/// lower bound. This pins that case: with nothing in between, `remaining`
/// says 5 and `retry_after(4)` says `Some(0)`, and `try_acquire(4)` is
/// refused, in both tables (which answer alike). `KeyedGate<2, 2>`,
/// window 10, limit 5; the keys found by a search for the memory's
/// layout (3-bit cells, two rows, `N` planes). Red if
/// the answers are read after the victim's fold (a fix), or if the
/// victim's fold stops reaching the newcomer's cells (`fold` returning at
/// once: the insertion then passes).
#[test]
fn retry_after_of_a_key_that_evicts_is_a_lower_bound() {
    let t = KeyedGate::<2, 2>::new(nz(10), 5);
    let mut local = LocalKeyedGate::<2, 2>::new(nz(10), 5);
    for (k, now, n) in [(0x7000u64, 655_960u64, 5u64), (0x7001, 655_970, 2)] {
        assert_eq!(t.try_acquire(k, now, n), Decision::Pass, "premise");
        assert_eq!(local.try_acquire(k, now, n), Decision::Pass, "premise");
    }
    let (c, now, n) = (0x6193u64, 655_974u64, 4u64);
    let said = (t.remaining(c, now), t.retry_after(c, now, n));
    let lsaid = (local.remaining(c, now), local.retry_after(c, now, n));
    let d = t.try_acquire(c, now, n);
    let ld = local.try_acquire(c, now, n);
    assert_eq!(
        t.occupancy(now).evicted,
        1,
        "premise: C's insertion evicted a key"
    );
    assert_eq!(local.occupancy(now), t.occupancy(now), "the tables alike");
    for (what, said, d) in [("shared", said, d), ("local", lsaid, ld)] {
        assert_eq!(said, (5, Some(0)), "{what}: read before the eviction");
        assert_eq!(
            d,
            Decision::Block,
            "{what}: refused by its own eviction's fold"
        );
        // Upper / lower bound: what C can take now is below what was said.
        let after = if what == "shared" {
            t.remaining(c, now)
        } else {
            local.remaining(c, now)
        };
        assert!(after < n, "{what}: remaining {after} after the refusal");
    }
}

/// Memory is fixed and as stated: a `KeyedGate` takes `48 * CAP` bytes
/// plus at most 1,024, a `LocalKeyedGate` `48 * CAP` plus at most 496
/// (GUARANTEES, `shared.rs`, `local.rs`). Mutation that turns it red: a
/// memory of 5 words per slot (`WORDS_PER_SLOT = 5`).
#[test]
fn memory_is_fixed_and_as_stated() {
    use std::mem::size_of;
    fn check<const N: usize, const CAP: usize>() {
        let (s, l) = (
            size_of::<KeyedGate<N, CAP>>(),
            size_of::<LocalKeyedGate<N, CAP>>(),
        );
        assert!(
            s >= 48 * CAP && s <= 48 * CAP + 1_024,
            "KeyedGate<{N}, {CAP}>: {s}"
        );
        assert!(
            l >= 48 * CAP && l <= 48 * CAP + 496,
            "LocalKeyedGate<{N}, {CAP}>: {l}"
        );
    }
    check::<1, 1>();
    check::<2, 16>();
    check::<4, 40>();
    check::<2, 4096>();
    check::<31, 64>();
}

/// A key idle `2^31` windows or more (its word's 32-bit id then reads as
/// ahead of every caller) evicted from a full probe: in the local table
/// the eviction takes its word no later than the newest window the table
/// reached, so a new key after it gets its own gate's answers, window
/// after window. `LocalKeyedGate<1, 1>`, window 10, limit 3. Red if the
/// eviction raises the high water to the misread window (`.min(reached)`
/// dropped in `local.rs`): the new key passes 3, then is refused for
/// `~2^31` windows.
#[test]
fn an_idle_word_read_as_ahead_and_evicted_does_not_lock_out_new_keys() {
    let mut t = LocalKeyedGate::<1, 1>::new(nz(10), 3);
    assert_eq!(t.try_acquire(1, 1_000, 3), Decision::Pass, "premise");
    let w0 = 100 + (1u64 << 31) + 5;
    let mut refused = Vec::new();
    for k in 0..10 {
        let now = (w0 + k) * 10;
        if t.try_acquire(2, now, 1) == Decision::Block {
            refused.push(w0 + k);
        }
    }
    assert_eq!(t.occupancy(w0 * 10).evicted, 1, "premise: key 1 evicted");
    assert!(
        refused.is_empty(),
        "a new key sending 1 per window refused in windows {refused:?}"
    );
}

/// The same idle word in a `KeyedGate`, which keeps no newest window: the
/// word's id (modulo `2^32`) reads as ahead of the caller. Pinned as it
/// is (documented, `keyed` module docs, "Exactness"): the eviction
/// raises the high water to the misread window, and the new key gets
/// `limit` permits, then is refused (as the `keyed` module docs say of an
/// idle word: stricter, never looser).
#[test]
fn a_shared_table_reads_an_idle_word_as_ahead_when_it_evicts_it() {
    let t = KeyedGate::<1, 1>::new(nz(10), 3);
    assert_eq!(t.try_acquire(1, 1_000, 3), Decision::Pass, "premise");
    let w0 = 100 + (1u64 << 31) + 5;
    let decided: Vec<Decision> = (0..10)
        .map(|k| t.try_acquire(2, (w0 + k) * 10, 1))
        .collect();
    assert_eq!(t.occupancy(w0 * 10).evicted, 1, "premise: key 1 evicted");
    let passed = decided.iter().filter(|d| **d == Decision::Pass).count();
    assert_eq!(passed, 3, "{decided:?}");
}
