//! Loom models of the core bucket protocol (`src/array/bucket.rs`).
//!
//! Every model checks exact accounting, not just "no crash": each window's
//! final count (read live, or from the roller's retirement record once the
//! window is retired) must equal the sum of the adds to it that returned
//! `Ok`, and readers may only ever report counts that belong to the window
//! they report them for.
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release`
#![cfg(leaparray_loom)]

use leaparray::array::Window;
use leaparray::{AddError, LeapArray, MAX_COUNT};
use leaparray_loom_tests::{final_counts, ok, spawn, Seen, W};
use loom::sync::Arc;

/// Two threads make the first adds to an empty array, in the same window:
/// both create it (one rolls the empty bucket, or both try), both count.
#[test]
fn two_adders_create_a_window() {
    loom::model(|| {
        let a = Arc::new(LeapArray::<2>::new(W));
        let (b, c) = (a.clone(), a.clone());
        let t1 = spawn(move || b.add(3, 0, 1));
        let t2 = spawn(move || c.add(5, 0, 2));
        assert_eq!((t1.join().unwrap(), t2.join().unwrap()), (Ok(()), Ok(())));
        assert_eq!(
            a.window_at(0),
            Some(Window {
                start: 0,
                counts: [3]
            })
        );
        assert!(a.retired(0).is_empty());
    });
}

/// A late add to window 0 races the roll-over of its bucket to window 2.
/// The late add either counts in window 0 (and is in its final count) or
/// returns `Stale`; it never reaches window 2.
#[test]
fn late_add_racing_roll_over_does_not_leak() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let a = Arc::new(LeapArray::<2>::new(W));
        a.add(0, 0, 10).unwrap();
        let (b, c) = (a.clone(), a.clone());
        let late = spawn(move || b.add(1, 0, 1));
        let roll = spawn(move || c.add(20, 0, 100));
        let late = late.join().unwrap();
        assert_eq!(roll.join().unwrap(), Ok(()));
        assert_eq!(
            a.window_at(20),
            Some(Window {
                start: 20,
                counts: [100]
            })
        );
        assert_eq!(final_counts(&a, 0), [10 + ok(late, 1)]);
        record(late.is_ok());
    });
    seen.assert_all(&[true, false]);
}

/// A reader that sees a late add's count proves the add must report `Ok`:
/// `Stale` means nothing any reader could see changed.
#[test]
fn stale_add_is_never_visible() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let a = Arc::new(LeapArray::<2>::new(W));
        a.add(0, 0, 10).unwrap();
        let (b, c, d) = (a.clone(), a.clone(), a.clone());
        let late = spawn(move || b.add(1, 0, 1));
        let roll = spawn(move || c.add(20, 0, 100));
        let reader = spawn(move || d.window_at(0).map(|w| w.counts[0]));
        let late = late.join().unwrap();
        assert_eq!(roll.join().unwrap(), Ok(()));
        let seen = reader.join().unwrap();
        match seen {
            None | Some(10) => {}
            Some(11) => assert_eq!(late, Ok(()), "a reader saw the add, so it counted"),
            Some(other) => panic!("window 0 only ever holds 10 or 11, read {other}"),
        }
        assert_eq!(final_counts(&a, 0), [10 + ok(late, 1)]);
        record(seen);
    });
    seen.assert_all(&[None, Some(10), Some(11)]);
}

/// Two threads roll the same bucket forward (to windows 2 and 4) while a
/// laggard adds to window 0. The bucket ends at window 4 holding exactly
/// its own add; windows 0 and 2 hold exactly their `Ok` adds.
#[test]
fn two_rollers_and_a_laggard() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let a = Arc::new(LeapArray::<2>::new(W));
        a.add(0, 0, 1).unwrap();
        let (b, c, d) = (a.clone(), a.clone(), a.clone());
        let to2 = spawn(move || b.add(20, 0, 10));
        let to4 = spawn(move || c.add(40, 0, 100));
        let lag = spawn(move || d.add(5, 0, 1_000));
        let (to2, lag) = (to2.join().unwrap(), lag.join().unwrap());
        assert_eq!(
            to4.join().unwrap(),
            Ok(()),
            "the newest window always counts"
        );
        assert_eq!(
            a.window_at(40),
            Some(Window {
                start: 40,
                counts: [100]
            })
        );
        assert_eq!(final_counts(&a, 0), [1 + ok(lag, 1_000)]);
        assert_eq!(final_counts(&a, 20), [ok(to2, 10)]);
        // Only older windows were retired, each once (the log is appended
        // after each roller's stamp CAS, so its order is not the CAS order).
        let mut starts: Vec<u64> = a.retired(0).iter().map(|r| r.0).collect();
        starts.sort_unstable();
        starts.dedup();
        assert_eq!(starts.len(), a.retired(0).len(), "a window retired twice");
        assert!(
            starts.iter().all(|&s| s < 40),
            "moved backwards: {starts:?}"
        );
        record((to2.is_ok(), lag.is_ok()));
    });
    seen.assert_all(&[(true, true), (false, false), (true, false), (false, true)]);
}

/// A reader races a roll-over and the first adds of the new window (two
/// counters). Whatever it reports for a window belongs to that window: it
/// never reports window 0's counts as window 20's, or a window 0 that has
/// lost counts to the roll-over.
#[test]
fn reader_racing_roll_over_never_mixes() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let a = Arc::new(LeapArray::<2, 2>::new(W));
        a.add(0, 0, 1).unwrap();
        a.add(0, 1, 2).unwrap();
        let (b, c) = (a.clone(), a.clone());
        let writer = spawn(move || {
            b.add(20, 0, 10).unwrap();
            b.add(20, 1, 20).unwrap();
        });
        let reader = spawn(move || {
            let old: Vec<Window<2>> = c.windows(5).into_iter().collect();
            (old, c.window_at(20))
        });
        writer.join().unwrap();
        let (old, new) = reader.join().unwrap();
        for w in &old {
            assert_eq!(
                *w,
                Window {
                    start: 0,
                    counts: [1, 2]
                },
                "mixed read"
            );
        }
        if let Some(w) = new {
            // Each count is a value its own counter held in window 20 (the
            // counters are read one by one, not as one atomic snapshot), and
            // never a count of window 0.
            assert!(
                [0, 10].contains(&w.counts[0]) && [0, 20].contains(&w.counts[1]),
                "mixed read: {w:?}"
            );
        }
        assert_eq!(a.sums(25), [10, 20]);
        assert_eq!(final_counts(&a, 0), [1, 2]);
        record((old.len(), new.map(|w| w.counts)));
    });
    seen.assert_all(&[
        (1, None),
        (0, Some([0, 0])),
        (1, Some([10, 0])),
        (0, Some([10, 20])),
    ]);
}

/// Two adders of the new window race each other's roll-over (one seals and
/// moves the stamp, the other seals too or adds to the new generation)
/// while a late add to the old window races both.
#[test]
fn adds_of_new_window_racing_its_roll_over() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let a = Arc::new(LeapArray::<2>::new(W));
        a.add(0, 0, 5).unwrap();
        let (b, c, d) = (a.clone(), a.clone(), a.clone());
        let t1 = spawn(move || b.add(20, 0, 1));
        let t2 = spawn(move || c.add(25, 0, 2));
        let late = spawn(move || d.add(3, 0, 7));
        assert_eq!(t1.join().unwrap(), Ok(()));
        assert_eq!(t2.join().unwrap(), Ok(()));
        let late = late.join().unwrap();
        assert_eq!(
            a.window_at(20),
            Some(Window {
                start: 20,
                counts: [3]
            })
        );
        assert_eq!(final_counts(&a, 0), [5 + ok(late, 7)]);
        record(late.is_ok());
    });
    seen.assert_all(&[true, false]);
}

/// Two adders race at the top of the count range: the count saturates at
/// `MAX_COUNT` exactly once and never wraps.
#[test]
fn saturation_race() {
    loom::model(|| {
        let a = Arc::new(LeapArray::<1>::new(W));
        a.add(0, 0, MAX_COUNT - 1).unwrap();
        let (b, c) = (a.clone(), a.clone());
        let t1 = spawn(move || b.add(1, 0, 1));
        let t2 = spawn(move || c.add(2, 0, 1));
        let mut rs = [t1.join().unwrap(), t2.join().unwrap()];
        rs.sort_by_key(|r| r.is_err());
        assert_eq!(rs, [Ok(()), Err(AddError::Saturated)]);
        assert_eq!(a.sum(2, 0), MAX_COUNT);
    });
}
