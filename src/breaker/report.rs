//! A report: how a permit's request ended (the module's "Permits" and
//! "Transitions"), counted in its period or closing or reopening a
//! half-open one, with one compare-and-swap per transition.

use super::{CircuitBreaker, Outcome, Permit, State, Strategy, Transition, Word, BAD, TOTAL};
use crate::error::AddError;
use crate::sync::loom_sc_order;
use crate::sync::Ordering::{AcqRel, Acquire, Relaxed};

impl<const N: usize> CircuitBreaker<N> {
    /// Reports how the request of `permit` ended at `now`, with its
    /// response time `rt` in ticks; returns the transition it made, if
    /// any. A report on a permit another breaker granted changes nothing.
    /// A report from an earlier period (see "Permits" in the module docs)
    /// changes no state and no statistics; its `now` only raises the latest
    /// time the breaker has seen, which later deadlines count from (see
    /// "Times").
    ///
    /// ```
    /// use leaparray::breaker::{CircuitBreaker, Config, Outcome, State, Strategy};
    /// let b = CircuitBreaker::<2>::new(
    ///     Config::new(Strategy::ErrorCount { max_errors: 1 }, 100, 50).with_min_requests(1),
    /// );
    /// let (p, q) = (b.try_acquire(0).unwrap(), b.try_acquire(0).unwrap());
    /// assert_eq!(b.report(5, p, 5, Outcome::Error), None); // 1 error: not more than 1
    /// assert_eq!(b.report(6, q, 6, Outcome::Error).map(|t| t.to), Some(State::Open));
    /// ```
    pub fn report(
        &self,
        now: u64,
        permit: Permit<'_, N>,
        rt: u64,
        outcome: Outcome,
    ) -> Option<Transition> {
        if !core::ptr::eq(permit.breaker, self) {
            return None;
        }
        // Before the word is loaded: a trip or reopen that reads `latest`
        // after this report's add (the array's `SeqCst` adds and reads
        // order it) sees this `now` (see "Times" in the module docs).
        // ORDERING: Relaxed; the adds and reads of the windows, and the
        // word's swaps, carry the order.
        if now > self.latest.load(Relaxed) {
            self.latest.fetch_max(now, Relaxed);
        }
        let bad = match self.config.strategy {
            Strategy::SlowRequestRatio { max_rt, .. } => rt > max_rt,
            Strategy::ErrorRatio { .. } | Strategy::ErrorCount { .. } => outcome == Outcome::Error,
        };
        if permit.probe {
            self.report_probe(now, permit.period, bad)
        } else {
            self.report_plain(now, permit.period, bad)
        }
    }

    /// A plain permit's report: count it in its closed period, then trip
    /// if the period's windows meet the condition.
    fn report_plain(&self, now: u64, period: u32, bad: bool) -> Option<Transition> {
        let cur = self.word.load(Acquire);
        let w = Word::unpack(cur);
        if w.state != State::Closed || w.seq != period {
            return None;
        }
        // A report counts only in its period's first window or later, and
        // only in the `N` windows ending at the newest window the
        // statistics hold (window ids, not distances): anything else is
        // left out of every trip check, so it is not added and is counted
        // in `uncounted` instead.
        let own = now / self.window;
        if own < w.time / self.window || self.behind(own, self.stats.newest_from(own)) {
            return self.uncount();
        }
        // TOTAL before BAD, read in the other order (see `BAD`): a
        // concurrent reader may miss this bad outcome (this report's own
        // read sees it) but never counts it without its request. A `Stale`
        // add (the report's window already retired) is not counted, and
        // counted in `uncounted`; `Saturated` keeps the count at its bound.
        // So is a `Stale` BAD add: a newer window sealed this one between
        // the two adds, and the window holds this report as a success.
        if self.stats.add(now, TOTAL, 1) == Err(AddError::Stale) {
            return self.uncount();
        }
        if bad && self.stats.add(now, BAD, 1) == Err(AddError::Stale) {
            return self.uncount();
        }
        // The adds and the reads below are `SeqCst`: of two reports in
        // different windows, the one whose read comes last in their total
        // order sees both adds. Loom models `SeqCst` as acquire/release:
        // this fence stands for the total order there (nothing elsewhere).
        loom_sc_order();
        // Read the windows live at the newest window the array holds, not
        // only at this report's `now`: a report whose `now` is older than
        // another's (a stalled caller) still reads every add of the period
        // that is live (see "No trip is missed"). If the newest window moved
        // past this one's reach between the check above and the add, this
        // report is not in its own check: counted in `uncounted`.
        let newest = self.stats.newest_from(own);
        if self.behind(own, newest) {
            return self.uncount();
        }
        let at = if newest > own {
            newest.saturating_mul(self.window)
        } else {
            now
        };
        let (total, bad) = self.counts_since(at, w.time);
        if !self.trips(total, bad) {
            // The newest window may have moved past this one's reach
            // between the check above and the read, which then left this
            // report's window out: counted in `uncounted` (a report whose
            // window goes just after a whole read is counted there too).
            if self.behind(own, self.stats.newest_from(own)) {
                return self.uncount();
            }
            return None;
        }
        let next = self.reopened(w, now);
        // The word of a closed period changes only by a transition: if the
        // swap fails, another caller ended the period (tripped it) first.
        match self
            .word
            .compare_exchange(cur, next.pack(), AcqRel, Acquire)
        {
            Ok(_) => self.announce(w, next, now),
            Err(_) => None,
        }
    }

    /// Whether window `own` is older than the `N` windows ending at
    /// `newest`.
    const fn behind(&self, own: u64, newest: u64) -> bool {
        newest > own && newest - own >= N as u64
    }

    /// A plain report not counted: counted in `uncounted`.
    fn uncount(&self) -> Option<Transition> {
        // ORDERING: a statistic on its own, ordered with nothing.
        self.uncounted.fetch_add(1, Relaxed);
        None
    }

    /// A probe's report: counts towards closing its half-open period, or
    /// reopens it.
    fn report_probe(&self, now: u64, period: u32, bad: bool) -> Option<Transition> {
        let mut cur = self.word.load(Acquire);
        loop {
            let w = Word::unpack(cur);
            // `good < granted`: a permit of this period that has not
            // reported yet can exist (each reports once; see `Permit`).
            if w.state != State::HalfOpen || w.seq != period || w.good >= w.granted {
                return None;
            }
            let next = if bad {
                self.reopened(w, now)
            } else if w.good + 1 >= self.config.probes {
                // The closed period starts at the later of this `now` and
                // the deadline of the open period before it: never in a
                // window of the reports the trip saw (the deadline is a
                // recovery timeout, at least one window, after the latest
                // of them), whatever this report's clock lags, and never
                // later because a probe was granted with a leading clock.
                // Read after the load of `cur`, which counts the good
                // report of the permit whose grant stored it (see
                // `try_acquire`). ORDERING: Relaxed; the word carries it.
                let deadline = self.deadline.load(Relaxed);
                w.next(State::Closed, if now > deadline { now } else { deadline })
            } else {
                Word {
                    good: w.good + 1,
                    ..w
                }
            };
            match self
                .word
                .compare_exchange(cur, next.pack(), AcqRel, Acquire)
            {
                Ok(_) => return self.announce(w, next, now),
                Err(actual) => cur = actual,
            }
        }
    }

    /// Whether `(total, bad)` meets the trip condition.
    const fn trips(&self, total: u64, bad: u64) -> bool {
        if total < self.config.min_requests {
            return false;
        }
        match self.config.strategy {
            Strategy::SlowRequestRatio { max_ratio, .. } | Strategy::ErrorRatio { max_ratio } => {
                max_ratio.tripped_by(bad, total)
            }
            Strategy::ErrorCount { max_errors } => bad > max_errors,
        }
    }
}
