//! `Gate<3>` against the model, one caller with a clock that jumps
//! anywhere: plain and prioritized requests of any size, any limit and
//! occupy timeout. Every decision and every metric query must match, and,
//! while every time in use is within the documented range of every other,
//! no interval of 3 windows may ever hold more admitted permits (passes and
//! borrowed ones) than the limit: a ledger of the decisions checks it.
#![no_main]

use std::collections::HashMap;
use std::num::NonZeroU64;

use arbitrary::Arbitrary;
use leaparray::gate::{Decision, Gate};
use leaparray::{Limiter, Wide, MAX_COUNT};
use leaparray_fuzz::gate::GateModel;
use leaparray_fuzz::input::{Count, IdRange, Move, Time, WindowLen};
use leaparray_fuzz::metric::{check, MetricModel};
use libfuzzer_sys::fuzz_target;

const N: usize = 3;

#[derive(Arbitrary, Debug)]
struct Input {
    window: WindowLen,
    limit: Count,
    timeout: Option<Count>,
    start: Time,
    steps: Vec<(Move, bool, Count)>,
}

fuzz_target!(|input: Input| {
    let window = input.window.ticks();
    let limit = input.limit.value();
    let mut g = Gate::<N>::new(NonZeroU64::new(window).expect("never 0"), limit);
    if let Some(t) = input.timeout {
        g = g.with_occupy_timeout(t.value());
    }
    let limit = limit.min(MAX_COUNT);
    let mut model = GateModel::<N> {
        metric: MetricModel::new(window),
        limit,
        timeout: g.occupy_timeout(),
    };
    assert_eq!(g.limit(), limit);
    assert_eq!(Limiter::limit(&g), limit);
    let mut clock = input.start.ticks();
    let mut range = IdRange::new(clock / window);
    let mut ledger: HashMap<u64, u128> = HashMap::new();
    for (mv, prioritized, n) in &input.steps {
        clock = mv.apply(clock, window);
        let (now, n) = (clock, n.value());
        range.note::<Wide>(now / window);
        let (got, want) = if *prioritized {
            (
                g.try_acquire_prioritized(now, n),
                model.try_acquire_prioritized(now, n),
            )
        } else {
            (g.try_acquire(now, n), model.try_acquire(now, n))
        };
        assert_eq!(got, want, "prioritized {prioritized}, {n} at {now}");
        let booked = match got {
            Decision::Pass => Some(now / window),
            Decision::Wait(w) => {
                assert!(w < model.timeout && w > 0, "wait {w}");
                assert_eq!((now + w) % window, 0, "a wait ends at a window start");
                Some((now + w) / window)
            }
            Decision::Block => None,
        };
        if let Some(id) = booked.filter(|_| n > 0) {
            *ledger.entry(id).or_default() += u128::from(n);
            // Every interval containing the booked window stays within the
            // limit (meaningful while ids do not alias).
            if range.note::<Wide>(id) {
                for j in id..=id.saturating_add(N as u64 - 1) {
                    let total: u128 = (j.saturating_sub(N as u64 - 1)..=j)
                        .filter_map(|k| ledger.get(&k))
                        .sum();
                    assert!(
                        total <= u128::from(limit),
                        "{total} admitted in the interval ending at window {j}"
                    );
                }
            }
        }
        let passed = model.metric.total(now, leaparray::Event::Pass);
        assert_eq!(g.count(now), passed);
        let remaining = model
            .peak(now / window)
            .map_or(0, |load| limit.saturating_sub(load));
        assert_eq!(g.remaining(now), remaining);
        check(
            g.metric(),
            &model.metric,
            now,
            now,
            [n, limit, model.timeout, 1_000],
        );
    }
});
