//! `Gate<3>` against the model (`GateModel`), one caller with a clock that
//! jumps anywhere: plain, prioritized and metered requests of any size, any
//! window, limit and occupy timeout, in the shape `Gate::new` picks or in
//! the bucket or 128-bit shape forced.
//!
//! - Word shapes: every decision, `retry_after`, `peek`, `remaining` and
//!   `count` must match the model while every window id in use is within
//!   `2^(T-1) - 1` windows of every other (`T` the shape's `id_bits`: the
//!   documented range of ids kept modulo `2^T`; the model's ids are exact).
//! - The bucket shape: the same against the model's bucket rules, for plain
//!   requests (within `Wide::WINDOW_RANGE`). A prioritized request is
//!   admitted exactly when a plain one would be; when it is refused, it may
//!   borrow by Sentinel's rule, which the model leaves out: after a borrow
//!   the model no longer holds what the gate holds, and only the ledger
//!   below goes on.
//! - A ledger of every admitted permit, in the window it was booked into
//!   (the model's booking window for a pass: the caller's own, or the
//!   newest if later; the window a wait ends in): no interval of 3 windows
//!   ever holds more than the limit, while ids are in range.
//!
//! Beyond the range nothing is compared, but no call may panic.
#![no_main]

use std::collections::HashMap;
use std::num::NonZeroU64;

use arbitrary::Arbitrary;
use leaparray::gate::{PriorityDecision, Shape};
use leaparray::stats::Metric;
use leaparray::Gate;
use leaparray::MAX_COUNT;
use leaparray_fuzz::gate::GateModel;
use leaparray_fuzz::input::{id_span, Count, IdRange, Move, Pick, Time, WindowLen};
use libfuzzer_sys::fuzz_target;

const N: usize = 3;

#[derive(Arbitrary, Debug)]
struct Input {
    pick: Pick,
    window: WindowLen,
    limit: Count,
    timeout: Option<Count>,
    start: Time,
    steps: Vec<(Move, Request, Count)>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Request {
    Plain,
    Prioritized,
    /// `try_acquire_metered`, prioritized or not.
    Metered(bool),
}

impl Request {
    fn prioritized(self) -> bool {
        matches!(self, Request::Prioritized | Request::Metered(true))
    }
}

fuzz_target!(|input: Input| {
    let window = input.window.ticks();
    let len = NonZeroU64::new(window).expect("never 0");
    let timeout = input.timeout.map(Count::value);
    let g: Gate<N> = input.pick.gate(len, input.limit.value(), timeout);
    let limit = input.limit.value().min(MAX_COUNT);
    assert_eq!(g.limit(), limit);
    assert_eq!(g.limit(), limit);
    assert_eq!(g.window(), window);
    let shape = g.shape();
    let buckets = shape == Shape::Buckets;
    assert_eq!(g.metric().is_some(), buckets);
    // The most windows two ids in use may be apart for the model to apply.
    let span = id_span(shape);
    let timeout = g.occupy_timeout();
    let mut model = GateModel::<N>::new(window, limit, timeout);
    model.buckets = buckets;
    // Sentinel's statistics, for the metered requests.
    let stats = Metric::<N>::new(len);
    let mut clock = input.start.ticks();
    let mut range: Option<IdRange> = None;
    // The model holds what the gate holds (false after a borrow in the
    // bucket shape, which the model leaves out).
    let mut synced = true;
    // Permits admitted per booked window.
    let mut ledger: HashMap<u64, u128> = HashMap::new();
    for &(mv, request, n) in &input.steps {
        clock = mv.apply(clock, window);
        let (now, n) = (clock, n.value());
        let own = now / window;
        let in_range = range
            .get_or_insert_with(|| IdRange::new(own))
            .note_within(own, span);
        let compare = in_range && synced;
        let prioritized = request.prioritized();

        // The window a pass books into, by the documented rule.
        let booking = model.booking_window(own);

        // Found by this target, fixed (fuzz/README.md): a borrow or a retry
        // promised a window that would start after `u64::MAX`.
        let retry = g.retry_after(now, n);
        if compare {
            assert_eq!(retry, model.retry_after(now, n), "retry_after({now}, {n})");
        }
        if n > limit {
            assert_eq!(retry, None, "retry_after({now}, {n}) over the limit");
        }
        if let Some(wait) = retry {
            let room = g.remaining(now);
            assert!(n <= limit, "retry_after({now}, {n}): {wait}");
            assert_eq!(
                wait == 0,
                n <= room,
                "retry_after({now}, {n}): {wait}, room {room}"
            );
        }
        let got: PriorityDecision = match request {
            Request::Plain => g.try_acquire(now, n).into(),
            Request::Prioritized => g.try_acquire_prioritized(now, n),
            Request::Metered(false) => g.try_acquire_metered(&stats, now, n).into(),
            Request::Metered(true) => g.try_acquire_prioritized_metered(&stats, now, n),
        };
        if buckets && prioritized {
            // A prioritized request passes exactly when a plain one would;
            // a refused one may borrow (not modelled).
            let want = PriorityDecision::from(model.try_acquire(now, n));
            if compare {
                let plain = match got {
                    PriorityDecision::Wait(_) => PriorityDecision::Block,
                    d => d,
                };
                assert_eq!(plain, want, "prioritized {n} at {now}, as a plain request");
            }
            if matches!(got, PriorityDecision::Wait(_)) {
                synced = false;
            }
        } else {
            let want = if prioritized {
                model.try_acquire_prioritized(now, n)
            } else {
                model.try_acquire(now, n).into()
            };
            if compare {
                assert_eq!(got, want, "{request:?}: {n} at {now}");
            }
        }

        let booked = match got {
            PriorityDecision::Pass => Some(booking),
            PriorityDecision::Wait(wait) => {
                assert!(prioritized && n > 0 && n <= limit, "wait for {n}");
                assert!(wait < timeout, "wait {wait}, timeout {timeout}");
                let end = now.checked_add(wait).expect("a wait ends within time");
                if in_range {
                    assert_eq!(
                        end % window,
                        0,
                        "a wait of {wait} at {now} ends at a window start"
                    );
                    assert!(buckets || wait > 0, "a wait of 0 at {now}");
                }
                Some(end / window)
            }
            PriorityDecision::Block => None,
        };
        if let Some(id) = booked.filter(|_| n > 0 && in_range) {
            *ledger.entry(id).or_default() += u128::from(n);
            let range = range.as_mut().expect("set above");
            if range.note_within(id, span) {
                for end in id..=id.saturating_add(N as u64 - 1) {
                    let total: u128 = (end.saturating_sub(N as u64 - 1)..=end)
                        .filter_map(|k| ledger.get(&k))
                        .sum();
                    assert!(
                        total <= u128::from(limit),
                        "{total} admitted in the interval ending at window {end} (limit {limit})"
                    );
                }
            }
        }

        let (peek, remaining, count) = (g.peek(now), g.remaining(now), g.count(now));
        assert_eq!(remaining, limit.saturating_sub(peek));
        assert_eq!(g.remaining(now), remaining);
        if range.is_some_and(|r| r.ok()) && synced {
            assert_eq!(peek, model.peek(now), "peek at {now}");
            assert_eq!(count, model.count(now), "count at {now}");
        }
    }
});
