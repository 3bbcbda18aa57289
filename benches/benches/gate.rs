//! The gate against governor, side by side in one run:
//! `cargo bench -p leaparray-benches --bench gate`.
//!
//! - `admit/*`: every call is admitted (limits far above the call count):
//!   the cost of a decision that books a permit.
//! - `refuse/*`: the limit is used up: the cost of a refusal.
//!
//! Both are single-threaded. The gate gets `now` passed in (advancing one
//! tick per call, so windows roll over as in use); governor runs once with
//! its `FakeRelativeClock` (no clock read, the fair comparison) and once
//! with its default quanta clock.

use std::hint::black_box;
use std::num::{NonZeroU32, NonZeroU64};

use criterion::{criterion_group, criterion_main, Criterion};

mod common;
use governor::clock::FakeRelativeClock;
use governor::{Quota, RateLimiter};
use leaparray::gate::{Decision, Gate};

const WINDOW: NonZeroU64 = NonZeroU64::new(500).unwrap();

fn admit(c: &mut Criterion) {
    let mut g = c.benchmark_group("admit");
    let gate = Gate::<2>::new(WINDOW, u64::MAX / 4);
    let mut now = 0u64;
    g.bench_function("leaparray_gate_n2", |b| {
        b.iter(|| {
            now += 1;
            gate.try_acquire(black_box(now), black_box(1))
        })
    });
    let quota = Quota::per_second(NonZeroU32::MAX);
    let fake = RateLimiter::direct_with_clock(quota, FakeRelativeClock::default());
    g.bench_function("governor_fake_clock", |b| b.iter(|| fake.check()));
    let real = RateLimiter::direct(quota);
    g.bench_function("governor_quanta_clock", |b| b.iter(|| real.check()));
    g.finish();
}

fn refuse(c: &mut Criterion) {
    let mut g = c.benchmark_group("refuse");
    let gate = Gate::<2>::new(WINDOW, 10);
    assert_eq!(gate.try_acquire(0, 10), Decision::Pass);
    g.bench_function("leaparray_gate_n2", |b| {
        b.iter(|| gate.try_acquire(black_box(100), black_box(1)))
    });
    let quota = Quota::per_second(NonZeroU32::new(10).unwrap());
    let fake = RateLimiter::direct_with_clock(quota, FakeRelativeClock::default());
    while fake.check().is_ok() {}
    g.bench_function("governor_fake_clock", |b| b.iter(|| fake.check()));
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = admit, refuse
}
criterion_main!(benches);
