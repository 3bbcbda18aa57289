//! leaparray against sentinel-core 0.1.3 (the Rust port of Sentinel), side
//! by side in one run: `cargo bench -p leaparray-benches --bench peers`.
//!
//! The operation is Sentinel's hot pair: record a pass, then read the pass
//! count of the sliding interval (2 windows of 500 ms).
//!
//! - sentinel-core: `ResourceNode::add_count(Pass, 1)` + `sum(Pass)`, with
//!   its cached millisecond clock (`start_time_ticker`), its fastest mode.
//! - leaparray: `add` + `sum` on a `LeapArray<2>`, once with `now` passed in
//!   (how the crate is meant to be used: one clock read per batch) and once
//!   reading a cached clock (an atomic a ticker thread updates every ms, as
//!   sentinel-core's) on every call.

use std::hint::black_box;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};

mod common;
use common::on_threads;
use leaparray::LeapArray;
use sentinel_core::base::{MetricEvent, ReadStat, ResourceType, WriteStat};
use sentinel_core::stat::get_or_create_resource_node;

fn add_and_sum(c: &mut Criterion) {
    let mut g = c.benchmark_group("add+sum");

    sentinel_core::utils::start_time_ticker();
    let node = get_or_create_resource_node(&"bench".to_string(), &ResourceType::Common);
    g.bench_function("sentinel_core_resource_node", |b| {
        b.iter(|| {
            node.add_count(MetricEvent::Pass, black_box(1));
            node.sum(MetricEvent::Pass)
        })
    });

    let a = LeapArray::<2>::new(NonZeroU64::new(500).unwrap());
    let mut now = 0u64;
    g.bench_function("leaparray_now_passed_in", |b| {
        b.iter(|| {
            now += 1;
            let _ = a.add(black_box(now), 0, 1);
            a.sum(black_box(now), 0)
        })
    });

    // A cached millisecond clock like sentinel-core's ticker.
    let cached = Arc::new(AtomicU64::new(0));
    let ticker = {
        let cached = cached.clone();
        std::thread::spawn(move || {
            let origin = Instant::now();
            while Arc::strong_count(&cached) > 1 {
                cached.store(origin.elapsed().as_millis() as u64, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let a = LeapArray::<2>::new(NonZeroU64::new(500).unwrap());
    g.bench_function("leaparray_cached_clock", |b| {
        b.iter(|| {
            let now = cached.load(Ordering::Relaxed);
            let _ = a.add(now, 0, 1);
            a.sum(now, 0)
        })
    });
    g.finish();
    drop(cached);
    let _ = ticker.join();
}

/// The same pair from two threads on one array (or node, or limiter):
/// aggregate time per operation.
fn two_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("add+sum_2_threads");
    let node = get_or_create_resource_node(&"bench2".to_string(), &ResourceType::Common);
    g.bench_function("sentinel_core_resource_node", |b| {
        b.iter_custom(|iters| {
            let node = node.clone();
            on_threads(2, iters, move |_, _| {
                node.add_count(MetricEvent::Pass, 1);
                black_box(node.sum(MetricEvent::Pass));
            })
        })
    });
    let a: &'static LeapArray<2> =
        Box::leak(Box::new(LeapArray::new(NonZeroU64::new(500).unwrap())));
    let mut clock = 0u64;
    g.bench_function("leaparray_now_passed_in", |b| {
        b.iter_custom(|iters| {
            let base = clock;
            clock += iters;
            on_threads(2, iters, move |_, i| {
                let _ = a.add(black_box(base + 2 * i), 0, 1);
                black_box(a.sum(base + 2 * i, 0));
            })
        })
    });
    let quota = governor::Quota::per_second(std::num::NonZeroU32::MAX);
    let fake: &'static _ = Box::leak(Box::new(governor::RateLimiter::direct_with_clock(
        quota,
        governor::clock::FakeRelativeClock::default(),
    )));
    g.bench_function("governor_check_fake_clock", |b| {
        b.iter_custom(|iters| {
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
    targets = add_and_sum, two_threads
}
criterion_main!(benches);
