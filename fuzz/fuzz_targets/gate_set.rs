//! `GateSet` of a `Gate<3>` and a `Gate<2>` (each with any window, limit,
//! occupy timeout and shape) against two `GateModel`s, one caller with a
//! clock that jumps anywhere: requests to the set (the same `n` for both,
//! or one each) and plain requests to either gate alone.
//!
//! The set's rule, as a model: a request passes iff each member's model
//! would admit its share, and then books it in both; otherwise nothing
//! changes in either (not even the bucket shape's refusal record). While
//! each gate's window ids stay within its shape's range: every decision,
//! `retry_after` / `retry_after_each` (the longest of the members'), and
//! each member's `peek` and `count` must match, and a ledger per member
//! checks that no interval of its windows holds more than its limit.
#![no_main]

use std::collections::HashMap;
use std::num::NonZeroU64;

use arbitrary::Arbitrary;
use leaparray::gate::{Member, Shape};
use leaparray::{Decision, Gate, GateSet};
use leaparray_fuzz::gate::GateModel;
use leaparray_fuzz::input::{id_span, Count, IdRange, Move, Pick, Time, WindowLen};
use libfuzzer_sys::fuzz_target;

const A: usize = 3;
const B: usize = 2;

#[derive(Arbitrary, Debug)]
struct Config {
    pick: Pick,
    window: WindowLen,
    limit: Count,
    timeout: Option<Count>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    a: Config,
    b: Config,
    start: Time,
    steps: Vec<(Move, Step)>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Step {
    /// `try_acquire`: `n` in both.
    Both(Count),
    /// `try_acquire_each`: one share each.
    Each(Count, Count),
    /// `try_acquire` on gate A alone (`false`) or B alone (`true`).
    Alone(bool, Count),
}

/// A member's model, the ids it has seen and its ledger.
struct Side<const N: usize> {
    model: GateModel<N>,
    window: u64,
    span: u64,
    range: Option<IdRange>,
    /// Permits admitted per booked window.
    ledger: HashMap<u64, u128>,
}

impl<const N: usize> Side<N> {
    fn new(c: &Config) -> (Gate<N>, Self) {
        let window = c.window.ticks();
        let len = NonZeroU64::new(window).expect("never 0");
        let gate: Gate<N> = c
            .pick
            .gate(len, c.limit.value(), c.timeout.map(Count::value));
        assert_eq!(Member::limit(&gate), gate.limit());
        let mut model = GateModel::<N>::new(window, gate.limit(), gate.occupy_timeout());
        model.buckets = gate.shape() == Shape::Buckets;
        let side = Side {
            span: id_span(gate.shape()),
            model,
            window,
            range: None,
            ledger: HashMap::new(),
        };
        (gate, side)
    }

    /// Notes the caller's window at `now`; whether every id so far is in
    /// range.
    fn note(&mut self, now: u64) -> bool {
        let own = now / self.window;
        self.range
            .get_or_insert_with(|| IdRange::new(own))
            .note_within(own, self.span)
    }

    /// The model's decision on `n` at `now`, without booking.
    fn would_pass(&self, now: u64, n: u64) -> bool {
        self.model.clone().try_acquire(now, n) == Decision::Pass
    }

    /// The window a pass at `now` books into, by the documented rule.
    fn booking(&self, now: u64) -> u64 {
        self.model.booking_window(now / self.window)
    }

    /// Applies a request to the model, which must decide `pass`.
    fn apply(&mut self, now: u64, n: u64, pass: bool) {
        let want = if pass {
            Decision::Pass
        } else {
            Decision::Block
        };
        assert_eq!(self.model.try_acquire(now, n), want);
    }

    /// Records `n` permits the gate admitted into window `id`; while in
    /// range, no interval containing it may then hold more than the limit.
    fn admitted(&mut self, id: u64, n: u64, in_range: bool) {
        if n == 0 || !in_range {
            return;
        }
        *self.ledger.entry(id).or_default() += u128::from(n);
        let limit = u128::from(self.model.limit);
        for end in id..=id.saturating_add(N as u64 - 1) {
            let total: u128 = (end.saturating_sub(N as u64 - 1)..=end)
                .filter_map(|k| self.ledger.get(&k))
                .sum();
            assert!(
                total <= limit,
                "{total} admitted in the interval of {N} ending at window {end} (limit {limit})"
            );
        }
    }

    /// The gate's `peek` and `count` match the model's.
    fn check(&self, gate: &Gate<N>, now: u64, in_range: bool) {
        let (peek, count) = (gate.peek(now), gate.count(now));
        assert_eq!(
            Member::remaining(gate, now),
            gate.limit().saturating_sub(peek)
        );
        if in_range {
            assert_eq!(peek, self.model.peek(now), "peek({now}) of Gate<{N}>");
            assert_eq!(count, self.model.count(now), "count({now}) of Gate<{N}>");
        }
    }
}

fuzz_target!(|input: Input| {
    let (ga, mut a) = Side::<A>::new(&input.a);
    let (gb, mut b) = Side::<B>::new(&input.b);
    let set = GateSet::new([&ga as &dyn Member, &gb]);
    assert_eq!(set.len(), 2);
    let mut clock = input.start.ticks();
    // Both gates' ids in range so far: the set couples them, so the
    // models apply only while both do.
    let mut in_range = true;
    for &(mv, step) in &input.steps {
        clock = mv.apply(clock, a.window);
        let now = clock;
        in_range &= a.note(now) & b.note(now);
        let (na, nb) = match step {
            Step::Both(n) => (n.value(), n.value()),
            Step::Each(x, y) => (x.value(), y.value()),
            Step::Alone(false, n) => (n.value(), 0),
            Step::Alone(true, n) => (0, n.value()),
        };

        {
            let got = match step {
                Step::Both(_) => set.retry_after(now, na),
                _ => set.retry_after_each(now, [na, nb]),
            };
            let (ra, rb) = (ga.retry_after(now, na), gb.retry_after(now, nb));
            // The first time both admit: never before the longer of the
            // two (each refuses before its own), and a time both admit
            // (room need not last: a gate can have room now and none
            // later, so it can be later than the longer).
            match (ra, rb, got) {
                (Some(x), Some(y), Some(w)) => {
                    assert!(w >= x.max(y), "{w} before the longer of {x} and {y}");
                    let t = now.checked_add(w).expect("a retry within time");
                    assert_eq!(ga.retry_after(t, na), Some(0), "A at {t}");
                    assert_eq!(gb.retry_after(t, nb), Some(0), "B at {t}");
                }
                (Some(_), Some(_), None) => {}
                _ => assert_eq!(got, None, "a member that never admits"),
            }
            if in_range {
                assert_eq!(
                    ra,
                    a.model.retry_after(now, na),
                    "retry_after({now}, {na}) of A"
                );
                assert_eq!(
                    rb,
                    b.model.retry_after(now, nb),
                    "retry_after({now}, {nb}) of B"
                );
            }
        }

        match step {
            Step::Both(_) | Step::Each(..) => {
                let (ia, ib) = (a.booking(now), b.booking(now));
                let got = match step {
                    Step::Both(_) => set.try_acquire(now, na),
                    _ => set.try_acquire_each(now, [na, nb]),
                };
                let pass = a.would_pass(now, na) && b.would_pass(now, nb);
                if in_range {
                    let want = if pass {
                        Decision::Pass
                    } else {
                        Decision::Block
                    };
                    assert_eq!(got, want, "{step:?} at {now}");
                }
                // All or nothing: a refusal leaves both models as they
                // were (the set books nowhere when a member has no room).
                if pass {
                    a.apply(now, na, true);
                    b.apply(now, nb, true);
                }
                if got == Decision::Pass {
                    a.admitted(ia, na, in_range);
                    b.admitted(ib, nb, in_range);
                }
            }
            Step::Alone(second, n) => {
                let n = n.value();
                // A refusal alone is applied too: the bucket shape records it.
                let got = if second {
                    let (id, pass) = (b.booking(now), b.would_pass(now, n));
                    let got = gb.try_acquire(now, n);
                    b.apply(now, n, pass);
                    if got == Decision::Pass {
                        b.admitted(id, n, in_range);
                    }
                    (got, pass)
                } else {
                    let (id, pass) = (a.booking(now), a.would_pass(now, n));
                    let got = ga.try_acquire(now, n);
                    a.apply(now, n, pass);
                    if got == Decision::Pass {
                        a.admitted(id, n, in_range);
                    }
                    (got, pass)
                };
                if in_range {
                    assert_eq!(
                        got.0 == Decision::Pass,
                        got.1,
                        "{step:?} at {now}: {:?}",
                        got.0
                    );
                }
            }
        }
        a.check(&ga, now, in_range);
        b.check(&gb, now, in_range);
    }
});
