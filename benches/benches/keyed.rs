//! The keyed gate against governor's keyed limiter, side by side in one run:
//! `cargo bench -p leaparray-benches --bench keyed`.
//!
//! - `keyed_1m/*`: 1,000,000 distinct keys, all resident before measuring,
//!   looked up in a random order (a pregenerated sequence of 2^22 keys drawn
//!   from the set, cycled): the cost of a decision for a key whose slot is
//!   most likely not in any cache. The keyed gate is a
//!   `KeyedGate<2, 2^21>` (load factor 0.48); a key whose probe of 16 slots
//!   is already full finds no room (about 0.02% of keys at this load, as
//!   linear probing predicts): the key set is the first 1,000,000 keys the
//!   table has room for (the count of the others is printed), and governor
//!   gets the same keys.
//! - `*/leaparray_keyed_burst_32`: the same decisions, 32 at a time
//!   (`KeyedGate::try_acquire_burst`, a receive burst on a packet path):
//!   the time per decision.
//! - `keyed_1m/floor_*`: the hardware floor of such a decision: one 16-byte
//!   atomic load and one 16-byte compare-and-swap at a random slot of a
//!   32 MiB array, nothing else; `floor_one_after_another` the same with
//!   each slot chosen from the previous swap's result, so that no two
//!   misses overlap (a decision of a few hundred instructions gives the
//!   core no room to start the next one's miss early either).
//! - `keyed_1k/*`: the same with 1,000 keys (cache-resident), a
//!   `KeyedGate<2, 4096>`.
//! - `keyed_2_threads/*`: two threads on one table (or one governor), the
//!   1,000,000 keys in random order; aggregate time per decision.
//! - `keyed_flood/*`: `Overflow::Evict` against `Overflow::Refuse`, resident
//!   keys and a flood of new ones (see `keyed_flood`).
//!
//! Every decision is admitted: a limit of 1,000 per two windows of 500
//! ticks, and time advancing one tick every 4,096 decisions (256 with 1,000
//! keys), so a key gets a few (a few hundred) decisions per interval.
//! Refusals, if any, are counted and reported. The keyed gate gets `now`
//! passed in; governor (`RateLimiter::dashmap_with_clock`, its default
//! keyed store, a `DashMap` hashing with std's SipHash) runs with its
//! `FakeRelativeClock` (no clock read, the fair comparison), advanced one
//! microsecond where the gate's `now` advances one tick, under the same
//! rate: a burst of 1,000, one permit per microsecond.

use std::hint::black_box;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use crossbeam_utils::CachePadded;

mod common;
use common::on_threads;
use leaparray::keyed::Overflow;
use leaparray::Decision;
use leaparray::KeyedGate;
use leaparray_benches::{keyed_governor, splitmix, warm_gate, warm_governor, Keys};
use portable_atomic::AtomicU128;

const WINDOW: NonZeroU64 = NonZeroU64::new(500).unwrap();
/// Per key, per interval of two windows (1,000 ticks).
const LIMIT: u64 = 1_000;

/// 2^21 slots for 1,000,000 keys (load factor 0.48): 32 MiB of slots (and
/// 64 MiB of the memory of evicted keys, unused here), so a `static`.
/// `Overflow::Refuse`: the key set is the keys the table has room for.
static BIG: KeyedGate<2, { 1 << 21 }> =
    KeyedGate::new(WINDOW, LIMIT).with_overflow(Overflow::Refuse);
/// 4,096 slots for 1,000 keys (load factor 0.24): 64 KiB of slots.
static SMALL: KeyedGate<2, 4096> = KeyedGate::new(WINDOW, LIMIT).with_overflow(Overflow::Refuse);

/// `keyed_flood`: a `KeyedGate<2, 4096>` per overflow policy, limit 10.
static FLOOD_EVICT: KeyedGate<2, 4096> = KeyedGate::new(WINDOW, 10);
static FLOOD_REFUSE: KeyedGate<2, 4096> =
    KeyedGate::new(WINDOW, 10).with_overflow(Overflow::Refuse);

/// The last `now` given to `BIG`, so that its groups never go back in time.
static BIG_NOW: AtomicU64 = AtomicU64::new(0);

/// The 1,000,000 keys, inserted into `BIG`.
fn million() -> &'static Keys {
    static K: OnceLock<Keys> = OnceLock::new();
    K.get_or_init(|| Keys::new(&BIG, 1_000_000, 22, 1))
}

/// The 1,000 keys, inserted into `SMALL`.
fn thousand() -> &'static Keys {
    static K: OnceLock<Keys> = OnceLock::new();
    K.get_or_init(|| Keys::new(&SMALL, 1_000, 16, 2))
}

/// Prints the refusals of a benchmark that ran (not filtered out).
fn report(group: &str, name: &str, refused: u64, decided: u64) {
    if decided == 0 {
        return;
    }
    eprintln!("{group}/{name}: {refused} of {decided} decisions refused");
}

/// One thread, the keys of `keys` in random order, time advancing one tick
/// every `2^shift` decisions from `start`; returns the last `now`.
fn one_thread<const CAP: usize>(
    c: &mut Criterion,
    group: &str,
    gate: &KeyedGate<2, CAP>,
    keys: &Keys,
    shift: u32,
    start: u64,
) -> u64 {
    let mut g = c.benchmark_group(group);
    let mask = keys.mask();
    warm_gate(gate, keys, start);
    let (mut i, mut refused) = (0usize, 0u64);
    g.bench_function("leaparray_keyed", |b| {
        b.iter(|| {
            let key = keys.seq[i & mask];
            let now = start + (i >> shift) as u64;
            i += 1;
            let d = gate.try_acquire(black_box(key), black_box(now), black_box(1));
            if d != Decision::Pass {
                refused += 1;
            }
            d
        })
    });
    report(group, "leaparray_keyed", refused, i as u64);
    let start = start + (i >> shift) as u64 + 1;

    // The same decisions in bursts of 32 (`try_acquire_burst`), the time
    // per decision.
    let (mut i, mut refused) = (0usize, 0u64);
    g.bench_function("leaparray_keyed_burst_32", |b| {
        b.iter_custom(|iters| {
            let mut reqs = [(0u64, 1u64); 32];
            let mut out = [Decision::Block; 32];
            let t0 = Instant::now();
            let mut done = 0;
            while done < iters {
                let m = 32.min(iters - done) as usize;
                for r in &mut reqs[..m] {
                    r.0 = keys.seq[i & mask];
                    i += 1;
                }
                let now = start + (i >> shift) as u64;
                let k = gate.try_acquire_burst(black_box(now), black_box(&reqs[..m]), &mut out);
                refused += out[..k].iter().filter(|d| **d != Decision::Pass).count() as u64;
                done += m as u64;
            }
            t0.elapsed()
        })
    });
    report(group, "leaparray_keyed_burst_32", refused, i as u64);
    let end = start + (i >> shift) as u64 + 1;

    let (lim, clock) = keyed_governor(LIMIT);
    warm_governor(&lim, keys);
    let tick = (1usize << shift) - 1;
    let (mut i, mut refused) = (0usize, 0u64);
    g.bench_function("governor_keyed_fake_clock", |b| {
        b.iter(|| {
            let key = keys.seq[i & mask];
            if i & tick == tick {
                clock.advance(Duration::from_micros(1));
            }
            i += 1;
            let r = lim.check_key(black_box(&key));
            if r.is_err() {
                refused += 1;
            }
            r
        })
    });
    report(group, "governor_keyed_fake_clock", refused, i as u64);
    g.finish();
    end
}

fn keyed_1m(c: &mut Criterion) {
    let keys = million();
    let start = BIG_NOW.load(Ordering::Relaxed);
    let end = one_thread(c, "keyed_1m", &BIG, keys, 12, start);
    BIG_NOW.store(end, Ordering::Relaxed);
}

/// The hardware floor of a decision on a table larger than the caches: one
/// 16-byte atomic load and one 16-byte compare-and-swap at a random slot of
/// a 32 MiB array (2^21 slots, as `BIG`), nothing else. The keyed gate adds
/// the key's hash, the check and its bookkeeping to this.
fn keyed_1m_floor(c: &mut Criterion) {
    static SLOTS: [AtomicU128; 1 << 21] = [const { AtomicU128::new(0) }; 1 << 21];
    let mut g = c.benchmark_group("keyed_1m");
    let mut i = 0u64;
    g.bench_function("floor_load_and_cas_at_random_of_32_mib", |b| {
        b.iter(|| {
            i += 1;
            let s = &SLOTS[(splitmix(i) >> 43) as usize];
            let v = s.load(Ordering::Acquire);
            s.compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Acquire)
        })
    });
    // The same, each slot chosen after the previous swap returned (its
    // index depends on the swap's result), so no two misses overlap: the
    // floor of decisions that run one after another.
    let mut last = 0u64;
    g.bench_function("floor_one_after_another", |b| {
        b.iter(|| {
            i += 1;
            let s = &SLOTS[(splitmix(i ^ (last & 1)) >> 43) as usize];
            let v = s.load(Ordering::Acquire);
            let r = s.compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Acquire);
            last = r.unwrap_or_else(|x| x) as u64;
            r
        })
    });
    g.finish();
}

fn keyed_1k(c: &mut Criterion) {
    let keys = thousand();
    one_thread(c, "keyed_1k", &SMALL, keys, 8, 0);
}

fn keyed_2_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("keyed_2_threads");
    let keys = million();
    let mask = keys.mask();
    // Each call of the routine starts where the last left off in the
    // sequence; the two threads take alternate keys of it.
    let cursor = Arc::new(AtomicU64::new(0));
    // Both threads read one shared clock, which each advances every 4,096
    // of its calls: 8,192 decisions per tick, about 8 per key per interval.
    let start = BIG_NOW.load(Ordering::Relaxed);
    warm_gate(&BIG, keys, start);
    let clock = Arc::new(CachePadded::new(AtomicU64::new(start)));
    let (decided, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    g.bench_function("leaparray_keyed", |b| {
        b.iter_custom(|iters| {
            let (clock, refused) = (clock.clone(), refused.clone());
            let from = cursor.fetch_add(iters, Ordering::Relaxed) as usize;
            decided.fetch_add(iters, Ordering::Relaxed);
            on_threads(2, iters, move |t, i| {
                let key = keys.seq[(from + 2 * i as usize + t as usize) & mask];
                let now = if i % 4096 == 0 {
                    clock.fetch_add(1, Ordering::Relaxed)
                } else {
                    clock.load(Ordering::Relaxed)
                };
                if BIG.try_acquire(black_box(key), black_box(now), 1) != Decision::Pass {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
    });
    report(
        "keyed_2_threads",
        "leaparray_keyed",
        refused.load(Ordering::Relaxed),
        decided.load(Ordering::Relaxed),
    );
    BIG_NOW.store(clock.load(Ordering::Relaxed) + 1, Ordering::Relaxed);

    let (lim, fake) = keyed_governor(LIMIT);
    warm_governor(&lim, keys);
    let lim = Arc::new(lim);
    cursor.store(0, Ordering::Relaxed);
    let (decided, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    g.bench_function("governor_keyed_fake_clock", |b| {
        b.iter_custom(|iters| {
            let (lim, fake, refused) = (lim.clone(), fake.clone(), refused.clone());
            let from = cursor.fetch_add(iters, Ordering::Relaxed) as usize;
            decided.fetch_add(iters, Ordering::Relaxed);
            on_threads(2, iters, move |t, i| {
                let key = keys.seq[(from + 2 * i as usize + t as usize) & mask];
                if i % 4096 == 0 {
                    fake.advance(Duration::from_micros(1));
                }
                if lim.check_key(black_box(&key)).is_err() {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
    });
    report(
        "keyed_2_threads",
        "governor_keyed_fake_clock",
        refused.load(Ordering::Relaxed),
        decided.load(Ordering::Relaxed),
    );
    g.finish();
}

/// `keyed_flood/*`: the cost of a decision under each overflow policy, on a
/// full `KeyedGate<2, 4096>` (limit 10): `resident`, 2,048 keys in turn
/// (each admitted or refused by its own gate: no overflow); `flood`, a new
/// key each decision on a table filled by earlier ones (`Evict`: an
/// eviction, its fold and the new key's estimate; `Refuse`: a scan of a
/// full probe and a refusal).
fn keyed_flood(c: &mut Criterion) {
    let mut g = c.benchmark_group("keyed_flood");
    for (name, t) in [("evict", &FLOOD_EVICT), ("refuse", &FLOOD_REFUSE)] {
        // Fill the table.
        for k in 0..8_192u64 {
            let _ = t.try_acquire(splitmix(k), 0, 1);
        }
        let mut i = 0u64;
        g.bench_function(format!("{name}_resident"), |b| {
            b.iter(|| {
                i += 1;
                black_box(t.try_acquire(splitmix(i % 2_048), i >> 12, 1))
            })
        });
        let mut k = 1u64 << 40;
        g.bench_function(format!("{name}_flood"), |b| {
            b.iter(|| {
                k += 1;
                black_box(t.try_acquire(splitmix(k), i + ((k - (1 << 40)) >> 12), 1))
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = keyed_1m, keyed_1m_floor, keyed_1k, keyed_2_threads, keyed_flood
}
criterion_main!(benches);
