//! Sentinel's own `BucketLeapArrayTest` and `LeapArrayTest` scenarios,
//! rewritten with explicit timestamps instead of sleeps and the wall clock.
//!
//! Sentinel's `currentWindow(t)` (create or reuse the window of `t`) is
//! `add(t, counter, 0)` here; `value().addPass(n)` is `add(t, PASS, n)`.

use std::collections::HashSet;
use std::num::NonZeroU64;
use std::sync::{Arc, Barrier};

use leaparray::array::Window;
use leaparray::LeapArray;

const PASS: usize = 0;
const BLOCK: usize = 1;

/// A fixed "current time" in ms, not aligned to any window.
const NOW: u64 = 1_700_000_000_123;

fn ms(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

/// `BucketLeapArrayTest`: 2 windows of 1000 ms.
type Bucketed = LeapArray<2, 2>;

#[test]
fn new_window() {
    let a = Bucketed::new(ms(1_000));
    a.add(NOW, PASS, 0).unwrap();
    let w = a.window_at(NOW).unwrap();
    assert_eq!(a.window(), 1_000);
    assert_eq!(w.start, NOW - NOW % 1_000);
    assert_eq!(w.counts[PASS], 0);
}

#[test]
fn leap_array_window_start() {
    let a = Bucketed::new(ms(1_000));
    a.add(NOW, PASS, 0).unwrap();
    assert_eq!(a.window_start(NOW), NOW - NOW % 1_000);
    assert_eq!(a.window_at(NOW).unwrap().start, a.window_start(NOW));
}

#[test]
fn window_after_one_interval() {
    let a = Bucketed::new(ms(1_000));
    let start = NOW - NOW % 1_000;
    a.add(start, PASS, 1).unwrap();
    a.add(start, BLOCK, 1).unwrap();
    assert_eq!(a.window_at(start).unwrap().counts, [1, 1]);

    let middle = start + 500;
    a.add(middle, PASS, 1).unwrap();
    let w = a.window_at(middle).unwrap();
    assert_eq!(w.start, start, "same window as before");
    assert_eq!(w.counts, [2, 1]);

    let next = middle + 500;
    a.add(next, PASS, 0).unwrap();
    let w = a.window_at(next).unwrap();
    assert_eq!(w.start - start, 1_000);
    assert_eq!(w.counts, [0, 0], "a new window starts empty");
}

#[test]
fn window_deprecated_refresh() {
    // Sentinel's (deprecated) test: after one full interval, every bucket
    // holds a new window, not the old one.
    let a = Bucketed::new(ms(1_000));
    for i in 0..2 {
        a.add(NOW + 1_000 * i, PASS, 1).unwrap();
    }
    for i in 2..4 {
        let t = NOW + 1_000 * i;
        a.add(t, PASS, 0).unwrap();
        let w = a.window_at(t).unwrap();
        assert_eq!(w.start, a.window_start(t));
        assert_eq!(w.counts[PASS], 0, "old count must not survive");
        assert_eq!(a.window_at(t - 2_000), None, "old window retired");
    }
}

#[test]
fn multi_thread_update_empty_window() {
    const THREADS: usize = 16;
    let a = Arc::new(Bucketed::new(ms(1_000)));
    let start = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (a, start) = (a.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                a.add(NOW, PASS, 1)
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), Ok(()));
    }
    assert_eq!(a.window_at(NOW).unwrap().counts[PASS], THREADS as u64);
    assert_eq!(a.sum(NOW, PASS), THREADS as u64);
}

#[test]
fn get_previous_window() {
    let a = Bucketed::new(ms(1_000));
    a.add(NOW, PASS, 0).unwrap();
    assert_eq!(a.previous(NOW), None);
    let prev = a.previous(NOW + 1_000).unwrap();
    assert_eq!(prev.start, a.window_start(NOW));
    assert_eq!(a.previous(NOW + 11 * 1_000), None);
}

#[test]
fn list_windows_reset_old() {
    // 10 windows of 100 ms.
    let a = LeapArray::<10>::new(ms(100));
    let mut starts = HashSet::new();
    for t in [NOW, NOW + 100] {
        a.add(t, PASS, 0).unwrap();
        starts.insert(a.window_start(t));
    }
    for w in a.windows(NOW + 100) {
        assert!(starts.contains(&w.start));
    }
    assert_eq!(a.windows(NOW + 100).len(), 2);

    // One interval and one window later: replaces a deprecated bucket.
    let later = NOW + 100 + 1_000;
    a.add(later, PASS, 1).unwrap();
    let list = a.windows(later);
    assert_eq!(list.len(), 1);
    assert_eq!(
        list[0],
        Window {
            start: a.window_start(later),
            counts: [1]
        }
    );
}

#[test]
fn list_windows_new_bucket() {
    let a = LeapArray::<10>::new(ms(100));
    for t in [NOW, NOW + 100] {
        a.add(t, PASS, 0).unwrap();
    }
    // Three windows past the interval: the old buckets are deprecated but
    // not reset; the listing filters them out.
    let later = NOW + 1_000 + 300;
    assert!(a.windows(later).is_empty());
    a.add(later, PASS, 1).unwrap();
    assert_eq!(a.windows(later).len(), 1);
}

#[test]
fn get_valid_head() {
    // LeapArrayTest: 10 windows of 100 ms.
    let a = LeapArray::<10>::new(ms(100));
    let t0 = NOW - NOW % 100;
    a.add(t0, PASS, 1).unwrap();
    a.add(t0 + 100, PASS, 2).unwrap();
    for i in 0..8 {
        a.add(t0 + 100 * (i + 2), PASS, i + 3).unwrap();
    }
    let now = t0 + 900;
    assert_eq!(
        a.head(now),
        Some(Window {
            start: t0,
            counts: [1]
        })
    );
    assert_eq!(
        a.head(now + 100),
        Some(Window {
            start: t0 + 100,
            counts: [2]
        })
    );
    // The oldest window has slid out and its bucket now holds a new window.
    a.add(now + 100, PASS, 0).unwrap();
    assert_eq!(a.head(now + 100).unwrap().start, t0 + 100);
}
