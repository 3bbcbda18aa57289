//! Loom models of leaparray live in `tests/`; run them with
//! `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release`.
//!
//! This library holds the helpers the models share.
#![cfg(leaparray_loom)]

use core::num::NonZeroU64;

use leaparray::array::Width;
use leaparray::{AddError, LeapArray};
use loom::thread;

/// The final counts of the window starting at `start`: live, retired, or
/// never created (all zero).
pub fn final_counts<const N: usize, const C: usize, W: Width>(
    a: &LeapArray<N, C, W>,
    start: u64,
) -> [u64; C] {
    if let Some(w) = a.window_at(start) {
        return w.counts;
    }
    let retired: Vec<_> = a
        .retired(start)
        .into_iter()
        .filter(|(s, _)| *s == start)
        .collect();
    assert!(
        retired.len() <= 1,
        "window {start} retired twice: {retired:?}"
    );
    retired.first().map(|r| r.1).unwrap_or([0; C])
}

/// Runs `f` in its own loom thread.
///
/// Every racing actor of a model runs in a spawned thread and the model's
/// main thread only joins: loom 0.7 does not explore interleavings against
/// atomic operations that the main thread makes before joining (loom issue
/// #392), so a model written that way runs one schedule and proves nothing.
pub fn spawn<T: 'static>(f: impl FnOnce() -> T + 'static) -> thread::JoinHandle<T> {
    thread::spawn(f)
}

/// Outcomes seen across all schedules of one model, to assert that the
/// model really explored the race (both sides of it happened).
pub struct Seen<T: Ord>(std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<T>>>);

impl<T: Ord + Clone + core::fmt::Debug> Seen<T> {
    /// An empty record.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Seen(Default::default())
    }
    /// A closure that records one outcome (movable into `loom::model`).
    pub fn recorder(&self) -> impl Fn(T) + Send + Sync + 'static
    where
        T: Send + 'static,
    {
        let set = self.0.clone();
        move |t| {
            set.lock().unwrap().insert(t);
        }
    }
    /// Panics unless every outcome in `expected` was recorded.
    pub fn assert_all(&self, expected: &[T]) {
        let set = self.0.lock().unwrap();
        for e in expected {
            assert!(set.contains(e), "no schedule produced {e:?}; seen {set:?}");
        }
    }
}

/// Window length used by every model: 10 ticks.
pub const W: NonZeroU64 = match NonZeroU64::new(10) {
    Some(w) => w,
    None => panic!(),
};

/// `n` if the add counted, 0 if it was refused as `Stale` (the only refusal
/// the models expect).
pub fn ok(r: Result<(), AddError>, n: u64) -> u64 {
    if r.is_ok() {
        n
    } else {
        assert_eq!(r, Err(AddError::Stale), "only Stale is expected here");
        0
    }
}
