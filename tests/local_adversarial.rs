//! Adversarial tests of the owned keyed gate: every decision, `remaining`,
//! `retry_after`, `stats` and the burst's prefetch addresses against a
//! brute-force model (u64 window ids, a lookup that reads the whole probe,
//! a ledger of the window each permit is counted in) and a `KeyedGate` of
//! the same seed, with extreme parameters; and callers far behind.

use std::collections::HashMap;
use std::num::NonZeroU64;

use leaparray::keyed::{KeyedError, LocalKeyedGate, Overflow};
use leaparray::Decision;
use leaparray::KeyedGate;
use proptest::prelude::*;

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

fn max_steps(n: usize) -> usize {
    if cfg!(miri) {
        (n / 10).max(2)
    } else {
        n
    }
}

// ---------------------------------------------------------------------
// A brute-force model of the table: u64 window ids (no modulus), a key's
// counts as a plain vector, a lookup that reads the whole probe (no early
// stop at a free slot), and a ledger of the window each admission is
// counted in.
// ---------------------------------------------------------------------

/// MurmurHash3's finalizer and Lemire's reduction, as `keyed.rs` places
/// keys (an independent copy: the burst's prefetch addresses are checked
/// against it).
fn model_home(seed: u64, key: u64, cap: usize) -> usize {
    let mut h = key ^ seed;
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    ((u128::from(h) * cap as u128) >> 64) as usize
}

#[derive(Clone, Debug)]
struct MSlot {
    key: u64,
    newest: u64,
    /// `counts[i]`: the key's permits counted in window `newest - i`.
    counts: Vec<u64>,
}

impl MSlot {
    /// The counts as seen from window `c`, and the window a booking goes to.
    fn view(&self, c: u64) -> (Vec<u64>, u64) {
        if c <= self.newest {
            return (self.counts.clone(), self.newest);
        }
        let d = c - self.newest;
        let n = self.counts.len() as u64;
        let slid = (0..n)
            .map(|i| {
                if i >= d {
                    self.counts[(i - d) as usize]
                } else {
                    0
                }
            })
            .collect();
        (slid, c)
    }
}

struct Model {
    n: u64,
    cap: usize,
    probe: usize,
    window: u64,
    limit: u64,
    seed: u64,
    admit: bool,
    slots: Vec<Option<MSlot>>,
    high_water: u64,
    recycled: u64,
    overflowed: u64,
    /// Per (key, window): permits counted there.
    ledger: HashMap<(u64, u64), u64>,
}

impl Model {
    fn new(n: usize, cap: usize, window: u64, limit: u64, seed: u64, admit: bool) -> Self {
        Model {
            n: n as u64,
            cap,
            probe: cap.min(16),
            window,
            limit,
            seed,
            admit,
            slots: vec![None; cap],
            high_water: 0,
            recycled: 0,
            overflowed: 0,
            ledger: HashMap::new(),
        }
    }

    fn probe_of(&self, key: u64) -> impl Iterator<Item = usize> + '_ {
        let home = model_home(self.seed, key, self.cap);
        (0..self.probe).map(move |i| (home + i) % self.cap)
    }

    fn recyclable(&self, s: &MSlot, c: u64) -> bool {
        c.checked_sub(s.newest).is_some_and(|d| d >= 2 * self.n)
    }

    /// The key's slot, or else the first free or recyclable slot (`Err(Some)`),
    /// or no room (`Err(None)`).
    fn find(&self, key: u64, c: u64) -> Result<usize, Option<usize>> {
        let mut room = None;
        for at in self.probe_of(key) {
            match &self.slots[at] {
                Some(s) if s.key == key => return Ok(at),
                Some(s) if !self.recyclable(s, c) => {}
                _ => room = room.or(Some(at)),
            }
        }
        Err(room)
    }

    fn acquire(&mut self, key: u64, now: u64, n: u64) -> Decision {
        if n == 0 {
            return Decision::Pass;
        }
        if n > self.limit {
            return Decision::Block;
        }
        let c = now / self.window;
        let at = match self.find(key, c) {
            Ok(at) => at,
            Err(Some(at)) => {
                if self.slots[at].is_some() {
                    self.high_water = self.high_water.max(c);
                    self.recycled += 1;
                }
                self.slots[at] = Some(MSlot {
                    key,
                    newest: c.max(self.high_water).saturating_sub(self.n),
                    counts: vec![0; self.n as usize],
                });
                at
            }
            Err(None) => {
                self.overflowed += 1;
                return if self.admit {
                    Decision::Pass
                } else {
                    Decision::Block
                };
            }
        };
        let s = self.slots[at].as_mut().unwrap();
        let (mut counts, booked) = s.view(c);
        if counts.iter().sum::<u64>() + n > self.limit {
            return Decision::Block;
        }
        counts[0] += n;
        s.counts = counts;
        s.newest = booked;
        *self.ledger.entry((key, booked)).or_default() += n;
        Decision::Pass
    }

    fn remaining(&self, key: u64, now: u64) -> u64 {
        let c = now / self.window;
        match self.find(key, c) {
            Ok(at) => {
                let used: u64 = self.slots[at].as_ref().unwrap().view(c).0.iter().sum();
                self.limit.saturating_sub(used)
            }
            Err(Some(_)) => self.limit,
            Err(None) if self.admit => self.limit,
            Err(None) => 0,
        }
    }

    /// Every interval of `N` windows holds at most `limit` of any key's
    /// permits.
    fn check_ledger(&self, key: u64, booked: u64) -> Result<(), TestCaseError> {
        for first in booked.saturating_sub(self.n - 1)..=booked {
            let total: u64 = (first..first.saturating_add(self.n))
                .map(|w| self.ledger.get(&(key, w)).copied().unwrap_or(0))
                .sum();
            prop_assert!(
                total <= self.limit,
                "key {} windows {}+{}: {} > {}",
                key,
                first,
                self.n,
                total,
                self.limit
            );
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
enum Step {
    One(usize, u64),
    Burst(Vec<(usize, u64)>),
}

/// Runs `steps` (`(dt, back, tick, step)`: the clock moves `dt` windows on,
/// the call is made `back` windows behind it at tick `tick` of its window)
/// on a `LocalKeyedGate<N, CAP>` and the model, from window `base`: every
/// decision, `remaining` and the counters agree, the ledger holds, and the
/// burst prefetches `slots + 16 * home` for each request.
#[allow(clippy::too_many_arguments)]
fn matches_the_model<const N: usize, const CAP: usize>(
    window: u64,
    limit: u64,
    seed: u64,
    admit: bool,
    base: u64,
    keys: &[u64],
    steps: &[(u64, u64, u64, Step)],
) -> Result<(), TestCaseError> {
    let policy = if admit {
        Overflow::Admit
    } else {
        Overflow::Refuse
    };
    let max = LocalKeyedGate::<N, CAP>::max_limit();
    let t = LocalKeyedGate::<N, CAP>::try_new(nz(window), limit);
    let shared = KeyedGate::<N, CAP>::try_new(nz(window), limit);
    let (mut t, shared) = match (t, shared) {
        (Ok(t), Ok(shared)) => (
            t.with_seed(seed).with_overflow(policy),
            shared.with_seed(seed).with_overflow(policy),
        ),
        (t, shared) => {
            // A limit that does not fit: both refuse to build, naming the
            // largest that does.
            prop_assert!(limit > max);
            prop_assert_eq!(t.err(), Some(KeyedError::LimitTooLarge { max }));
            prop_assert_eq!(shared.err(), Some(KeyedError::LimitTooLarge { max }));
            return Ok(());
        }
    };
    prop_assert!(limit <= max);
    let mut m = Model::new(N, CAP, window, limit, seed, admit);
    let mut clock = base;
    let mut slots_at = None;
    for (dt, back, tick, step) in steps {
        clock = clock.saturating_add(*dt);
        let now = clock
            .saturating_sub(*back)
            .saturating_mul(window)
            .saturating_add(tick % window);
        let c = now / window;
        for &key in keys {
            prop_assert_eq!(
                t.remaining(key, now),
                m.remaining(key, now),
                "remaining {} at {}",
                key,
                now
            );
            prop_assert_eq!(t.remaining(key, now), shared.remaining(key, now));
            for n in [1, limit, limit.wrapping_add(1), u64::MAX] {
                prop_assert_eq!(
                    t.retry_after(key, now, n),
                    shared.retry_after(key, now, n),
                    "retry_after {} {} at {}",
                    key,
                    n,
                    now
                );
            }
        }
        let s = t.occupancy(now);
        prop_assert_eq!(s, shared.occupancy(now));
        let recyclable = m
            .slots
            .iter()
            .flatten()
            .filter(|s| m.recyclable(s, c))
            .count();
        let resident = m.slots.iter().flatten().count();
        prop_assert_eq!(
            (s.resident, s.recyclable, s.recycled, s.overflowed),
            (resident, recyclable, m.recycled, m.overflowed)
        );
        let reqs: Vec<(u64, u64)> = match step {
            Step::One(k, n) => vec![(keys[k % keys.len()], *n)],
            Step::Burst(r) => r.iter().map(|&(k, n)| (keys[k % keys.len()], n)).collect(),
        };
        let mut got = vec![Decision::Block; reqs.len()];
        let mut theirs = vec![Decision::Block; reqs.len()];
        if let Step::One(..) = step {
            got[0] = t.try_acquire(reqs[0].0, now, reqs[0].1);
            theirs[0] = shared.try_acquire(reqs[0].0, now, reqs[0].1);
        } else {
            prop_assert_eq!(
                shared.try_acquire_burst(now, &reqs, &mut theirs),
                reqs.len()
            );
            let mut seen = Vec::new();
            let len = t.try_acquire_burst(now, &reqs, &mut got, |p| seen.push(p as usize));
            prop_assert_eq!(len, reqs.len());
            prop_assert_eq!(seen.len(), reqs.len());
            let table = &t as *const _ as usize;
            for (&p, &(key, _)) in seen.iter().zip(&reqs) {
                // The slots start at the same address for every request,
                // and every slot lies inside the table.
                let start = p - 16 * model_home(seed, key, CAP);
                prop_assert_eq!(*slots_at.get_or_insert(start), start);
                prop_assert!(
                    start >= table && start + 16 * CAP <= table + std::mem::size_of_val(&t)
                );
            }
        }
        prop_assert_eq!(&got, &theirs, "against the KeyedGate at {}", now);
        for (&(key, n), &d) in reqs.iter().zip(&got) {
            let before: u64 = m.ledger.values().sum();
            prop_assert_eq!(
                d,
                m.acquire(key, now, n),
                "key {} n {} at {} (window {})",
                key,
                n,
                now,
                c
            );
            if m.ledger.values().sum::<u64>() != before {
                let booked = m
                    .slots
                    .iter()
                    .flatten()
                    .find(|s| s.key == key)
                    .unwrap()
                    .newest;
                prop_assert!(booked >= c);
                m.check_ledger(key, booked)?;
            }
        }
    }
    Ok(())
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0usize..64, prop_oneof![0u64..6, Just(u64::MAX), any::<u64>()])
            .prop_map(|(k, n)| Step::One(k, n)),
        1 => prop::collection::vec((0usize..64, 0u64..6), 0..70).prop_map(Step::Burst),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 1 } else { 128 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Against the brute-force model, within the range the module docs
    /// must cover: windows of 1 tick to `u64::MAX`, times from 0 to
    /// `u64::MAX`, callers up to 12 windows late, jumps of up to 2^24
    /// windows (every caller within 2^31 windows of every other), limits 0
    /// and `max_limit`, N from 1 to 31, CAP 1, 2, 3 and 17.
    #[test]
    fn decides_as_the_brute_force_model(
        window in prop_oneof![1u64..4, 1u64..1_000, Just(u64::MAX), any::<u64>().prop_map(|w| w.max(1))],
        limit_pick in 0u8..4,
        limit_raw in any::<u64>(),
        seed in any::<u64>(),
        admit in any::<bool>(),
        base_pick in 0u8..3,
        base_raw in any::<u64>(),
        keys in prop::collection::hash_set(prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()], 1..12),
        steps in prop::collection::vec(
            (prop_oneof![9 => 0u64..4, 1 => 0u64..(1 << 24)], 0u64..12, any::<u64>(), step()),
            1..max_steps(60),
        ),
    ) {
        let keys: Vec<u64> = keys.into_iter().collect();
        let span: u64 = steps.iter().map(|s| s.0).sum();
        let top = (u64::MAX / window).saturating_sub(span);
        let base = match base_pick { 0 => 0, 1 => top, _ => base_raw % top.saturating_add(1) };
        macro_rules! check {
            ($n:literal: $($cap:literal),*) => {$({
                let max = LocalKeyedGate::<$n, 1>::max_limit();
                let limit = match limit_pick { 0 => 0, 1 => max, 2 => max + 1, _ => limit_raw % 6 };
                matches_the_model::<$n, $cap>(window, limit, seed, admit, base, &keys, &steps)?;
            })*};
        }
        check!(1: 1, 2, 3, 17);
        check!(2: 1, 2, 3, 17);
        check!(3: 1, 3, 17);
        check!(7: 2, 17);
        check!(31: 1, 3, 17);
    }
}

// ---------------------------------------------------------------------
// Callers far behind: the module docs promise the limit "for any sequence
// of calls and any times". A slot keeps a window id modulo 2^T (T >= 32),
// so a caller 2^(T-1) windows or more behind the newest window is read as
// ahead of it.
// ---------------------------------------------------------------------

/// Lags (in windows) around every half-range of an id of 32 to 48 bits.
fn far_lags() -> impl Iterator<Item = u64> {
    (31..48).flat_map(|b| [(1u64 << b) - 1, 1 << b, (1 << b) + 1, (1 << b) + 7])
}

/// A key that got its limit at `t` gets nothing more at `t`, whatever
/// calls for it at earlier times came in between (an earlier caller books
/// into the newest window, as a `Gate`'s late callers do).
fn full_stays_full<const N: usize>() {
    let limit = LocalKeyedGate::<N, 1>::max_limit().min(5);
    for lag in far_lags() {
        for t in [lag + 3, u64::MAX] {
            let mut g = LocalKeyedGate::<N, 4>::new(nz(1), limit);
            assert_eq!(g.try_acquire(9, t, limit), Decision::Pass);
            let far = t - lag;
            let _ = g.try_acquire(9, far, 1);
            // What the far caller is told agrees with what it gets.
            assert_eq!(g.remaining(9, far), 0);
            if let Some(r) = g.retry_after(9, far, 1) {
                assert!(r > 0);
                assert_eq!(g.clone().try_acquire(9, far + r - 1, 1), Decision::Block);
                assert_eq!(g.clone().try_acquire(9, far + r, 1), Decision::Pass);
            }
            assert_eq!(
                g.try_acquire(9, t, 1),
                Decision::Block,
                "N {N}: {limit} at {t}, 1 at {}, then more at {t}",
                t - lag
            );
        }
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "a LocalKeyedGate is plain integers in safe code: nothing for Miri to check that the native run does not"
)]
fn a_call_far_behind_does_not_reopen_a_full_interval() {
    full_stays_full::<1>();
    full_stays_full::<2>();
    full_stays_full::<3>();
    full_stays_full::<16>();
    full_stays_full::<31>();
}

/// A key that got its limit at `t` is not recycled by another key's
/// caller far behind `t` (and handed a fresh limit at `t` when it comes
/// back).
fn live_stays_live<const N: usize>() {
    let limit = LocalKeyedGate::<N, 1>::max_limit().min(3);
    let seed = 0x5eed;
    let live = 1u64;
    let other = (2u64..)
        .find(|&k| model_home(seed, k, 2) == model_home(seed, live, 2))
        .unwrap();
    for lag in far_lags() {
        let t = lag + 3 * N as u64;
        let mut g = LocalKeyedGate::<N, 2>::new(nz(1), limit).with_seed(seed);
        assert_eq!(g.try_acquire(live, t, limit), Decision::Pass);
        let _ = g.try_acquire(other, t - lag, 1);
        assert_eq!(
            g.try_acquire(live, t, 1),
            Decision::Block,
            "N {N}: {limit} at {t}, another key at {}, then more at {t} ({:?})",
            t - lag,
            g.occupancy(t)
        );
    }
}

#[test]
fn a_call_far_behind_does_not_recycle_a_live_key() {
    live_stays_live::<1>();
    live_stays_live::<2>();
    live_stays_live::<3>();
    live_stays_live::<16>();
    live_stays_live::<31>();
}
