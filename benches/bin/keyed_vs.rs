//! Keyed decisions at 1,000,000 resident keys in a random order, every one
//! admitted, one at a time (`try_acquire`), one process, one thread,
//! interleaved rounds, medians and ratios from the one run:
//!
//! - `KeyedGate<2, 2^21>` with the default policy (`Overflow::Evict`) and
//!   with `Overflow::Refuse`;
//! - governor 0.10's keyed limiter on its default store (`DashMap`, std's
//!   SipHash) with its `FakeRelativeClock`, the same rate;
//! - `HeapLocalKeyedGate<2>` of 2^21 slots (default policy, and with
//!   `Overflow::Refuse`: the last row) and its floor:
//!   a plain table of `[key, word]` owned by one thread (not leaparray:
//!   linear probe for the key, a count and window id in the word compared
//!   with the limit, a store; no sliding window, no insertion, no demand);
//! - two floors of a table that threads share (not leaparray): the same
//!   probe and decision, but each slot loaded and swapped atomically.
//!   *16-byte*: key and word in one `portable_atomic::AtomicU128` (a
//!   `KeyedGate` slot's type), one 16-byte load and one 16-byte
//!   compare-and-swap per decision, as a table pays whose key and word
//!   change together; *8-byte*: the key and the word in two `AtomicU64`s,
//!   the word swapped alone (8 bytes), as a table would pay whose key
//!   never changes under a decision. And the 16-byte floor with 48
//!   rounds of a mixer on the key (about 150 instructions, four
//!   independent chains, the result discarded) that neither its load nor
//!   its swap waits for: what a decision's own work costs beside its miss
//!   and its swap.
//!
//! ```text
//! cargo run --release -p leaparray-benches --bin keyed_vs [-- --rounds R]
//! ```
//!
//! The keys are `benches/keyed.rs`'s: the first 1,000,000 of a
//! pseudo-random sequence that a `KeyedGate<2, 2^21>` with
//! `Overflow::Refuse` has room for (so no table here evicts), in the
//! order of a pregenerated sequence of 2^22 draws; a limit of 1,000 per
//! two windows of 500 ticks, the clock one tick on every 4,096 decisions
//! (governor's one microsecond), so every decision is admitted (checked:
//! the run fails on a refusal).

use std::hint::black_box;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use leaparray::keyed::{HeapLocalKeyedGate, Overflow};
use leaparray::{Decision, KeyedGate};
use portable_atomic::AtomicU128;

use leaparray_benches::{
    keyed_governor, load_average, median, rounds, warm_gate, warm_governor, Keys,
};

const WINDOW: NonZeroU64 = NonZeroU64::new(500).unwrap();
const LIMIT: u64 = 1_000;
const CAP: usize = 1 << 21;
/// Decisions per contestant per round.
const ROUND: usize = 1 << 20;
/// The clock moves one tick every `2^SHIFT` decisions.
const SHIFT: u32 = 12;

static EVICT: KeyedGate<2, CAP> = KeyedGate::new(WINDOW, LIMIT);
static REFUSE: KeyedGate<2, CAP> = KeyedGate::new(WINDOW, LIMIT).with_overflow(Overflow::Refuse);

/// A contestant: runs `ROUND` decisions from its own position in the key
/// sequence and gives nanoseconds per decision.
type Contestant<'a> = (&'static str, Box<dyn FnMut() -> f64 + 'a>);

/// `ROUND` decisions of `decide(key, now)` over `keys` from `*i` on.
#[inline(always)]
fn round(keys: &Keys, i: &mut usize, mut decide: impl FnMut(u64, u64) -> bool) -> f64 {
    let mask = keys.mask();
    let start = Instant::now();
    let mut refused = 0u64;
    for _ in 0..ROUND {
        let key = keys.seq[*i & mask];
        let now = 1 + (*i >> SHIFT) as u64;
        *i += 1;
        refused += u64::from(!decide(black_box(key), black_box(now)));
    }
    let ns = start.elapsed().as_nanos() as f64 / ROUND as f64;
    assert_eq!(refused, 0, "every decision is admitted");
    ns
}

/// The floor table (not leaparray): `[key, word]` slots, one writer.
struct Floor {
    slots: Vec<[u64; 2]>,
}

impl Floor {
    fn home(key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - CAP.trailing_zeros())) as usize
    }

    fn new(keys: &[u64]) -> Floor {
        let mut slots = vec![[0u64; 2]; CAP];
        for &key in keys {
            let mut s = Floor::home(key);
            while slots[s][0] != key && slots[s][0] != 0 {
                s = (s + 1) & (CAP - 1);
            }
            slots[s] = [key, 0];
        }
        Floor { slots }
    }

    #[inline(always)]
    fn decide(&mut self, key: u64, now: u64, n: u64) -> bool {
        let mut s = Floor::home(key);
        while self.slots[s][0] != key {
            s = (s + 1) & (CAP - 1);
        }
        let window = now / WINDOW.get();
        let w = self.slots[s][1];
        let count = if w >> 32 == window {
            w & 0xffff_ffff
        } else {
            0
        };
        if count + n <= LIMIT {
            self.slots[s][1] = (window << 32) | (count + n);
            true
        } else {
            false
        }
    }
}

/// The floor of a shared table: `[key | word]` in one 16-byte atomic.
struct SharedFloor16 {
    slots: Vec<AtomicU128>,
}

impl SharedFloor16 {
    fn new(keys: &[u64]) -> SharedFloor16 {
        let plain = Floor::new(keys);
        let slots = plain
            .slots
            .iter()
            .map(|s| AtomicU128::new((u128::from(s[0]) << 64) | u128::from(s[1])))
            .collect();
        SharedFloor16 { slots }
    }

    #[inline(always)]
    fn decide(&self, key: u64, now: u64, n: u64) -> bool {
        self.decide_padded::<0>(key, now, n)
    }

    /// [`decide`](Self::decide) with `PAD` rounds of a 64-bit mixer on the
    /// key (a shift, a xor and a multiply each), in four independent
    /// chains whose result is discarded: work that neither the slot's load
    /// nor the swap waits for.
    #[inline(always)]
    fn decide_padded<const PAD: usize>(&self, key: u64, now: u64, n: u64) -> bool {
        let mix = |h: u64| (h ^ (h >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let mut h = [key, key ^ 1, key ^ 2, key ^ 3];
        for _ in 0..PAD / 4 {
            h = h.map(mix);
        }
        black_box(h);
        let mut s = Floor::home(key);
        let mut v = self.slots[s].load(Ordering::Acquire);
        while (v >> 64) as u64 != key {
            s = (s + 1) & (CAP - 1);
            v = self.slots[s].load(Ordering::Acquire);
        }
        let window = now / WINDOW.get();
        loop {
            let w = v as u64;
            let count = if w >> 32 == window {
                w & 0xffff_ffff
            } else {
                0
            };
            if count + n > LIMIT {
                return false;
            }
            let new = (v >> 64 << 64) | u128::from((window << 32) | (count + n));
            match self.slots[s].compare_exchange_weak(v, new, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(now_v) => v = now_v,
            }
        }
    }
}

/// The floor of a shared table whose word is swapped alone: `[key, word]`
/// in two `AtomicU64`s.
struct SharedFloor8 {
    slots: Vec<[AtomicU64; 2]>,
}

impl SharedFloor8 {
    fn new(keys: &[u64]) -> SharedFloor8 {
        let plain = Floor::new(keys);
        let slots = plain
            .slots
            .iter()
            .map(|s| [AtomicU64::new(s[0]), AtomicU64::new(s[1])])
            .collect();
        SharedFloor8 { slots }
    }

    #[inline(always)]
    fn decide(&self, key: u64, now: u64, n: u64) -> bool {
        let mut s = Floor::home(key);
        while self.slots[s][0].load(Ordering::Acquire) != key {
            s = (s + 1) & (CAP - 1);
        }
        let window = now / WINDOW.get();
        let mut w = self.slots[s][1].load(Ordering::Acquire);
        loop {
            let count = if w >> 32 == window {
                w & 0xffff_ffff
            } else {
                0
            };
            if count + n > LIMIT {
                return false;
            }
            let new = (window << 32) | (count + n);
            match self.slots[s][1].compare_exchange_weak(
                w,
                new,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now_w) => w = now_w,
            }
        }
    }
}

fn main() {
    let rounds = rounds(11);
    let keys = Keys::new(&REFUSE, 1_000_000, 22, 1);
    warm_gate(&EVICT, &keys, 0);
    let (gov, clock) = keyed_governor(LIMIT);
    warm_governor(&gov, &keys);
    let mut local = HeapLocalKeyedGate::<2>::new(CAP, WINDOW, LIMIT);
    for &k in &keys.set {
        assert_eq!(local.try_acquire(k, 0, 1), Decision::Pass);
    }
    let mut local_refuse =
        HeapLocalKeyedGate::<2>::new(CAP, WINDOW, LIMIT).with_overflow(Overflow::Refuse);
    for &k in &keys.set {
        assert_eq!(local_refuse.try_acquire(k, 0, 1), Decision::Pass);
    }
    let mut floor = Floor::new(&keys.set);
    let floor16 = SharedFloor16::new(&keys.set);
    let floor8 = SharedFloor8::new(&keys.set);

    let (mut ie, mut ir, mut ig, mut il, mut ifl) = (0, 0, 0, 0, 0);
    let (mut if16, mut ifp, mut if8, mut ilr) = (0, 0, 0, 0);
    let mut gov_now = 0u64;
    let mut contestants: Vec<Contestant> = vec![
        (
            "KeyedGate, Evict (default)",
            Box::new(|| {
                round(&keys, &mut ie, |k, t| {
                    EVICT.try_acquire(k, t, 1) == Decision::Pass
                })
            }),
        ),
        (
            "KeyedGate, Refuse",
            Box::new(|| {
                round(&keys, &mut ir, |k, t| {
                    REFUSE.try_acquire(k, t, 1) == Decision::Pass
                })
            }),
        ),
        (
            "governor keyed (DashMap)",
            Box::new(|| {
                round(&keys, &mut ig, |k, t| {
                    if t != gov_now {
                        clock.advance(Duration::from_micros(t - gov_now));
                        gov_now = t;
                    }
                    gov.check_key(&k).is_ok()
                })
            }),
        ),
        (
            "LocalKeyedGate (heap, 2^21)",
            Box::new(|| {
                round(&keys, &mut il, |k, t| {
                    local.try_acquire(k, t, 1) == Decision::Pass
                })
            }),
        ),
        (
            "floor: plain single-writer table",
            Box::new(|| round(&keys, &mut ifl, |k, t| floor.decide(k, t, 1))),
        ),
        (
            "floor: shared table, 16-byte swap",
            Box::new(|| round(&keys, &mut if16, |k, t| floor16.decide(k, t, 1))),
        ),
        (
            "floor: shared table, 16-byte swap, 48 rounds of a mixer beside it",
            Box::new(|| round(&keys, &mut ifp, |k, t| floor16.decide_padded::<48>(k, t, 1))),
        ),
        (
            "floor: shared table, 8-byte swap",
            Box::new(|| round(&keys, &mut if8, |k, t| floor8.decide(k, t, 1))),
        ),
        (
            "LocalKeyedGate (heap, 2^21), Refuse",
            Box::new(|| {
                round(&keys, &mut ilr, |k, t| {
                    local_refuse.try_acquire(k, t, 1) == Decision::Pass
                })
            }),
        ),
    ];

    println!(
        "{rounds} interleaved rounds of {ROUND} decisions each, medians; load average at start: {}",
        load_average()
    );
    let mut times = vec![Vec::new(); contestants.len()];
    for _ in 0..rounds {
        for (c, t) in contestants.iter_mut().zip(times.iter_mut()) {
            t.push((c.1)());
        }
    }
    let med: Vec<f64> = times.into_iter().map(median).collect();
    println!();
    println!("| contestant | ns/decision (median) |");
    println!("|---|---:|");
    for (c, m) in contestants.iter().zip(&med) {
        println!("| {} | {m:.1} |", c.0);
    }
    println!();
    println!("Evict / Refuse: {:.2}x", med[0] / med[1]);
    println!("Evict / governor: {:.2}x", med[0] / med[2]);
    println!("Refuse / governor: {:.2}x", med[1] / med[2]);
    println!("LocalKeyedGate Evict / Refuse: {:.2}x", med[3] / med[8]);
    println!("LocalKeyedGate / governor: {:.2}x", med[3] / med[2]);
    println!("LocalKeyedGate / floor: {:.2}x", med[3] / med[4]);
    println!("Evict / 16-byte floor: {:.2}x", med[0] / med[5]);
    println!("16-byte floor / governor: {:.2}x", med[5] / med[2]);
    println!("8-byte floor / governor: {:.2}x", med[7] / med[2]);
    println!("load average at end: {}", load_average());
}
