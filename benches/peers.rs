//! leaparray against sentinel-core 0.1.3 (the Rust port of Sentinel), side
//! by side in one run: `cargo bench --bench peers`.
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

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = add_and_sum
}
criterion_main!(benches);
