//! Helpers shared by the benchmarks.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

/// Runs `op(thread, i)` for `iters` operations split over `threads` threads
/// started together, and returns the wall time: criterion then reports the
/// aggregate time per operation.
#[allow(dead_code)] // not every benchmark runs threads
pub fn on_threads(
    threads: u64,
    iters: u64,
    op: impl Fn(u64, u64) + Send + Sync + 'static,
) -> Duration {
    let op = Arc::new(op);
    let start = Arc::new(Barrier::new(threads as usize + 1));
    let per = iters / threads;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (op, start) = (op.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                for i in 0..per {
                    op(t, i);
                }
            })
        })
        .collect();
    start.wait();
    let t0 = Instant::now();
    handles.into_iter().for_each(|h| h.join().unwrap());
    t0.elapsed()
}

/// The criterion settings every benchmark uses: short warm-up, 2 s samples.
pub fn config() -> criterion::Criterion {
    criterion::Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}
