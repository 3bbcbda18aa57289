//! The cost of a decision under a flood of new keys: every request a key
//! never seen before, at 10 times the table's slots per window, on a
//! `KeyedGate<2, CAP>` that the flood keeps full, with `Overflow::Evict`
//! (each decision evicts a key, folds it into the memory of evicted keys
//! and starts the new key from its estimate) beside `Overflow::Refuse`
//! (each decision scans a full probe and refuses). Both tables in turn, in
//! interleaved rounds, one process, one thread; medians per decision.
//!
//! ```text
//! cargo run --release -p leaparray-benches --bin flood_cost [-- --rounds R]
//! ```
//!
//! `-- --one evict` (or `refuse`, `local-evict`, `local-refuse`) runs one
//! flood of 2^20 decisions through the 4,096-slot table of that kind and
//! policy, for a profiler.

use std::hint::black_box;
use std::num::NonZeroU64;
use std::time::Instant;

use leaparray::keyed::{HeapLocalKeyedGate, Overflow};
use leaparray::{Decision, KeyedGate};
use leaparray_benches::{median, rounds};

const WINDOW: NonZeroU64 = NonZeroU64::new(1_000).unwrap();
const LIMIT: u64 = 10;
const SMALL: usize = 4_096;
const LARGE: usize = 1 << 20;

static EVICT_SMALL: KeyedGate<2, SMALL> = KeyedGate::new(WINDOW, LIMIT);
static REFUSE_SMALL: KeyedGate<2, SMALL> =
    KeyedGate::new(WINDOW, LIMIT).with_overflow(Overflow::Refuse);
static EVICT_LARGE: KeyedGate<2, LARGE> = KeyedGate::new(WINDOW, LIMIT);
static REFUSE_LARGE: KeyedGate<2, LARGE> =
    KeyedGate::new(WINDOW, LIMIT).with_overflow(Overflow::Refuse);

/// splitmix64: distinct keys in a random order.
fn key(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A table the flood goes through: a shared one (`&self`) or one owner's.
trait Table {
    fn decide(&mut self, key: u64, now: u64) -> Decision;
    fn capacity(&self) -> u64;
}

impl<const CAP: usize> Table for &KeyedGate<2, CAP> {
    fn decide(&mut self, key: u64, now: u64) -> Decision {
        self.try_acquire(key, now, 1)
    }
    fn capacity(&self) -> u64 {
        CAP as u64
    }
}

impl Table for HeapLocalKeyedGate<2> {
    fn decide(&mut self, key: u64, now: u64) -> Decision {
        self.try_acquire(key, now, 1)
    }
    fn capacity(&self) -> u64 {
        HeapLocalKeyedGate::capacity(self) as u64
    }
}

/// A flood through `t`: `n` new keys from `*next` on, the clock moving one
/// tick per `per_tick` keys (10 times the slots per window of 1,000 ticks).
/// Gives nanoseconds per decision.
fn flood(t: &mut impl Table, next: &mut u64, n: u64) -> f64 {
    let per_tick = (10 * t.capacity() / WINDOW.get()).max(1);
    let start = Instant::now();
    for _ in 0..n {
        let i = *next;
        *next += 1;
        let _ = black_box(t.decide(key(i), i / per_tick));
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

fn run(what: &str, mut evict: impl Table, mut refuse: impl Table, rounds: usize) {
    // Fill both tables past full (the flood's first window), then time.
    let cap = evict.capacity();
    let (mut e, mut r) = (0u64, 0u64);
    flood(&mut evict, &mut e, 4 * cap);
    flood(&mut refuse, &mut r, 4 * cap);
    let (mut te, mut tr) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        te.push(flood(&mut evict, &mut e, 2 * cap));
        tr.push(flood(&mut refuse, &mut r, 2 * cap));
    }
    let (me, mr) = (median(te), median(tr));
    println!("| {what} | {me:.1} | {mr:.1} | {:.2}x |", me / mr);
}

fn local(cap: usize, policy: Overflow) -> HeapLocalKeyedGate<2> {
    HeapLocalKeyedGate::new(cap, WINDOW, LIMIT).with_overflow(policy)
}

fn main() {
    // `--one evict|refuse`: one flood of 2^20 decisions through the small
    // table of that policy, for a profiler (callgrind counts per decision).
    if let Some(p) = std::env::args().skip_while(|a| a != "--one").nth(1) {
        if let Some(policy) = p.strip_prefix("local-") {
            let overflow = if policy == "evict" {
                Overflow::Evict
            } else {
                Overflow::Refuse
            };
            let mut t = local(SMALL, overflow);
            let mut next = 0;
            flood(&mut t, &mut next, 4 * SMALL as u64);
            println!("{:.1} ns", flood(&mut t, &mut next, 1 << 20));
            return;
        }
        let mut t = if p == "evict" {
            &EVICT_SMALL
        } else {
            &REFUSE_SMALL
        };
        let mut next = 0;
        flood(&mut t, &mut next, 4 * SMALL as u64);
        println!("{:.1} ns", flood(&mut t, &mut next, 1 << 20));
        return;
    }
    let rounds = rounds(15);
    println!(
        "{rounds} interleaved rounds, medians; a flood of new keys at 10x the slots per window"
    );
    println!();
    println!("| table | `Evict` ns/decision | `Refuse` ns/decision | ratio |");
    println!("|---|---:|---:|---:|");
    run("`KeyedGate<2, 4096>`", &EVICT_SMALL, &REFUSE_SMALL, rounds);
    run(
        "`KeyedGate<2, 2^20>`",
        &EVICT_LARGE,
        &REFUSE_LARGE,
        rounds.min(5),
    );
    run(
        "`LocalKeyedGate<2, _>`, 4,096 slots (heap)",
        local(SMALL, Overflow::Evict),
        local(SMALL, Overflow::Refuse),
        rounds,
    );
    run(
        "`LocalKeyedGate<2, _>`, 2^20 slots (heap)",
        local(LARGE, Overflow::Evict),
        local(LARGE, Overflow::Refuse),
        rounds.min(5),
    );
}
