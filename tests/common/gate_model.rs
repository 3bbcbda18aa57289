//! The model of a `Gate<N>`: the metric model plus the admission rule as
//! the gate's documentation states it. Shared by `tests/gate.rs` and
//! `fuzz/` (the `gate` target); needs the metric model as the crate's
//! module `metric`.

use leaparray::gate::Decision;
use leaparray::Event;

use crate::metric::MetricModel;

/// A gate of `N` windows, the slow way.
#[derive(Debug, Clone)]
pub struct GateModel<const N: usize> {
    /// Its statistics.
    pub metric: MetricModel<N>,
    /// Permits per interval of `N` windows (a `Gate` takes limits above
    /// `MAX_COUNT` as `MAX_COUNT`).
    pub limit: u64,
    /// Longest wait a prioritized request may be given.
    pub timeout: u64,
}

impl<const N: usize> GateModel<N> {
    /// The largest pass count of any interval of `N` windows containing
    /// window `id` (the intervals ending at `id ..= id + N - 1`), written as
    /// the double loop; `None` if any window of those intervals is retired.
    pub fn peak(&self, id: u64) -> Option<u64> {
        let n = N as u64;
        let last = id.saturating_add(n - 1);
        if (id.saturating_sub(n - 1)..=last).any(|k| self.metric.retired(k)) {
            return None;
        }
        (id..=last)
            .map(|j| {
                (j.saturating_sub(n - 1)..=j)
                    .map(|k| self.metric.pass_in(k))
                    .sum()
            })
            .max()
    }

    /// Admission: `n == 0` always passes (books nothing); otherwise `n`
    /// must fit under the limit in every interval containing `now`'s
    /// window, none of whose windows may be retired, and the booking must
    /// count in full.
    fn admit(&mut self, now: u64, n: u64) -> bool {
        if n == 0 {
            return true;
        }
        let id = now / self.metric.window();
        let fits = self
            .peak(id)
            .is_some_and(|p| u128::from(p) + u128::from(n) <= u128::from(self.limit));
        fits && self.metric.add(now, Event::Pass, n).is_ok()
    }

    fn block(&mut self, now: u64, n: u64) -> Decision {
        let _ = self.metric.add(now, Event::Block, n);
        Decision::Block
    }

    /// `Gate::try_acquire`.
    pub fn try_acquire(&mut self, now: u64, n: u64) -> Decision {
        if self.admit(now, n) {
            Decision::Pass
        } else {
            self.block(now, n)
        }
    }

    /// `Gate::try_acquire_prioritized`: a pass if it fits now; else a wait
    /// for the window `try_occupy_next` names, if that is sooner than the
    /// timeout and every interval containing that window stays within the
    /// limit with the borrowed permits booked there; else a block.
    pub fn try_acquire_prioritized(&mut self, now: u64, n: u64) -> Decision {
        if self.admit(now, n) {
            return Decision::Pass;
        }
        if n <= self.limit {
            let wait = self
                .metric
                .try_occupy_next(now, n, self.limit, self.timeout);
            if wait < self.timeout {
                let future = now + wait;
                if self.metric.add_waiting(now, future, n).is_ok() {
                    let id = future / self.metric.window();
                    if self.peak(id).is_some_and(|p| p <= self.limit) {
                        let _ = self.metric.add(now, Event::OccupiedPass, n);
                        return Decision::Wait(wait);
                    }
                    let _ = self.metric.sub_waiting(now, future, n);
                }
            }
        }
        self.block(now, n)
    }
}
