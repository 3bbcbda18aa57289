//! Packet-path benchmarks, side by side in one run: `cargo bench -p leaparray-benches --bench shard`.
//!
//! - `one_thread/*`: one add per call, against the physical floor of a
//!   single writer (a relaxed load and store of its own word) and a raw
//!   `fetch_add`; a `Mutex`-protected ring is the naive baseline.
//!   `shard_writer_add` reaches the writer through the benchmark's closure
//!   (its state is loaded and stored on every call);
//!   `shard_writer_add_owned` is a loop that owns its writer, as a receive
//!   loop does.
//! - `two_threads/*`: aggregate time per add with two threads, each on its
//!   own shard (single-writer handles, or shared adds with the thread's
//!   index as the hint), against two threads on one `fetch_add` word.
//!
//! `now` is passed in and advances one tick per add (1,000-tick windows).

use std::hint::black_box;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};

mod common;
use common::on_threads;
use leaparray::shard::Sharded;
use leaparray::LeapArray;

const WINDOW: NonZeroU64 = NonZeroU64::new(1_000).unwrap();

/// The naive sliding window: a ring of (window id, count) under a mutex.
struct MutexRing {
    ring: Mutex<[(u64, u64); 2]>,
}

impl MutexRing {
    fn add(&self, now: u64, n: u64) {
        let id = now / WINDOW.get();
        let mut r = self.ring.lock().unwrap();
        let slot = &mut r[(id % 2) as usize];
        if slot.0 != id {
            *slot = (id, 0);
        }
        slot.1 += n;
    }
}

fn one_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("one_thread");
    let word = AtomicU64::new(0);
    g.bench_function("raw_load_store", |b| {
        b.iter(|| {
            let v = word.load(Ordering::Relaxed);
            word.store(v + black_box(1), Ordering::Relaxed);
        })
    });
    g.bench_function("raw_fetch_add", |b| {
        b.iter(|| word.fetch_add(black_box(1), Ordering::Relaxed))
    });
    let s = Sharded::<2, 2, 2>::new(WINDOW);
    let mut w = s.claim(0).unwrap();
    let mut now = 0u64;
    g.bench_function("shard_writer_add", |b| {
        b.iter(|| {
            now += 1;
            w.add(black_box(now), 0, black_box(1))
        })
    });
    drop(w);
    // The writer owned by the loop that adds, as a receive loop owns its
    // queue's writer: its window and running counts can stay in registers.
    g.bench_function("shard_writer_add_owned", |b| {
        b.iter_custom(|iters| {
            let mut w = s.claim(0).unwrap();
            let first = now + 1;
            now += iters;
            let start = Instant::now();
            for t in first..=now {
                black_box(w.add(black_box(t), 0, black_box(1))).ok();
            }
            start.elapsed()
        })
    });
    // The same loop as a packet counter writes it: `n` is 1 and the result
    // is checked, not kept (the time stays opaque).
    g.bench_function("shard_writer_add_owned_count_one", |b| {
        b.iter_custom(|iters| {
            let mut w = s.claim(0).unwrap();
            let first = now + 1;
            now += iters;
            let mut errors = 0u64;
            let start = Instant::now();
            for t in first..=now {
                errors += u64::from(w.add(black_box(t), 0, 1).is_err());
            }
            let took = start.elapsed();
            assert_eq!(errors, 0);
            took
        })
    });
    let mut now = 0u64;
    g.bench_function("sharded_shared_add", |b| {
        b.iter(|| {
            now += 1;
            s.add(black_box(1), black_box(now), 0, black_box(1))
        })
    });
    let a = LeapArray::<2, 2>::new(WINDOW);
    let mut now = 0u64;
    g.bench_function("leaparray_add", |b| {
        b.iter(|| {
            now += 1;
            a.add(black_box(now), 0, black_box(1))
        })
    });
    let m = MutexRing {
        ring: Mutex::new([(0, 0); 2]),
    };
    let mut now = 0u64;
    g.bench_function("mutex_ring_add", |b| {
        b.iter(|| {
            now += 1;
            m.add(black_box(now), black_box(1))
        })
    });
    g.finish();
}

fn two_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("two_threads");
    let word = Arc::new(AtomicU64::new(0));
    g.bench_function("raw_fetch_add_one_word", |b| {
        b.iter_custom(|iters| {
            let word = word.clone();
            on_threads(2, iters, move |_, _| {
                word.fetch_add(black_box(1), Ordering::Relaxed);
            })
        })
    });
    let s: &'static Sharded<2, 2, 2> = Box::leak(Box::new(Sharded::new(WINDOW)));
    let mut clock = 0u64;
    g.bench_function("shard_writer_add", |b| {
        b.iter_custom(|iters| {
            let base = clock;
            clock += iters;
            // Each thread claims its own shard for the sample.
            let start = Arc::new(Barrier::new(3));
            let per = iters / 2;
            let hs: Vec<_> = (0..2)
                .map(|t| {
                    let start = start.clone();
                    thread::spawn(move || {
                        let mut w = s.claim(t).unwrap();
                        start.wait();
                        for i in 0..per {
                            let _ = w.add(black_box(base + i), 0, 1);
                        }
                    })
                })
                .collect();
            start.wait();
            let t0 = Instant::now();
            hs.into_iter().for_each(|h| h.join().unwrap());
            t0.elapsed()
        })
    });
    let shared: &'static Sharded<2, 2, 2> = Box::leak(Box::new(Sharded::new(WINDOW)));
    let mut clock = 0u64;
    g.bench_function("sharded_shared_add", |b| {
        b.iter_custom(|iters| {
            let base = clock;
            clock += iters;
            on_threads(2, iters, move |t, i| {
                let _ = shared.add(t as usize, black_box(base + i), 0, 1);
            })
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = one_thread, two_threads
}
criterion_main!(benches);
