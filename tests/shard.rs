//! Sharded arrays: claims, single-writer adds against the shared
//! compare-and-swap path, merged reads, and real threads one per shard.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, Ordering};

use leaparray::shard::{ClaimError, Sharded, SharedAddError};
use leaparray::{AddError, LeapArray, MAX_COUNT};
use proptest::prelude::*;

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

#[test]
fn claims_are_exclusive_and_returned() {
    let s = Sharded::<2, 1, 3>::new(nz(10));
    let mut a = s.claim(0).unwrap();
    assert_eq!(s.claim(0).err(), Some(ClaimError::Claimed));
    assert_eq!(s.claim(3).err(), Some(ClaimError::NoSuchShard));
    assert_eq!(s.claim(usize::MAX).err(), Some(ClaimError::NoSuchShard));
    a.add(1, 0, 2).unwrap();
    drop(a);
    let mut again = s.claim(0).unwrap();
    again.add(2, 0, 3).unwrap();
    assert_eq!(s.sum(2, 0), 5, "counts survive a change of writer");
    // Shared adds skip claimed shards; once they are done, a shard they
    // used can be claimed again.
    s.add(0, 3, 0, 1).unwrap(); // shard 0 claimed: goes to shard 1
    let mut b = s.claim(1).unwrap();
    b.add(3, 0, 1).unwrap();
    let _c = s.claim(2).unwrap();
    drop(again);
    assert_eq!(s.sum(3, 0), 7);
    assert!(format!("{s:?}").contains("shards: 3"));
}

/// A queue's writer that restarts can always claim its shard again, even
/// after shared adds used it while it was free: claim, release, shared
/// adds, claim again.
#[test]
fn a_released_shard_used_by_shared_adds_can_be_claimed_again() {
    let s = Sharded::<2, 1, 2>::new(nz(10));
    let mut w = s.claim(0).unwrap();
    w.add(1, 0, 1).unwrap();
    w.release();
    for t in 0..40 {
        s.add(0, t, 0, 1).unwrap(); // hint 0: shard 0, free again
    }
    let mut w = s
        .claim(0)
        .expect("the restarted writer gets its shard back");
    w.add(39, 0, 1).unwrap();
    // Shard 1 was never written: claimable all along.
    let _v = s.claim(1).unwrap();
    assert_eq!(s.sum(39, 0), 20 + 1, "windows 30 and 20 of 10 ticks");
    drop(w);
    // Never claimed, used only by shared adds: claimable as well.
    let t = Sharded::<2, 1, 1>::new(nz(10));
    t.add(0, 5, 0, 2).unwrap();
    let mut w = t.claim(0).unwrap();
    w.add(5, 0, 3).unwrap();
    assert_eq!(t.sum(5, 0), 5);
}

#[test]
fn shared_add_needs_an_unclaimed_shard() {
    let s = Sharded::<2, 1, 2>::new(nz(10));
    let _a = s.claim(0).unwrap();
    let _b = s.claim(1).unwrap();
    assert_eq!(s.add(0, 1, 0, 1), Err(SharedAddError::NoFreeShard));
    assert_eq!(s.add(0, 1, 9, 1), Err(SharedAddError::NoFreeShard));
}

#[test]
fn single_writer_bad_input() {
    let s = Sharded::<2, 2, 1>::new(nz(10));
    let mut w = s.claim(0).unwrap();
    assert_eq!(w.add(0, 2, 1), Err(AddError::NoSuchCounter));
    w.add(100, 0, MAX_COUNT - 1).unwrap();
    assert_eq!(w.add(100, 0, 5), Err(AddError::Saturated));
    assert_eq!(s.sum(100, 0), MAX_COUNT);
    assert_eq!(
        w.add(80, 0, 1),
        Err(AddError::Stale),
        "bucket holds window 10"
    );
    w.add(u64::MAX, 1, 1).unwrap();
    assert_eq!(s.sum(u64::MAX, 1), 1);
}

/// The writer keeps each counter's running count of its window, read from
/// the cells when it enters the window: counts that shared adds and an
/// earlier writer left there, and its own from an earlier visit, must all
/// stay.
#[test]
fn a_writer_takes_its_running_counts_from_the_cells() {
    let s = Sharded::<4, 2, 1>::new(nz(10));
    s.add(0, 15, 0, 2).unwrap(); // window 1, shared
    let mut w = s.claim(0).unwrap();
    w.add(16, 0, 3).unwrap();
    assert_eq!(s.sums(19), [5, 0]);
    w.add(25, 1, 7).unwrap(); // window 2
    w.add(19, 0, 1).unwrap(); // back in window 1: still held
    assert_eq!(s.windows(25)[0].counts, [6, 0]);
    w.add(26, 1, 1).unwrap(); // window 2 again
    assert_eq!(s.windows(26)[1].counts, [0, 8]);
    drop(w);
    s.add(0, 27, 1, 10).unwrap(); // shared, window 2
    let mut w = s.claim(0).unwrap();
    w.add(28, 1, 1).unwrap();
    w.add(28, 0, 4).unwrap();
    assert_eq!(s.windows(28)[1].counts, [4, 19]);
    assert_eq!(s.sums(28), [10, 19]);
}

/// A window is exactly its ticks: the writer enters the next window on its
/// first tick and not before, also for the last window of the `u64` range,
/// which a window length that does not divide 2^64 cuts short.
#[test]
fn a_writer_window_is_exactly_its_ticks() {
    for window in [1u64, 3, 10, 1 << 40, u64::MAX / 2, u64::MAX - 1, u64::MAX] {
        let last = u64::MAX / window * window;
        for start in [0, window, last.saturating_sub(window), last] {
            let s = Sharded::<2, 1, 1>::new(nz(window));
            let a = LeapArray::<2, 1>::new(nz(window));
            let mut w = s.claim(0).unwrap();
            let times = [
                start,
                start.saturating_add(window - 1),
                start.saturating_add(window),
                start,
                u64::MAX,
                0,
                start.wrapping_sub(1),
                start.saturating_add(window - 1),
            ];
            for (k, now) in times.into_iter().enumerate() {
                assert_eq!(
                    w.add(now, 0, 1 << k),
                    a.add(now, 0, 1 << k),
                    "window {window}, start {start}, add {k} at {now}"
                );
                assert_eq!(
                    s.windows(now).as_slice(),
                    a.windows(now).as_slice(),
                    "window {window}, start {start}, after add {k} at {now}"
                );
            }
        }
    }
}

/// Saturation: the writer's count stops at `MAX_COUNT`, says so, and the
/// cell holds `MAX_COUNT`; the other counter and the next window are
/// untouched.
#[test]
fn a_writer_saturates_at_max_count() {
    let s = Sharded::<2, 2, 1>::new(nz(10));
    let mut w = s.claim(0).unwrap();
    w.add(1, 0, MAX_COUNT - 2).unwrap();
    w.add(2, 0, 2).unwrap();
    assert_eq!(w.add(3, 0, 1), Err(AddError::Saturated));
    assert_eq!(w.add(3, 0, u64::MAX), Err(AddError::Saturated));
    w.add(3, 0, 0).unwrap();
    w.add(4, 1, 1).unwrap();
    assert_eq!(s.sums(9), [MAX_COUNT, 1]);
    w.add(10, 0, 1).unwrap();
    assert_eq!(s.windows(10)[1].counts, [1, 0]);
}

#[derive(Debug, Clone)]
enum Op {
    Shift(i64),
    Add { counter: usize, n: u64 },
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 1 } else { 256 },
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]

    /// A claimed shard written with plain stores behaves exactly like a
    /// `LeapArray` written through its compare-and-swap path.
    #[test]
    fn single_writer_matches_the_cas_path(
        window in 1u64..50,
        ops in prop::collection::vec(prop_oneof![
            3 => (-200i64..300).prop_map(Op::Shift),
            5 => (0usize..3, prop_oneof![0u64..4, Just(MAX_COUNT), Just(u64::MAX)])
                .prop_map(|(counter, n)| Op::Add { counter, n }),
        ], 1..150),
    ) {
        let s = Sharded::<3, 2, 1>::new(nz(window));
        let mut w = s.claim(0).unwrap();
        let a = LeapArray::<3, 2>::new(nz(window));
        let mut now = 5_000u64;
        for op in ops {
            match op {
                Op::Shift(d) => now = now.saturating_add_signed(d),
                Op::Add { counter, n } => {
                    prop_assert_eq!(w.add(now, counter, n), a.add(now, counter, n));
                }
            }
            let (got, want) = (s.windows(now), a.windows(now));
            prop_assert_eq!(got.as_slice(), want.as_slice());
            prop_assert_eq!(s.sums(now), a.sums(now));
        }
    }

    /// Writers come and go on one shard between shared adds: each new
    /// writer, and each return to a window, picks up the counts that are in
    /// the cells. Every result and every window must match one `LeapArray`
    /// written through its compare-and-swap path.
    #[test]
    fn claims_releases_and_shared_adds_match_the_cas_path(
        window in 1u64..30,
        ops in prop::collection::vec(prop_oneof![
            3 => (-100i64..150).prop_map(Step::Shift),
            4 => (0usize..2, 0u64..5).prop_map(|(counter, n)| Step::Write { counter, n }),
            2 => (0usize..2, 0u64..5).prop_map(|(counter, n)| Step::Shared { counter, n }),
            1 => Just(Step::Toggle),
        ], 1..150),
    ) {
        let s = Sharded::<3, 2, 1>::new(nz(window));
        let a = LeapArray::<3, 2>::new(nz(window));
        let mut writer = None;
        let mut now = 5_000u64;
        for op in ops {
            match op {
                Step::Shift(d) => now = now.saturating_add_signed(d),
                Step::Toggle => {
                    writer = match writer.take() {
                        Some(_) => None,
                        None => Some(s.claim(0).unwrap()),
                    }
                }
                Step::Write { counter, n } => {
                    if let Some(w) = &mut writer {
                        prop_assert_eq!(w.add(now, counter, n), a.add(now, counter, n));
                    }
                }
                Step::Shared { counter, n } => {
                    let want = if writer.is_some() {
                        Err(SharedAddError::NoFreeShard)
                    } else {
                        a.add(now, counter, n).map_err(SharedAddError::Add)
                    };
                    prop_assert_eq!(s.add(0, now, counter, n), want);
                }
            }
            let (got, want) = (s.windows(now), a.windows(now));
            prop_assert_eq!(got.as_slice(), want.as_slice());
        }
    }
}

#[derive(Debug, Clone)]
enum Step {
    Shift(i64),
    Write { counter: usize, n: u64 },
    Shared { counter: usize, n: u64 },
    Toggle,
}

/// Bytes added in window `id` are always a multiple of this, so a count
/// read for window `id` that is not is a count of another window.
fn unit(id: u64) -> u64 {
    1_000 + id % 997
}

/// One thread per shard adds packets and bytes over 8 windows while a reader
/// merges the shards; at the end (all 8 windows still live) the totals are
/// exactly what was sent, and the reader never saw a window mix.
#[test]
fn one_writer_per_shard_is_exact() {
    const THREADS: usize = 4;
    const BASE: u64 = 1_000 << 30; // a window boundary
    let per = if cfg!(miri) { 50 } else { 100_000 };
    let s = Sharded::<8, 2, THREADS>::new(nz(1_000));
    let done = AtomicBool::new(false);
    let bytes: u64 = std::thread::scope(|scope| {
        let (s, done) = (&s, &done);
        let reader = scope.spawn(move || {
            let mut reads = 0u64;
            while !done.load(Ordering::Relaxed) {
                for w in s.windows(BASE + 7_999) {
                    let id = w.start / 1_000;
                    assert_eq!(w.counts[1] % unit(id), 0, "mixed window {w:?}");
                }
                reads += 1;
            }
            reads
        });
        // Stops the reader even if a writer panics (the scope would
        // otherwise wait for it forever).
        let _stop_reader = StopOnDrop(done);
        let writers: Vec<_> = (0..THREADS)
            .map(|i| {
                let mut w = s.claim(i).unwrap();
                scope.spawn(move || {
                    let mut bytes = 0;
                    for p in 0..per {
                        let now = BASE + p * 8_000 / per;
                        w.add(now, 0, 1).unwrap();
                        w.add(now, 1, unit(now / 1_000)).unwrap();
                        bytes += unit(now / 1_000);
                    }
                    bytes
                })
            })
            .collect();
        let bytes = writers.into_iter().map(|h| h.join().unwrap()).sum();
        done.store(true, Ordering::Relaxed);
        reader.join().unwrap();
        bytes
    });
    assert_eq!(s.sums(BASE + 7_999), [THREADS as u64 * per, bytes]);
}

#[test]
fn shared_adds_from_threads_are_exact() {
    let s = Sharded::<4, 1, 2>::new(nz(100));
    let per = if cfg!(miri) { 100 } else { 20_000 };
    std::thread::scope(|scope| {
        for t in 0..4 {
            let s = &s;
            scope.spawn(move || {
                for _ in 0..per {
                    s.add(t, 50, 0, 1).unwrap();
                }
            });
        }
    });
    assert_eq!(s.sum(50, 0), 4 * per);
}

/// Sets the flag when dropped (on success or while unwinding).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Each shard sits on cache lines of its own (`CachePadded`: 128 bytes on
/// x86-64), so writers of neighbouring shards never false-share.
#[cfg(target_arch = "x86_64")]
#[test]
fn shards_do_not_share_cache_lines() {
    assert!(core::mem::size_of::<Sharded<1, 1, 2>>() >= 2 * 128);
    assert!(core::mem::align_of::<Sharded<1, 1, 2>>() >= 128);
}
