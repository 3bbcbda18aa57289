//! Loom models of the bucket protocol on 32-bit words (`Narrow`): the same
//! races as `core.rs`, with 8-bit generations and 24-bit window ids.
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release`
#![cfg(leaparray_loom)]

use leaparray::array::{Narrow, Width, Window};
use leaparray::{AddError, LeapArray};
use leaparray_loom_tests::{final_counts, ok, spawn, Seen, W};
use loom::sync::Arc;

/// A late add racing the roll-over of its bucket counts in its old window
/// or is refused; it never reaches the new one.
#[test]
fn narrow_late_add_racing_roll_over() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let a = Arc::new(LeapArray::<2, 1, Narrow>::new_narrow(W));
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
        assert_eq!(final_counts(&*a, 0), [10 + ok(late, 1)]);
        record(late.is_ok());
    });
    seen.assert_all(&[true, false]);
}

/// A reader racing a roll-over and the new window's first adds never mixes
/// windows.
#[test]
fn narrow_reader_racing_roll_over() {
    loom::model(|| {
        let a = Arc::new(LeapArray::<2, 2, Narrow>::new_narrow(W));
        a.add(0, 0, 1).unwrap();
        a.add(0, 1, 2).unwrap();
        let (b, c) = (a.clone(), a.clone());
        let writer = spawn(move || {
            b.add(20, 0, 10).unwrap();
            b.add(20, 1, 20).unwrap();
        });
        let reader = spawn(move || (c.window_at(5), c.window_at(20)));
        writer.join().unwrap();
        let (old, new) = reader.join().unwrap();
        if let Some(w) = old {
            assert_eq!(w.counts, [1, 2], "window 0 mixed");
        }
        if let Some(w) = new {
            assert!(
                [0, 10].contains(&w.counts[0]) && [0, 20].contains(&w.counts[1]),
                "{w:?}"
            );
        }
        assert_eq!(a.sums(25), [10, 20]);
    });
}

/// Two adds race at the top of the 23-bit count range.
#[test]
fn narrow_saturation_race() {
    loom::model(|| {
        let a = Arc::new(LeapArray::<1, 1, Narrow>::new_narrow(W));
        a.add(0, 0, Narrow::MAX_COUNT - 1).unwrap();
        let (b, c) = (a.clone(), a.clone());
        let t1 = spawn(move || b.add(1, 0, 1));
        let t2 = spawn(move || c.add(2, 0, 1));
        let mut rs = [t1.join().unwrap(), t2.join().unwrap()];
        rs.sort_by_key(|r| r.is_err());
        assert_eq!(rs, [Ok(()), Err(AddError::Saturated)]);
        assert_eq!(a.sum(2, 0), Narrow::MAX_COUNT);
    });
}
