//! `Metric<3>` against the model: every event, RT and concurrency update,
//! borrowing and returning future passes, at times anywhere; after each
//! step every query (totals, details, minimum RT, averages, rates, the
//! previous window, waiting passes, `try_occupy_next`) must match.
#![no_main]

use std::num::NonZeroU64;

use arbitrary::Arbitrary;
use leaparray::stats::{Event, Metric};
use leaparray_fuzz::input::{Count, Move, Time, WindowLen};
use leaparray_fuzz::metric::{check, MetricModel};
use libfuzzer_sys::fuzz_target;

const N: usize = 3;

#[derive(Arbitrary, Debug)]
struct Input {
    window: WindowLen,
    start: Time,
    probe: Time,
    steps: Vec<(Move, Step, [Count; 4])>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Step {
    Add(u8, Count),
    Sub(u8, Count),
    AddRt(Count),
    AddRtAndSuccess(Count, Count),
    Concurrency(Count),
    /// Borrow for the time `now + ahead` (valid or not).
    Borrow(u64, Count),
    Return(u64, Count),
    /// The same at `now - lag`.
    Late(u32, u8, Count),
}

fuzz_target!(|input: Input| {
    let window = input.window.ticks();
    let m = Metric::<N>::new(NonZeroU64::new(window).expect("never 0"));
    let mut model = MetricModel::<N>::new(window);
    let mut clock = input.start.ticks();
    let probe = input.probe.ticks();
    for (mv, step, q) in &input.steps {
        clock = mv.apply(clock, window);
        let now = clock;
        let event = |e: u8| Event::ALL[usize::from(e) % Event::ALL.len()];
        let (got, want) = match *step {
            // Every result as a `WaitingError` (an `AddError` is its `Add`).
            Step::Add(e, n) => (
                m.add(now, event(e), n.value()).map_err(Into::into),
                model.add(now, event(e), n.value()).map_err(Into::into),
            ),
            Step::Sub(e, n) => (
                m.sub(now, event(e), n.value()).map_err(Into::into),
                model.sub(now, event(e), n.value()).map_err(Into::into),
            ),
            Step::AddRt(rt) => (
                m.add_rt(now, rt.value()).map_err(Into::into),
                model
                    .add_rt_and_success(now, rt.value(), 1)
                    .map_err(Into::into),
            ),
            Step::AddRtAndSuccess(rt, s) => (
                m.add_rt_and_success(now, rt.value(), s.value())
                    .map_err(Into::into),
                model
                    .add_rt_and_success(now, rt.value(), s.value())
                    .map_err(Into::into),
            ),
            Step::Concurrency(c) => (
                m.record_concurrency(now, c.value()).map_err(Into::into),
                model.record_concurrency(now, c.value()).map_err(Into::into),
            ),
            Step::Borrow(ahead, n) => {
                let future = now.saturating_add(ahead % window.saturating_mul(4 * N as u64).max(1));
                (
                    m.add_waiting(now, future, n.value()),
                    model.add_waiting(now, future, n.value()),
                )
            }
            Step::Return(ahead, n) => {
                let future = now.saturating_add(ahead % window.saturating_mul(4 * N as u64).max(1));
                (
                    m.sub_waiting(now, future, n.value()),
                    model.sub_waiting(now, future, n.value()),
                )
            }
            Step::Late(lag, e, n) => {
                let t = now.saturating_sub(u64::from(lag));
                (
                    m.add(t, event(e), n.value()).map_err(Into::into),
                    model.add(t, event(e), n.value()).map_err(Into::into),
                )
            }
        };
        assert_eq!(got, want, "{step:?} at {now}");
        check(&m, &model, now, probe, q.map(Count::value));
    }
});
