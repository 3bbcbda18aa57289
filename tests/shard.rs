//! Sharded arrays: claims, single-writer adds against the shared
//! compare-and-swap path, merged reads, and real threads one per shard.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, Ordering};

use leaparray::shard::{ClaimError, Sharded};
use leaparray::{AddError, LeapArray, MAX_COUNT};
use proptest::prelude::*;

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

#[test]
fn claims_are_exclusive_and_returned() {
    let s = Sharded::<2, 1, 3>::new(nz(10));
    let a = s.claim(0).unwrap();
    assert_eq!(s.claim(0).err(), Some(ClaimError::Claimed));
    assert_eq!(s.claim(3).err(), Some(ClaimError::NoSuchShard));
    assert_eq!(s.claim(usize::MAX).err(), Some(ClaimError::NoSuchShard));
    a.add(1, 0, 2).unwrap();
    drop(a);
    let again = s.claim(0).unwrap();
    again.add(2, 0, 3).unwrap();
    assert_eq!(s.sum(2, 0), 5, "counts survive a change of writer");
    // Shared adds skip claimed shards; once they are done, a shard they
    // used can be claimed again.
    s.add(0, 3, 0, 1).unwrap(); // shard 0 claimed: goes to shard 1
    let b = s.claim(1).unwrap();
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
    let w = s.claim(0).unwrap();
    w.add(1, 0, 1).unwrap();
    w.release();
    for t in 0..40 {
        s.add(0, t, 0, 1).unwrap(); // hint 0: shard 0, free again
    }
    let w = s
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
    let w = t.claim(0).unwrap();
    w.add(5, 0, 3).unwrap();
    assert_eq!(t.sum(5, 0), 5);
}

#[test]
fn shared_add_needs_an_unclaimed_shard() {
    let s = Sharded::<2, 1, 2>::new(nz(10));
    let _a = s.claim(0).unwrap();
    let _b = s.claim(1).unwrap();
    assert_eq!(s.add(0, 1, 0, 1), Err(AddError::NoFreeShard));
    assert_eq!(s.add(0, 1, 9, 1), Err(AddError::NoFreeShard));
}

#[test]
fn single_writer_bad_input() {
    let s = Sharded::<2, 2, 1>::new(nz(10));
    let w = s.claim(0).unwrap();
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

#[derive(Debug, Clone)]
enum Op {
    Shift(i64),
    Add { counter: usize, n: u64 },
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { 256 },
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
        let w = s.claim(0).unwrap();
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
                let w = s.claim(i).unwrap();
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
