//! `StatisticNode<2, 4>` against two metric models and a gauge: every
//! update lands in both levels from one `now`; concurrency through guards
//! and by hand (never below 0); borrowing through the node. After every
//! step the node's own queries and both metrics' queries must match.
#![no_main]

use std::num::NonZeroU64;

use arbitrary::Arbitrary;
use leaparray::stats::{Event, StatisticNode};
use leaparray_fuzz::input::{Count, Move, Time, WindowLen};
use leaparray_fuzz::metric::{check, MetricModel};
use libfuzzer_sys::fuzz_target;

const S: usize = 2;
const M: usize = 4;

#[derive(Arbitrary, Debug)]
struct Input {
    second: WindowLen,
    minute: WindowLen,
    ticks_per_second: WindowLen,
    start: Time,
    steps: Vec<(Move, Step, [Count; 4])>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Step {
    Pass(Count),
    Block(Count),
    Exception(Count),
    RtAndSuccess(Count, Count),
    Enter,
    Exit,
    Increase,
    Decrease,
    Waiting(u64, Count),
    OccupiedPass(Count),
}

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).expect("never 0")
}

fuzz_target!(|input: Input| {
    let (sw, mw, tps) = (
        input.second.ticks(),
        input.minute.ticks(),
        input.ticks_per_second.ticks(),
    );
    let node = StatisticNode::<S, M>::new(nz(sw), nz(mw), nz(tps));
    assert_eq!(node.ticks_per_second(), tps);
    let mut second = MetricModel::<S>::new(sw);
    let mut minute = MetricModel::<M>::new(mw);
    let mut gauge = 0u64;
    let mut guards = Vec::new();
    let mut clock = input.start.ticks();
    for (mv, step, q) in &input.steps {
        clock = mv.apply(clock, sw);
        let now = clock;
        let mut both = |e: Event, n: u64| second.add(now, e, n).and(minute.add(now, e, n));
        match *step {
            Step::Pass(n) => {
                assert_eq!(node.add_pass(now, n.value()), both(Event::Pass, n.value()))
            }
            Step::Block(n) => assert_eq!(
                node.add_block(now, n.value()),
                both(Event::Block, n.value())
            ),
            Step::Exception(n) => {
                assert_eq!(
                    node.add_exception(now, n.value()),
                    both(Event::Exception, n.value())
                )
            }
            Step::OccupiedPass(n) => {
                let want = both(Event::OccupiedPass, n.value()).and(minute.add(
                    now,
                    Event::Pass,
                    n.value(),
                ));
                assert_eq!(node.add_occupied_pass(now, n.value()), want);
            }
            Step::RtAndSuccess(rt, s) => {
                let (rt, s) = (rt.value(), s.value());
                let want = second
                    .add_rt_and_success(now, rt, s)
                    .and(minute.add_rt_and_success(now, rt, s));
                assert_eq!(node.add_rt_and_success(now, rt, s), want);
            }
            Step::Enter | Step::Increase => {
                gauge += 1;
                let _ = second.record_concurrency(now, gauge);
                let _ = minute.record_concurrency(now, gauge);
                if let Step::Enter = step {
                    guards.push(node.enter(now));
                } else {
                    assert_eq!(node.increase_concurrency(now), gauge);
                }
            }
            Step::Exit => {
                if guards.pop().is_some() {
                    gauge = gauge.saturating_sub(1);
                }
            }
            Step::Decrease => {
                gauge = gauge.saturating_sub(1);
                assert_eq!(node.decrease_concurrency(), gauge);
            }
            Step::Waiting(ahead, n) => {
                let future = now.saturating_add(ahead % sw.saturating_mul(4 * S as u64));
                let want = second.add_waiting(now, future, n.value());
                assert_eq!(node.add_waiting_request(now, future, n.value()), want);
            }
        }
        assert_eq!(node.concurrency(), gauge);
        let q = q.map(Count::value);
        check(node.second(), &second, now, now, q);
        check(node.minute(), &minute, now, now, q);
        let qps =
            |e: Event| second.total(now, e) as f64 * tps as f64 / node.second().interval() as f64;
        assert_eq!(node.pass_qps(now), qps(Event::Pass));
        assert_eq!(node.block_qps(now), qps(Event::Block));
        assert_eq!(node.success_qps(now), qps(Event::Success));
        assert_eq!(node.exception_qps(now), qps(Event::Exception));
        assert_eq!(node.occupied_pass_qps(now), qps(Event::OccupiedPass));
        assert_eq!(node.total_qps(now), qps(Event::Pass) + qps(Event::Block));
        assert_eq!(node.min_rt(now), node.second().min_rt(now));
        assert_eq!(node.avg_rt(now), node.second().avg_rt(now));
        let (pass, block) = (
            minute.total(now, Event::Pass),
            minute.total(now, Event::Block),
        );
        assert_eq!(node.total_pass(now), pass);
        assert_eq!(node.block_request(now), block);
        assert_eq!(node.total_request(now), pass + block);
        assert_eq!(node.total_success(now), minute.total(now, Event::Success));
        assert_eq!(
            node.total_exception(now),
            minute.total(now, Event::Exception)
        );
        let prev = (now / mw).checked_sub(1);
        let per_window = |c: u64| c as f64 * tps as f64 / mw as f64;
        assert_eq!(
            node.previous_pass_qps(now),
            per_window(prev.map_or(0, |id| minute.pass_in(id)))
        );
        let prev_block = prev.map_or(0, |id| minute.counts.count(id, Event::Block.index()));
        assert_eq!(node.previous_block_qps(now), per_window(prev_block));
        assert_eq!(node.waiting(now), second.waiting(now));
        let [n, limit, timeout, _] = q;
        assert_eq!(
            node.try_occupy_next(now, n, limit, timeout),
            second.try_occupy_next(now, n, limit, timeout)
        );
    }
    let alive = guards.len() as u64;
    drop(guards);
    assert_eq!(
        node.concurrency(),
        gauge.saturating_sub(alive),
        "each guard leaves once"
    );
});
