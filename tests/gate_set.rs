//! `GateSet`: several limits at once, all or nothing. Scenarios, a property
//! test against two brute-force gate models (`tests/common/gate_model.rs`),
//! and threads mixing set requests with requests to one member alone.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;

use leaparray::gate::{Member, PriorityDecision};
use leaparray::{Decision, Gate, GateSet};
use proptest::prelude::*;

#[allow(dead_code)]
#[path = "common/gate_model.rs"]
mod gate_model;
use gate_model::GateModel;

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

#[test]
fn a_refusal_in_any_member_books_nothing_anywhere() {
    let per_second = Gate::<10>::new(nz(100), 10);
    let per_minute = Gate::<6>::new(nz(10_000), 15).in_buckets();
    let set = GateSet::new([&per_second as &dyn Member, &per_minute]);
    assert_eq!(set.try_acquire(0, 10), Decision::Pass);
    assert_eq!(
        set.try_acquire(500, 1),
        Decision::Block,
        "the second is full"
    );
    assert_eq!(per_minute.count(500), 10, "the minute kept nothing of it");
    assert_eq!(
        set.try_acquire(1_000, 6),
        Decision::Block,
        "the minute is full"
    );
    assert_eq!(per_second.count(1_000), 0, "the second kept nothing of it");
    assert_eq!(set.try_acquire(1_000, 5), Decision::Pass);
    assert_eq!((per_second.count(1_000), per_minute.count(1_000)), (5, 15));
    assert_eq!(set.retry_after(1_000, 1), Some(59_000));
    assert_eq!(
        set.retry_after(1_000, 11),
        None,
        "more than the second's limit"
    );
}

#[test]
fn each_member_takes_its_own_size() {
    let requests = Gate::<2>::new(nz(500), 3);
    let bytes = Gate::<2>::new(nz(500), 1_000);
    let set = GateSet::new([&requests as &dyn Member, &bytes]);
    assert_eq!(set.try_acquire_each(0, [1, 600]), Decision::Pass);
    assert_eq!(set.try_acquire_each(0, [1, 600]), Decision::Block);
    assert_eq!(set.try_acquire_each(0, [1, 400]), Decision::Pass);
    assert_eq!((requests.count(0), bytes.count(0)), (2, 1_000));
    assert_eq!(set.retry_after_each(0, [1, 1]), Some(1_000));
    let empty = GateSet::<0>::new([]);
    assert_eq!(empty.try_acquire(0, u64::MAX), Decision::Pass);
    assert!(format!("{set:?}").contains("limit 1000"));
}

/// A member without room refuses before anything is booked: the set
/// checks every member first. (Taking bookings back runs only when
/// another request takes a member's room between that check and the
/// booking: the threads below and the loom model exercise it.)
#[test]
fn a_member_without_room_refuses_before_any_booking() {
    let full = Gate::<2>::new(nz(500), 5);
    assert_eq!(full.try_acquire(0, 5), Decision::Pass);
    for first in [
        Gate::<2>::new(nz(500), 5),
        Gate::<2>::new(nz(500), 5).in_buckets(),
    ] {
        let set = GateSet::new([&first as &dyn Member, &full]);
        assert_eq!(set.try_acquire(0, 1), Decision::Block);
        assert_eq!(first.remaining(0), 5, "{:?}", first.shape());
    }
}

/// Found in review: a set whose second booking failed took back its first
/// booking from a word that had just slid forward, leaving an empty word
/// at a later id; a late caller then booked into its own window (the id
/// moved backwards), over the limit of an interval holding a window that
/// had slid out. In both word shapes.
#[test]
fn a_cancelled_booking_keeps_late_callers_in_the_newest_window() {
    for wide in [false, true] {
        let mut g = Gate::<2>::new(nz(10), 2);
        if wide {
            g = g.in_wide_word().unwrap();
        }
        assert_eq!(g.try_acquire(0, 2), Decision::Pass); // window 0 holds 2
                                                         // The same gate twice: the first booking passes at window 2 (the
                                                         // word slides), the second is refused, the first is taken back.
        let set = GateSet::new([&g as &dyn Member, &g]);
        assert_eq!(set.try_acquire(20, 2), Decision::Block);
        let late = g.try_acquire(10, 2); // window 1: booked into window 2
        let next = g.try_acquire(30, 2); // window 3
        assert_eq!(
            (late, next),
            (Decision::Pass, Decision::Block),
            "wide {wide}"
        );
    }
}

/// Found by the `gate_set` fuzz target: when the first member's own booking
/// was its check, a refusal there still changed it (a bucket-shaped gate
/// records the refusal, which moves a bucket on and retires an old
/// window). A set asks every member first: a refused request changes
/// nothing anywhere.
#[test]
fn a_refused_request_changes_nothing_in_any_member() {
    let a = Gate::<2>::new(nz(10), 2).in_buckets();
    let b = Gate::<2>::new(nz(10), 5);
    assert_eq!(a.try_acquire(0, 1), Decision::Pass); // window 0
    let set = GateSet::new([&a as &dyn Member, &b]);
    assert_eq!(set.try_acquire(20, 3), Decision::Block, "3 > a's limit");
    assert_eq!(a.count(0), 1, "window 0 is still held");
    assert_eq!(a.metric().unwrap().block(20), 0, "no refusal recorded in a");
}

/// 4 threads: two send requests through a set of two gates, two send
/// requests to the first gate alone. At the end each gate counts exactly
/// the permits of the decisions that passed through it (so no refused set
/// request left a booking behind) and never more than its limit.
#[test]
fn threads_mixing_set_and_member_requests_leave_exact_counts() {
    let rounds = if cfg!(miri) { 2 } else { 200 };
    let tries = if cfg!(miri) { 15 } else { 300 };
    let mut refused_after_room = 0;
    for round in 0..rounds {
        let a = Gate::<2>::new(nz(500), 300);
        let b = Gate::<3>::new(nz(500), 200);
        let set = GateSet::new([&a as &dyn Member, &b]);
        let (through_a, through_b, after_room) =
            (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
        let start = Barrier::new(4);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (a, b, set, start) = (&a, &b, &set, &start);
                let (ta, tb, rc) = (&through_a, &through_b, &after_room);
                s.spawn(move || {
                    start.wait();
                    for i in 0..tries {
                        let n = 1 + (i + t) % 2;
                        if t < 2 {
                            let room = a.remaining(7) >= n && b.remaining(7) >= n;
                            if set.try_acquire(7, n) == Decision::Pass {
                                ta.fetch_add(n, Ordering::Relaxed);
                                tb.fetch_add(n, Ordering::Relaxed);
                            } else if room {
                                rc.fetch_add(1, Ordering::Relaxed);
                            }
                        } else if a.try_acquire(7, n) == Decision::Pass {
                            ta.fetch_add(n, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        let (ta, tb) = (through_a.into_inner(), through_b.into_inner());
        assert_eq!(a.count(7), ta, "round {round}: a");
        assert_eq!(b.count(7), tb, "round {round}: b");
        assert!(ta <= 300 && tb <= 200, "round {round}: {ta} {tb}");
        refused_after_room += after_room.into_inner();
    }
    // Not a pass condition (it depends on scheduling): printed so that a
    // run shows whether refusals after a check that saw room happened.
    println!("set requests refused after a check saw room: {refused_after_room}");
}

/// The set's `retry_after` by brute force: the first time from `now` at
/// which both models have room (room changes only where a window starts,
/// so only those times are tried), `None` if one never admits its `n`.
fn first_time_both_admit(
    m1: &GateModel<1>,
    m2: &GateModel<3>,
    now: u64,
    n1: u64,
    n2: u64,
) -> Option<u64> {
    m1.retry_after(now, n1)?;
    m2.retry_after(now, n2)?;
    let mut t = now;
    loop {
        if m1.peek(t) + n1 <= m1.limit && m2.peek(t) + n2 <= m2.limit {
            return Some(t - now);
        }
        let next = |w: u64| (t / w + 1).checked_mul(w);
        t = next(m1.window)?.min(next(m2.window)?);
    }
}

/// Steps per case: fewer under Miri, which interprets every one.
fn max_steps(n: usize) -> usize {
    if cfg!(miri) {
        20
    } else {
        n
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 1 } else { 256 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// A set of a `Gate<1>` and a `Gate<3>` against two gate models: a set
    /// request passes exactly when both models would admit it, and then
    /// both book it; otherwise neither changes. Requests to one member
    /// alone are mixed in.
    #[test]
    fn a_set_matches_two_models(
        w1 in 1u64..50,
        w2 in 1u64..150,
        // Windows that share starts make a member's room come back just
        // when another's lent permits fill it.
        aligned in prop::option::of(1u64..4),
        l1 in 0u64..6,
        l2 in 0u64..6,
        steps in prop::collection::vec((-20i64..60, 0u64..4, 0u64..4, 0u8..5), 1..max_steps(120)),
    ) {
        let w2 = aligned.map_or(w2, |k| w1 * k);
        // One window per interval, and a gate that lends up to three
        // windows ahead: both can have room now and none later.
        let g1 = Gate::<1>::new(nz(w1), l1);
        let g2 = Gate::<3>::new(nz(w2), l2).with_occupy_timeout(3 * w2);
        let set = GateSet::new([&g1 as &dyn Member, &g2]);
        let mut m1 = GateModel::<1>::new(w1, l1, g1.occupy_timeout());
        let mut m2 = GateModel::<3>::new(w2, l2, g2.occupy_timeout());
        let mut now = 5_000u64;
        for (dt, n1, n2, who) in steps {
            now = now.saturating_add_signed(dt);
            match who {
                0 => {
                    let want = if m1.peek(now) + n1 <= l1 && m2.peek(now) + n2 <= l2 {
                        // Both have room: both book (n = 0 books nothing).
                        let (d1, d2) = (m1.try_acquire(now, n1), m2.try_acquire(now, n2));
                        prop_assert_eq!((d1, d2), (Decision::Pass, Decision::Pass));
                        Decision::Pass
                    } else {
                        Decision::Block
                    };
                    prop_assert_eq!(set.try_acquire_each(now, [n1, n2]), want, "set at {}", now);
                }
                1 => prop_assert_eq!(g1.try_acquire(now, n1), m1.try_acquire(now, n1)),
                2 => prop_assert_eq!(g2.try_acquire(now, n2), m2.try_acquire(now, n2)),
                // Borrowing: a member with room now and none later.
                3 => prop_assert_eq!(
                    g1.try_acquire_prioritized(now, n1),
                    m1.try_acquire_prioritized(now, n1)
                ),
                _ => prop_assert_eq!(
                    g2.try_acquire_prioritized(now, n2),
                    m2.try_acquire_prioritized(now, n2)
                ),
            }
            prop_assert_eq!(
                set.retry_after_each(now, [n1, n2]),
                first_time_both_admit(&m1, &m2, now, n1, n2),
                "retry_after_each at {}", now
            );
            prop_assert_eq!((g1.count(now), g2.count(now)), (m1.count(now), m2.count(now)));
        }
    }
}

/// A member that borrowed has room now, none in the next window and room
/// again after: the set's `retry_after` is the first time every member has
/// room, not the longest of their answers (which named 1,100, where the
/// set still refuses; the first pass is at 1,200).
#[test]
fn retry_after_is_a_time_every_member_admits_after_a_borrow() {
    let a = Gate::<1>::new(nz(100), 10);
    let b = Gate::<1>::new(nz(100), 1);
    assert_eq!(a.try_acquire(1_000, 9), Decision::Pass);
    assert_eq!(
        a.try_acquire_prioritized(1_050, 10),
        PriorityDecision::Wait(50)
    );
    assert_eq!(b.try_acquire(1_000, 1), Decision::Pass);
    let set = GateSet::new([&a as &dyn Member, &b]);
    assert_eq!(set.retry_after(1_050, 1), Some(150));
    assert_eq!(set.try_acquire(1_100, 1), Decision::Block);
    assert_eq!(set.try_acquire(1_199, 1), Decision::Block);
    assert_eq!(set.try_acquire(1_200, 1), Decision::Pass);
}
