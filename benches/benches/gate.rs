//! The gate against governor, side by side in one run:
//! `cargo bench -p leaparray-benches --bench gate`.
//!
//! - `admit/*`: every call is admitted (a limit the calls never reach):
//!   the cost of a decision that books a permit.
//! - `refuse/*`: the limit is used up: the cost of a refusal.
//! - `admit_2_threads/*`: two threads on one gate (or one governor), every
//!   call admitted; aggregate time per decision.
//!
//! The gate gets `now` passed in (advancing two ticks per call, 250 calls
//! per 500-tick window, so windows roll over as in use); governor runs with
//! its `FakeRelativeClock` (no clock read, the fair comparison) and once
//! with its default quanta clock. Each shape of `Gate<2>` is measured: one
//! 64-bit word (the shape `Gate::new` picks for this limit), one 128-bit
//! word, and buckets.

use std::hint::black_box;
use std::num::{NonZeroU32, NonZeroU64};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use crossbeam_utils::CachePadded;

mod common;
use common::on_threads;
use governor::clock::FakeRelativeClock;
use governor::{Quota, RateLimiter};
use leaparray::gate::{Member, Shape};
use leaparray::{Decision, Gate, GateSet};

const WINDOW: NonZeroU64 = NonZeroU64::new(500).unwrap();
/// Above the 500 calls an interval of two windows gets.
const LIMIT: u64 = 1_000;

fn shapes(limit: u64) -> [(&'static str, Gate<2>); 3] {
    let word = Gate::<2>::new(WINDOW, limit);
    assert!(matches!(word.shape(), Shape::Word64 { .. }));
    let wide = Gate::<2>::new(WINDOW, limit).in_wide_word().unwrap();
    let buckets = Gate::<2>::new(WINDOW, limit).in_buckets();
    [
        ("leaparray_gate_n2", word),
        ("leaparray_gate_n2_word128", wide),
        ("leaparray_gate_n2_buckets", buckets),
    ]
}

fn admit(c: &mut Criterion) {
    let mut g = c.benchmark_group("admit");
    for (name, gate) in shapes(LIMIT) {
        let mut now = 0u64;
        g.bench_function(name, |b| {
            b.iter(|| {
                now += 2;
                let d = gate.try_acquire(black_box(now), black_box(1));
                debug_assert_eq!(d, Decision::Pass);
                d
            })
        });
    }
    let quota = Quota::per_second(NonZeroU32::MAX);
    let fake = RateLimiter::direct_with_clock(quota, FakeRelativeClock::default());
    g.bench_function("governor_fake_clock", |b| b.iter(|| fake.check()));
    let real = RateLimiter::direct(quota);
    g.bench_function("governor_quanta_clock", |b| b.iter(|| real.check()));
    // Two limits at once, both one 64-bit word: 1,000 per 1,000 ticks and
    // 32,767 per 60,000 (the calls make 30,000).
    let second = Gate::<2>::new(WINDOW, LIMIT);
    let minute = Gate::<2>::new(NonZeroU64::new(30_000).unwrap(), 32_767).with_occupy_timeout(0);
    assert!(matches!(minute.shape(), Shape::Word64 { .. }));
    let set = GateSet::new([&second as &dyn Member, &minute]);
    let mut now = 0u64;
    g.bench_function("leaparray_gate_set_of_2", |b| {
        b.iter(|| {
            now += 2;
            set.try_acquire(black_box(now), black_box(1))
        })
    });
    g.finish();
}

fn refuse(c: &mut Criterion) {
    let mut g = c.benchmark_group("refuse");
    for (name, gate) in shapes(10) {
        assert_eq!(gate.try_acquire(0, 10), Decision::Pass);
        g.bench_function(name, |b| {
            b.iter(|| gate.try_acquire(black_box(100), black_box(1)))
        });
    }
    let quota = Quota::per_second(NonZeroU32::new(10).unwrap());
    let fake = RateLimiter::direct_with_clock(quota, FakeRelativeClock::default());
    while fake.check().is_ok() {}
    g.bench_function("governor_fake_clock", |b| b.iter(|| fake.check()));
    g.finish();
}

fn admit_2_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("admit_2_threads");
    // Both threads read one shared clock, which each advances every 256
    // of its calls (a coarse clock, as a packet loop would read): 512
    // decisions per 1-tick window, 1,024 per interval of the gate's two
    // windows, far below its limit (32,767, no prioritized requests: one
    // 64-bit word). Refusals, if any, are counted and reported.
    let (decided, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    g.bench_function("leaparray_gate_n2", |b| {
        b.iter_custom(|iters| {
            let gate = Arc::new(Gate::<2>::new(NonZeroU64::MIN, 32_767).with_occupy_timeout(0));
            assert!(matches!(gate.shape(), Shape::Word64 { .. }));
            let clock = Arc::new(CachePadded::new(AtomicU64::new(0)));
            let (g2, r2) = (gate.clone(), refused.clone());
            decided.fetch_add(iters, Ordering::Relaxed);
            on_threads(2, iters, move |_, i| {
                let now = if i % 256 == 0 {
                    clock.fetch_add(1, Ordering::Relaxed)
                } else {
                    clock.load(Ordering::Relaxed)
                };
                if g2.try_acquire(black_box(now), 1) != Decision::Pass {
                    r2.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
    });
    eprintln!(
        "admit_2_threads/leaparray_gate_n2: {} of {} decisions refused",
        refused.load(Ordering::Relaxed),
        decided.load(Ordering::Relaxed)
    );
    let quota = Quota::per_second(NonZeroU32::MAX);
    let fake = Arc::new(RateLimiter::direct_with_clock(
        quota,
        FakeRelativeClock::default(),
    ));
    g.bench_function("governor_fake_clock", |b| {
        b.iter_custom(|iters| {
            let fake = fake.clone();
            on_threads(2, iters, move |_, _| {
                let _ = black_box(fake.check());
            })
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = admit, refuse, admit_2_threads
}
criterion_main!(benches);
