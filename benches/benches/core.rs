//! Core benchmarks, every figure measured side by side in one run:
//! `cargo bench -p leaparray-benches --bench core`.
//!
//! - `add/*`: one add on one thread, against the physical floor (a raw
//!   `AtomicU64::fetch_add` on the same machine).
//! - `sum/*`: a sum over N = 2, 10, 60 full windows; `add+sum/n2` the pair.
//! - `add_2_threads/*`: aggregate time per add with two threads adding to one
//!   array (and to one raw atomic).
//!
//! `now` is passed in (the array never reads a clock) and advances by one
//! tick per add, so the adds also roll windows over as they would in use.

use std::hint::black_box;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};

mod common;
use common::on_threads;
use leaparray::LeapArray;

/// 500-tick windows: one roll-over every 500 adds in the loops below.
const WINDOW: NonZeroU64 = NonZeroU64::new(500).unwrap();

fn add(c: &mut Criterion) {
    let mut g = c.benchmark_group("add");
    let raw = AtomicU64::new(0);
    g.bench_function("raw_fetch_add", |b| {
        b.iter(|| raw.fetch_add(black_box(1), Ordering::Relaxed))
    });
    // The floor for any exact protocol that must check a word's state and
    // update it in one atomic step: a load and a compare-and-swap.
    g.bench_function("raw_cas_loop", |b| {
        b.iter(|| {
            let mut cur = raw.load(Ordering::Relaxed);
            loop {
                match raw.compare_exchange_weak(
                    cur,
                    cur + black_box(1),
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(v) => break v,
                    Err(v) => cur = v,
                }
            }
        })
    });
    let a = LeapArray::<2>::new(WINDOW);
    let mut now = 0u64;
    g.bench_function("leaparray_n2_c1", |b| {
        b.iter(|| {
            now += 1;
            a.add(black_box(now), 0, black_box(1))
        })
    });
    let a6 = LeapArray::<2, 6>::new(WINDOW);
    let mut now = 0u64;
    g.bench_function("leaparray_n2_c6", |b| {
        b.iter(|| {
            now += 1;
            a6.add(black_box(now), black_box(3), black_box(1))
        })
    });
    g.finish();
}

fn filled<const N: usize>() -> (LeapArray<N>, u64) {
    let a = LeapArray::<N>::new(WINDOW);
    for t in (0..N as u64 * WINDOW.get()).step_by(50) {
        a.add(t, 0, 1).unwrap();
    }
    (a, N as u64 * WINDOW.get() - 1)
}

fn sum(c: &mut Criterion) {
    let mut g = c.benchmark_group("sum");
    let (a2, now2) = filled::<2>();
    g.bench_function("n2", |b| b.iter(|| a2.sum(black_box(now2), 0)));
    let (a10, now10) = filled::<10>();
    g.bench_function("n10", |b| b.iter(|| a10.sum(black_box(now10), 0)));
    let (a60, now60) = filled::<60>();
    g.bench_function("n60", |b| b.iter(|| a60.sum(black_box(now60), 0)));
    g.finish();

    let mut g = c.benchmark_group("add+sum");
    let a = LeapArray::<2>::new(WINDOW);
    let mut now = 0u64;
    g.bench_function("n2", |b| {
        b.iter(|| {
            now += 1;
            let _ = a.add(black_box(now), 0, 1);
            a.sum(black_box(now), 0)
        })
    });
    g.finish();
}

fn add_2_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("add_2_threads");
    let raw = Arc::new(AtomicU64::new(0));
    g.bench_function("raw_fetch_add", |b| {
        b.iter_custom(|iters| {
            let raw = raw.clone();
            on_threads(2, iters, move |_, _| {
                raw.fetch_add(black_box(1), Ordering::Relaxed);
            })
        })
    });
    g.bench_function("raw_cas_loop", |b| {
        b.iter_custom(|iters| {
            let raw = raw.clone();
            on_threads(2, iters, move |_, _| {
                let mut cur = raw.load(Ordering::Relaxed);
                while let Err(v) = raw.compare_exchange_weak(
                    cur,
                    cur + black_box(1),
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    cur = v;
                }
            })
        })
    });
    let a = Arc::new(LeapArray::<2>::new(WINDOW));
    // Time keeps moving forward across samples (a sample that started over
    // at 0 would only collect cheap `Stale` refusals).
    let mut clock = 0u64;
    g.bench_function("leaparray_n2", |b| {
        b.iter_custom(|iters| {
            let a = a.clone();
            let base = clock;
            clock += iters;
            on_threads(2, iters, move |_, i| {
                let _ = a.add(black_box(base + 2 * i), 0, 1);
            })
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = add, sum, add_2_threads
}
criterion_main!(benches);
