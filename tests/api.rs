//! Every public item of the core, including bad and extreme input.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::num::NonZeroU64;

use leaparray::array::{SpanError, Window};
use leaparray::{AddError, LeapArray, MAX_COUNT};

fn w(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

static STATIC_ARRAY: LeapArray<4, 2> = LeapArray::new(NonZeroU64::new(250).unwrap());

#[test]
fn lives_in_a_static() {
    STATIC_ARRAY.add(1_000, 1, 5).unwrap();
    assert_eq!(STATIC_ARRAY.sum(1_100, 1), 5);
    assert_eq!(STATIC_ARRAY.interval(), 1_000);
}

#[test]
fn shape_accessors() {
    let a = LeapArray::<3>::new(w(40));
    assert_eq!(a.window(), 40);
    assert_eq!(a.interval(), 120);
    assert_eq!(a.window_start(0), 0);
    assert_eq!(a.window_start(39), 0);
    assert_eq!(a.window_start(40), 40);
    assert_eq!(a.window_start(u64::MAX), u64::MAX - u64::MAX % 40);
    assert_eq!(a.window_index(0), 0);
    assert_eq!(a.window_index(80), 2);
    assert_eq!(a.window_index(120), 0);
    assert_eq!(a.window_index(u64::MAX), ((u64::MAX / 40) % 3) as usize);
}

#[test]
fn interval_saturates() {
    let a = LeapArray::<3>::new(w(u64::MAX / 2));
    assert_eq!(a.interval(), u64::MAX);
    let one = LeapArray::<1>::new(w(u64::MAX));
    assert_eq!(one.interval(), u64::MAX);
    one.add(u64::MAX, 0, 1).unwrap();
    assert_eq!(one.sum(u64::MAX, 0), 1);
    assert_eq!(one.sum(u64::MAX - 1, 0), 0, "window 0 was never written");
}

#[test]
fn size_is_window_plus_buckets() {
    // 8 bytes of window length + N x (8-byte stamp + C x 8-byte counter).
    assert_eq!(std::mem::size_of::<LeapArray<2, 6>>(), 8 + 2 * (8 + 8 * 6));
    assert_eq!(std::mem::size_of::<LeapArray<60, 1>>(), 8 + 60 * 16);
}

#[test]
fn add_and_read_back() {
    let a = LeapArray::<2, 3>::new(w(500));
    a.add(10, 0, 1).unwrap();
    a.add(20, 2, 4).unwrap();
    a.add(600, 1, 7).unwrap();
    assert_eq!(a.sum(700, 0), 1);
    assert_eq!(a.sum(700, 1), 7);
    assert_eq!(a.sum(700, 2), 4);
    assert_eq!(a.sums(700), [1, 7, 4]);
    assert_eq!(
        a.window_at(0),
        Some(Window {
            start: 0,
            counts: [1, 0, 4]
        })
    );
    assert_eq!(
        a.window_at(999),
        Some(Window {
            start: 500,
            counts: [0, 7, 0]
        })
    );
}

#[test]
fn no_such_counter() {
    let a = LeapArray::<2, 2>::new(w(500));
    assert_eq!(a.add(0, 2, 1), Err(AddError::NoSuchCounter));
    assert_eq!(a.add(0, usize::MAX, 1), Err(AddError::NoSuchCounter));
    assert!(
        a.windows(0).is_empty(),
        "a refused add must not create a window"
    );
    assert_eq!(a.sum(0, 2), 0);
    assert_eq!(a.sum(0, usize::MAX), 0);
    assert_eq!(a.sum_span(0, 500, 2), Err(SpanError::NoSuchCounter));
}

#[test]
fn saturates_and_says_so() {
    let a = LeapArray::<2>::new(w(10));
    a.add(0, 0, MAX_COUNT - 1).unwrap();
    assert_eq!(a.add(0, 0, 5), Err(AddError::Saturated));
    assert_eq!(a.sum(0, 0), MAX_COUNT);
    assert_eq!(a.add(0, 0, 1), Err(AddError::Saturated));
    assert_eq!(
        a.add(0, 0, 0),
        Ok(()),
        "adding nothing is fine at the maximum"
    );
    assert_eq!(a.sum(0, 0), MAX_COUNT, "never wraps");
    // A single huge add to a new window.
    assert_eq!(a.add(10, 0, u64::MAX), Err(AddError::Saturated));
    assert_eq!(a.window_at(10).unwrap().counts, [MAX_COUNT]);
    // The sum of two saturated windows is exact (no u64 overflow either).
    assert_eq!(a.sum(10, 0), 2 * MAX_COUNT);
}

#[test]
fn clock_backwards_within_and_beyond_the_interval() {
    let a = LeapArray::<4>::new(w(100));
    a.add(1_000, 0, 1).unwrap(); // window 10, bucket 2
                                 // Backwards into a live window whose bucket is free: counted there.
    a.add(950, 0, 2).unwrap(); // window 9, bucket 1
    assert_eq!(a.sum(1_000, 0), 3);
    // Backwards into a window whose bucket holds a newer one: refused.
    a.add(600, 0, 4).unwrap_err(); // window 6, bucket 2 holds 10
    assert_eq!(a.add(600, 0, 4), Err(AddError::Stale));
    // Backwards by more than the interval, into a free bucket: counted in
    // that old window, which is not live at the newer time.
    a.add(300, 0, 8).unwrap(); // window 3, bucket 3
    assert_eq!(
        a.sum(1_000, 0),
        3,
        "an old window never joins a newer interval"
    );
    assert_eq!(a.window_at(300).unwrap().counts, [8]);
    // A lagging clock never moves a bucket backwards or wipes newer counts.
    assert_eq!(a.window_at(1_000).unwrap().counts, [1]);
}

#[test]
fn clock_far_forward() {
    let a = LeapArray::<2>::new(w(100));
    a.add(1_000, 0, 1).unwrap(); // window 10, bucket 0
    a.add(u64::MAX, 0, 1).unwrap(); // a bogus far-future time
    let far_bucket = a.window_index(u64::MAX);
    // Present-time queries never see the far-future window.
    assert_eq!(a.sum(1_050, 0), if far_bucket == 0 { 0 } else { 1 });
    assert_eq!(a.sum(u64::MAX, 0), 1);
    // Adds to the far-future window's bucket at present times are refused.
    let present_same_bucket = if far_bucket == 0 { 1_000 } else { 1_100 };
    assert_eq!(a.add(present_same_bucket, 0, 1), Err(AddError::Stale));
}

#[test]
fn time_zero_and_max() {
    let a = LeapArray::<3>::new(w(7));
    a.add(0, 0, 1).unwrap();
    assert_eq!(a.sum(0, 0), 1);
    assert_eq!(a.previous(0), None);
    assert_eq!(a.head(0), None, "no window before time 0");
    a.add(u64::MAX, 0, 2).unwrap();
    assert_eq!(a.sum(u64::MAX, 0), 2);
    assert_eq!(a.windows(u64::MAX).len(), 1);
}

#[test]
fn windows_are_oldest_first_across_the_ring() {
    let a = LeapArray::<3>::new(w(10));
    for (t, n) in [(40, 1), (50, 2), (60, 3)] {
        a.add(t, 0, n).unwrap(); // windows 4, 5, 6 in buckets 1, 2, 0
    }
    let ws = a.windows(65);
    let starts: Vec<u64> = ws.iter().map(|w| w.start).collect();
    assert_eq!(starts, [40, 50, 60]);
    let counts: Vec<u64> = ws.iter().map(|w| w.counts[0]).collect();
    assert_eq!(counts, [1, 2, 3]);
    assert_eq!(a.windows(75).len(), 2, "window 4 slid out");
}

#[test]
fn windows_where_filters_on_start() {
    let a = LeapArray::<4>::new(w(10));
    for t in [0, 10, 20, 30] {
        a.add(t, 0, t + 1).unwrap();
    }
    let odd: Vec<u64> = a
        .windows_where(35, |s| s % 20 == 10)
        .iter()
        .map(|w| w.start)
        .collect();
    assert_eq!(odd, [10, 30]);
    assert!(a.windows_where(35, |_| false).is_empty());
}

#[test]
fn window_at_previous_head() {
    let a = LeapArray::<3>::new(w(10));
    assert_eq!(a.window_at(5), None);
    a.add(5, 0, 1).unwrap();
    a.add(15, 0, 2).unwrap();
    assert_eq!(a.window_at(9).unwrap().counts, [1]);
    assert_eq!(a.previous(15).unwrap().counts, [1]);
    assert_eq!(a.previous(25).unwrap().counts, [2]);
    assert_eq!(a.previous(35), None, "window 2 was never written");
    assert_eq!(a.head(25).unwrap().start, 0);
    assert_eq!(a.head(35).unwrap().start, 10);
    assert_eq!(a.head(45), None);
    assert_eq!(
        a.head(15),
        None,
        "the oldest live window would start before 0"
    );
    a.add(30, 0, 3).unwrap(); // window 3 replaces window 0
    assert_eq!(a.window_at(5), None);
}

#[test]
fn sum_span_views() {
    let a = LeapArray::<6>::new(w(10));
    for t in 0..6 {
        a.add(t * 10, 0, 1 << t).unwrap();
    }
    assert_eq!(a.sum_span(59, 10, 0), Ok(32));
    assert_eq!(a.sum_span(59, 20, 0), Ok(48));
    assert_eq!(a.sum_span(59, 60, 0), Ok(63));
    assert_eq!(a.sum_span(59, 60, 0), Ok(a.sum(59, 0)));
    assert_eq!(a.sum_span(5, 30, 0), Ok(1), "no windows before time 0");
    assert_eq!(a.sum_span(59, 0, 0), Err(SpanError::Zero));
    assert_eq!(a.sum_span(59, 15, 0), Err(SpanError::NotMultiple));
    assert_eq!(a.sum_span(59, 70, 0), Err(SpanError::TooLong));
    assert_eq!(a.sum_span(59, u64::MAX, 0), Err(SpanError::NotMultiple));
}

#[test]
fn add_zero_creates_the_window() {
    let a = LeapArray::<2>::new(w(10));
    a.add(3, 0, 0).unwrap();
    assert_eq!(
        a.window_at(3),
        Some(Window {
            start: 0,
            counts: [0]
        })
    );
}

/// Generations wrap at 2^16: one bucket rolled over 70,000 times stays
/// exact, including a counter that is never written (its tag is kept
/// fresh by the seals).
#[test]
fn generation_wraps_cleanly() {
    let rolls: u64 = if cfg!(miri) { 300 } else { 70_000 };
    let a = LeapArray::<1, 2>::new(w(1));
    for t in 0..rolls {
        a.add(t, 0, t % 5 + 1).unwrap();
        assert_eq!(a.window_at(t).unwrap().counts, [t % 5 + 1, 0], "at {t}");
        if t > 0 {
            assert_eq!(a.window_at(t - 1), None);
        }
    }
}

/// The roll-over that would produce the all-zero "empty" stamp (generation
/// 0 and window id 0 mod 2^48) skips a generation instead.
#[test]
fn generation_skips_the_empty_stamp() {
    if cfg!(miri) {
        return; // 65,536 roll-overs: minutes under Miri.
    }
    let a = LeapArray::<1>::new(w(1));
    for t in 0..65_533 {
        a.add(t, 0, 1).unwrap(); // generations 1 ..= 65_533
    }
    // Forward jumps stay below 2^47 windows (larger ones read as backwards).
    let third = (1u64 << 48) / 3;
    a.add(third, 0, 1).unwrap(); // generation 65_534
    a.add(2 * third, 0, 1).unwrap(); // generation 65_535
    let t = 1u64 << 48; // generation would wrap to 0, window id low bits 0
    a.add(t, 0, 9).unwrap();
    assert_eq!(
        a.window_at(t),
        Some(Window {
            start: t,
            counts: [9]
        })
    );
    assert_eq!(a.sum(t, 0), 9);
    a.add(t + 1, 0, 1).unwrap();
    assert_eq!(a.sum(t + 1, 0), 1);
}

#[test]
fn debug_and_traits() {
    let a = LeapArray::<2, 3>::new(w(500));
    let d = format!("{a:?}");
    assert!(
        d.contains("buckets: 2") && d.contains("counters: 3") && d.contains("window: 500"),
        "{d}"
    );

    let win = Window {
        start: 5,
        counts: [1, 2],
    };
    let copy = win;
    assert_eq!(copy, win);
    let hash = |v: &Window<2>| {
        let mut h = DefaultHasher::new();
        v.hash(&mut h);
        h.finish()
    };
    assert_eq!(hash(&copy), hash(&win));
    assert_ne!(
        win,
        Window {
            start: 5,
            counts: [1, 3]
        }
    );
    assert!(format!("{win:?}").contains("start: 5"));

    for e in [
        AddError::Stale,
        AddError::NoSuchCounter,
        AddError::Saturated,
    ] {
        assert!(!e.to_string().is_empty());
    }
    for e in [
        SpanError::Zero,
        SpanError::NotMultiple,
        SpanError::TooLong,
        SpanError::NoSuchCounter,
    ] {
        assert!(!e.to_string().is_empty());
    }
}

/// Window ids are stored modulo 2^48 and compared by signed distance, so two
/// times more than 2^47 windows apart are out of range. Such a time never
/// panics; it is taken at its distance modulo 2^48 windows. Here the bogus
/// `u64::MAX` window is 2^64 - 1 ≡ -1 (mod 2^48): it reads as older than
/// window 1000, so the add is refused as `Stale` and window 1000 is intact.
#[test]
fn times_beyond_the_id_range_are_taken_modulo_2_pow_48() {
    let a = LeapArray::<1>::new(w(1));
    a.add(1_000, 0, 1).unwrap();
    assert_eq!(a.add(u64::MAX, 0, 1), Err(AddError::Stale));
    assert_eq!(a.window_at(1_000).unwrap().counts, [1]);
    // 2^48 + 5 windows later reads as 5 windows later: it replaces window 1000.
    a.add(1_005 + (1 << 48), 0, 2).unwrap();
    assert_eq!(a.window_at(1_000), None);
    assert_eq!(a.sum(1_005 + (1 << 48), 0), 2);
}

/// 32-bit words: generations wrap at 2^8 and window ids at 2^24; one bucket
/// rolled over 1,000 times stays exact, including a never-written counter,
/// and the roll-over that would produce the empty stamp skips it.
#[test]
fn narrow_generation_wraps_and_skips_the_empty_stamp() {
    use leaparray::array::{Narrow, Width};
    let a = LeapArray::<1, 2, Narrow>::new_narrow(w(1));
    for t in 0..1_000 {
        a.add(t, 0, t % 5 + 1).unwrap();
        assert_eq!(a.window_at(t).unwrap().counts, [t % 5 + 1, 0], "at {t}");
    }
    // Generation 255 -> 0 with window id 0 mod 2^24 would read as empty.
    let b = LeapArray::<1, 1, Narrow>::new_narrow(w(1));
    for t in 0..253 {
        b.add(t, 0, 1).unwrap(); // generations 1 ..= 253
    }
    let third = (1u64 << 24) / 3;
    b.add(third, 0, 1).unwrap(); // 254
    b.add(2 * third, 0, 1).unwrap(); // 255
    let t = 1u64 << 24; // would be generation 0, window id 0 mod 2^24
    b.add(t, 0, 9).unwrap();
    assert_eq!(
        b.window_at(t),
        Some(Window {
            start: t,
            counts: [9]
        })
    );
    // Saturation at the narrow maximum.
    assert_eq!(b.add(t, 0, Narrow::MAX_COUNT), Err(AddError::Saturated));
    assert_eq!(b.sum(t, 0), Narrow::MAX_COUNT);
    assert_eq!(
        std::mem::size_of::<LeapArray<2, 6, Narrow>>(),
        8 + 2 * (4 + 4 * 6)
    );
}

/// A bucket whose index goes unused for half the window-id range aliases
/// (`Narrow`: ids modulo 2^24). Touching the array every 2^22 windows at
/// one index keeps only that bucket in range; `refresh` keeps them all.
#[test]
fn narrow_refresh_keeps_idle_buckets_in_range() {
    type A = LeapArray<2, 1, leaparray::array::Narrow>;
    let new = || A::new_narrow(NonZeroU64::new(1).unwrap());
    let keep = |a: &A, t: u64| a.refresh(t);
    // Window 1 (bucket 1) gets 5; afterwards only even times are used,
    // with the array kept fresh every 2^22 windows.
    let a = new();
    a.add(1, 0, 5).unwrap();
    for j in 1..=4u64 {
        keep(&a, j << 22);
    }
    // 2^24 + 1 has window 1's id modulo 2^24: nothing was added in it.
    let q = (1 << 24) + 1;
    assert_eq!(
        a.window_at(q),
        None,
        "window 1's count read as window {q}'s"
    );
    a.add(q, 0, 1).unwrap();
    assert_eq!(
        a.window_at(q).map(|w| w.counts),
        Some([1]),
        "leaked into {q}"
    );
    // Three refreshes in: an add at the newest time is not refused.
    let b = new();
    b.add(1, 0, 5).unwrap();
    for j in 1..=3u64 {
        keep(&b, j << 22);
    }
    let q = (3 << 22) + 3;
    assert_eq!(b.add(q, 0, 1), Ok(()), "add at the newest time refused");
    assert_eq!(b.sum(q, 0), 1);
}

/// `refresh` leaves live and newer windows alone and moves nothing on an
/// untouched array.
#[test]
fn refresh_moves_only_buckets_older_than_the_interval() {
    let a = LeapArray::<3>::new(NonZeroU64::new(10).unwrap());
    a.refresh(1_000);
    assert!(a.windows(1_000).is_empty(), "empty buckets stay empty");
    a.add(5, 0, 1).unwrap(); // window 0
    a.add(15, 0, 2).unwrap(); // window 1
    a.add(25, 0, 3).unwrap(); // window 2
    a.refresh(29); // all live
    assert_eq!(a.sum(29, 0), 6);
    a.refresh(35); // window 0 slid out: bucket 0 moves to window 3, empty
    assert_eq!(a.sum(35, 0), 5);
    assert_eq!(a.window_at(35).map(|w| w.counts), Some([0]));
    a.add(45, 0, 7).unwrap(); // window 4 replaces window 1
    a.refresh(35); // an older time: nothing moves back
    assert_eq!(a.window_at(45).map(|w| w.counts), Some([7]));
    assert_eq!(a.window_at(25).map(|w| w.counts), Some([3]));
}
